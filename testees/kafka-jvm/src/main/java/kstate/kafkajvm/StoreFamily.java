package kstate.kafkajvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import kstate.storetypes.StoreTypes;
import org.apache.kafka.streams.processor.internals.InternalTopicConfig;
import org.apache.kafka.streams.state.StoreBuilder;

import java.lang.reflect.Constructor;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;


/** One store family of the spec (kstate.codecs.store_types) as the testee builds it over Kafka's classes: its store
 *  types, their options and builders, the layer its operations call, its operations, and what the shared operations
 *  (changelog.*, layout.*) ask of it. Each family of the generated table {@code StoreTypes.FAMILY_*} has one class,
 *  found by its name: the family in CamelCase then {@code Family} ({@code key_value} is {@link KeyValueFamily}), so
 *  that a new family adds its class and no shared file names it (issue 33). */
abstract class StoreFamily {
    /** Every family of the table by its name, in the table's order. */
    private static final Map<String, StoreFamily> FAMILIES = load();

    private final String name;
    private final List<String> types;

    /** The family `name` of the table ({@code StoreTypes.FAMILY_*}), whose stores store.capabilities lists as
     *  `types` where this release builds them (OPS-1). */
    StoreFamily(final String name, final List<String> types) {
        this.name = name;
        this.types = types;
    }

    /** The family's name in the table ({@code StoreTypes.FAMILY_*}). */
    final String name() {
        return name;
    }

    // --- the registry ---------------------------------------------------------------------------------------------

    /** The families of the table ({@code StoreTypes.FAMILIES}, the generated copy of kstate.codecs.store_types), in
     *  its order, each found by its class name; a family without its class stops the testee at its start, naming
     *  the class it lacks. */
    private static Map<String, StoreFamily> load() {
        final Map<String, StoreFamily> found = new LinkedHashMap<>();
        for (final String family : StoreTypes.FAMILIES) {
            found.put(family, instantiate(family));
        }
        return Collections.unmodifiableMap(found);
    }

    /** The class of `family` by the naming convention: {@code key_value} is {@code kstate.kafkajvm.KeyValueFamily}. */
    static String className(final String family) {
        final StringBuilder name = new StringBuilder(StoreFamily.class.getPackageName()).append('.');
        for (final String word : family.split("_")) {
            name.append(Character.toUpperCase(word.charAt(0))).append(word.substring(1));
        }
        return name.append("Family").toString();
    }

    private static StoreFamily instantiate(final String family) {
        final String cls = className(family);
        try {
            final Constructor<? extends StoreFamily> c = Class.forName(cls).asSubclass(StoreFamily.class).getDeclaredConstructor();
            c.setAccessible(true);
            final StoreFamily instance = c.newInstance();
            if (!instance.name().equals(family)) {
                throw new IllegalStateException(cls + " is the class of the family " + instance.name() + ", not " + family);
            }
            return instance;
        } catch (ClassNotFoundException e) {
            throw StoreTypes.unknown(family, "StoreFamily: the testee has no class " + cls);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("the family class " + cls + " cannot be made: " + e, e);
        }
    }

    /** Every family, in the table's order. */
    static Collection<StoreFamily> all() {
        return FAMILIES.values();
    }

    /** The family of that name in the table; {@link StoreTypes.UnknownStoreTypeException} for another name. */
    static StoreFamily named(final String family) {
        final StoreFamily found = FAMILIES.get(family);
        if (found == null) {
            throw StoreTypes.unknown(family, "StoreFamily.named");
        }
        return found;
    }

    /** The family of a store type given in an input (the legacy alias accepted); a type the table lacks is bad
     *  input, refused by name (OPS-2). */
    static StoreFamily of(final String type) {
        return named(Stores.family(type));
    }

    // --- the family's stores ----------------------------------------------------------------------------------

    /** The family's store types that store.capabilities lists where this release builds them (OPS-1). */
    final List<String> types() {
        return types;
    }

    /** Whether this release builds `type` (one of the family's, possibly beyond {@link #types()}: a layout-only type);
     *  here, whether it is one of {@link #types()}. */
    boolean offers(final String type) {
        return types.contains(type);
    }

    /** Whether Kafka's Stores in this release has the header-aware `supplier` (taking `supplierParams`) and
     *  `builder` (taking a `supplierType` and two serdes): they came with KIP-1271. */
    static boolean releaseHasHeaderStores(final String supplier, final Class<?>[] supplierParams, final String builder,
                                          final Class<?> supplierType) {
        try {
            org.apache.kafka.streams.state.Stores.class.getMethod(supplier, supplierParams);
            org.apache.kafka.streams.state.Stores.class.getMethod(builder, supplierType,
                org.apache.kafka.common.serialization.Serde.class, org.apache.kafka.common.serialization.Serde.class);
            return true;
        } catch (NoSuchMethodException e) {
            return false;
        }
    }

    /** Refuses, as unsupported, a type of the family this release does not build. */
    void requireOffered(final String type) {
        if (!offers(type)) {
            throw new K.Unavailable("the kafka-jvm testee builds no " + type + " store on this release");
        }
    }

    /** The backends the family's stores have, where Kafka lacks one (store.capabilities' store_backends); null when
     *  every backend. */
    List<String> onlyBackends() {
        return null;
    }

    /** The options of an open of `type` on `backend` (`options` an object, or null when none), checked as Kafka's
     *  suppliers would take them; what the builder reads (an empty object when none). */
    abstract JsonNode openOptions(JsonNode options, String type, String backend);

    /** The builder of Kafka's `type` store called `name` (on RocksDB when `rocks`, else in memory), before its
     *  logging and caching layers are chosen. */
    @SuppressWarnings("rawtypes")
    abstract StoreBuilder builder(String type, String name, boolean rocks, JsonNode opts) throws Exception;

    /** The layers of `h`'s store that the family's operations read and write ({@link Stores.Handle#layer}). */
    abstract void bind(Stores.Handle h) throws ReflectiveOperationException;

    /** Whether the family's stores keep segment databases under {@code <task>/<store>/} (LAY-3) or one database under
     *  {@code <task>/rocksdb/<store>}, as the table says of its types (they all agree). */
    boolean segmented() {
        return StoreTypes.segmented(types.get(0));
    }

    /** The family's own operations: its stores' and its codecs'. */
    abstract void registerOps();

    // --- what the shared operations ask of it ---------------------------------------------------------------

    /** The options of an open with a retention of `retentionMs` (none for a family without one): the retention its
     *  stores require, and what else they do (a window of 1 ms). */
    abstract ObjectNode retentionOptions(long retentionMs);

    /** The writes its change-logging layer logs, as changelog.record_for_write defines them (CL-1..CL-8). */
    abstract List<String> loggedWrites();

    /** The backend changelog.record_for_write opens its store on: in memory, where Kafka has one. */
    String loggingBackend() {
        return "memory";
    }

    /** The options of changelog.record_for_write's store: a retention no test timestamp expires. */
    ObjectNode loggingOptions(final boolean retainDuplicates) {
        return retentionOptions(Long.MAX_VALUE / 4);
    }

    /** Makes `operation`, a logged write, on `h` through the family's operation, `write` holding the handle, key and
     *  value of the input `in`; what the write adds to the answer goes in `out`. */
    abstract void logWrite(Stores.Handle h, String operation, ObjectNode write, JsonNode in, ObjectNode out) throws Exception;

    /** changelog.topic_config (CL-15..CL-17): the topic config InternalTopologyBuilder makes of the store's builder,
     *  that builder given the input's log_config ({@link Changelog#withLogConfig}). */
    abstract InternalTopicConfig topicConfig(String type, String name, String topic, JsonNode in);

    /** Whether a restored record keeps its own timestamp (changelog.restore_value answers it). */
    boolean restoreKeepsTimestamp() {
        return false;
    }

    /** A segmented family's write of `put` (handle, key, value) at time 0, which lands in segment 0 (layout.*). */
    void writeAtZero(final ObjectNode put) throws Exception {
        throw StoreTypes.unknown(name(), "LayoutOps.writeAtZero: a segmented family");
    }

    /** The refusal of an operation of the `what` family sent to `h`, a store of another family (OPS-2). */
    static Json.InputError notOf(final Stores.Handle h, final String what) {
        return new Json.InputError("handle", "store " + h.name + " is a " + h.type + " store, not a " + what + " store");
    }
}
