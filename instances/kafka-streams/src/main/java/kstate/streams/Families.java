package kstate.streams;

import com.fasterxml.jackson.databind.JsonNode;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;
import kstate.storetypes.StoreTypes;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.Stores;

/**
 * The families' shared pieces: each family's class found by its name ({@link #family}), the types this Kafka version
 * builds, the option checks (INST-26), the processors' frame and the aggregate of INST-25. What a family does is in
 * its own class ({@link StoreFamily}); nothing here names one. The header-aware types (KIP-1271) are reached by
 * reflection: the same source builds against 4.2.
 */
final class Families {
    /** A store or processor option this family does not take, lacks or cannot use (INST-26): exit 64. */
    static final class OptionError extends Exception {
        OptionError(String option, String reason) {
            super("option '" + option + "': " + reason);
        }

        /** An error about the options as a whole, not one of them. */
        OptionError(String message) {
            super(message);
        }
    }

    static final String STATE = "org.apache.kafka.streams.state.";

    private Families() {
    }

    /** The class of `storeType`'s family. */
    static StoreFamily of(String storeType) {
        return family(StoreTypes.family(storeType));
    }

    /**
     * The class of `family` (a `StoreTypes.FAMILY_*`), by the convention of {@link StoreFamily}: each word of its
     * name capitalized, then `Family`, in this package. A family of the table without its class is refused by name.
     */
    static StoreFamily family(String family) {
        StringBuilder name = new StringBuilder(Families.class.getPackageName()).append('.');
        for (String word : family.split("_")) {
            name.append(Character.toUpperCase(word.charAt(0))).append(word.substring(1));
        }
        name.append("Family");
        Class<?> cls;
        try {
            cls = Class.forName(name.toString());
        } catch (ClassNotFoundException e) {
            StoreTypes.UnknownStoreTypeException unknown = StoreTypes.unknown(family, "Families.family (no class "
                    + name + ")");
            unknown.initCause(e);
            throw unknown;
        }
        try {
            return (StoreFamily) cls.getDeclaredConstructor().newInstance();
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(name + " is not a store family of this instance", e);
        }
    }

    /** The types this Kafka version builds (INST-2's `store_types`): every family's, in the table's order. */
    static List<String> storeTypes() {
        List<String> types = new ArrayList<>();
        for (String family : StoreTypes.FAMILIES) {
            StoreFamily builder = family(family);
            for (String storeType : StoreTypes.types(family)) {
                if (builder.builds(storeType)) {
                    types.add(storeType);
                }
            }
        }
        return types;
    }

    /** The method of `Stores` named `name`, or null where this Kafka version lacks it (KIP-1271's builders). */
    static Method storesMethod(String name) {
        for (Method m : Stores.class.getMethods()) {
            if (m.getName().equals(name)) {
                return m;
            }
        }
        return null;
    }

    /**
     * The column families of `storeType` in the table (LAY-5 to LAY-8): its data family, and the first family it
     * upgrades from in place, Kafka's previous format of the store ("" for none).
     */
    static StoreFamily.ColumnFamilies tableColumnFamilies(String storeType) {
        List<String> upgrades = StoreTypes.upgradeColumnFamilies(storeType);
        return new StoreFamily.ColumnFamilies(upgrades.isEmpty() ? "" : upgrades.get(0),
                StoreTypes.dataColumnFamily(storeType));
    }

    // --- options (INST-26) --------------------------------------------------------------------------------------

    /** Every option in `given` is one of `accepted`, else an {@link OptionError} naming the first that is not. */
    static void known(Map<String, JsonNode> given, Set<String> accepted) throws OptionError {
        for (String name : given.keySet()) {
            if (!accepted.contains(name)) {
                throw new OptionError(name, "not an option of this store type or processor (accepted: "
                        + (accepted.isEmpty() ? "none" : String.join(", ", new TreeSet<>(accepted))) + ")");
            }
        }
    }

    static Long optional(Map<String, JsonNode> given, String name) throws OptionError {
        JsonNode v = given.get(name);
        if (v == null) {
            return null;
        }
        if (!v.isIntegralNumber() || !v.canConvertToLong() || v.longValue() < 0) {
            throw new OptionError(name, "expected a non-negative int, got " + v);
        }
        return v.longValue();
    }

    static long required(Map<String, JsonNode> given, String name) throws OptionError {
        Long v = optional(given, name);
        if (v == null) {
            throw new OptionError(name, "required");
        }
        return v;
    }

    // --- processors ----------------------------------------------------------------------------------------------

    /** INST-25: `<count>:<last value>`. */
    static byte[] aggregate(long count, byte[] value) {
        byte[] prefix = (count + ":").getBytes(StandardCharsets.US_ASCII);
        byte[] out = new byte[prefix.length + value.length];
        System.arraycopy(prefix, 0, out, 0, prefix.length);
        System.arraycopy(value, 0, out, prefix.length, value.length);
        return out;
    }

    static long count(byte[] aggregate) {
        for (int i = 0; i < aggregate.length; i++) {
            if (aggregate[i] == ':') {
                return Long.parseLong(new String(aggregate, 0, i, StandardCharsets.US_ASCII));
            }
        }
        throw new IllegalStateException("not an aggregate of INST-25");
    }

    /** `target.method()`, for the KIP-1271 value classes this source cannot name. */
    static Object call(Object target, String method) {
        try {
            return target.getClass().getMethod(method).invoke(target);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    /** `org.apache.kafka.streams.state.<cls>.make(args)`, for the KIP-1271 value classes this source cannot name. */
    static Object make(String cls, Class<?>[] types, Object... args) {
        try {
            return Class.forName(STATE + cls).getMethod("make", types).invoke(null, args);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * The frame of every family's processor: the store named `storeName`, looked up at init, and the instance's
     * bookkeeping (`afterRecord`) after each input record, whatever the record did. A record without a key is
     * dropped, as `KTableSource` and the windowed aggregates drop it.
     */
    abstract static class StoreProcessor<S> implements Processor<byte[], byte[], Void, Void> {
        private final String storeName;
        private final Consumer<ProcessorContext<Void, Void>> afterRecord;
        private ProcessorContext<Void, Void> context;
        S store;

        StoreProcessor(String storeName, Consumer<ProcessorContext<Void, Void>> afterRecord) {
            this.storeName = storeName;
            this.afterRecord = afterRecord;
        }

        @Override
        public void init(ProcessorContext<Void, Void> context) {
            this.context = context;
            this.store = context.getStateStore(storeName);
        }

        @Override
        public void process(Record<byte[], byte[]> record) {
            if (record.key() != null) {
                accept(record);
            }
            afterRecord.accept(context);
        }

        /** One input record with a key. */
        abstract void accept(Record<byte[], byte[]> record);
    }

    /** The windowed aggregates' shared frame: the store, the stream time they observe, and the hook after each record. */
    abstract static class Aggregate<S> extends StoreProcessor<S> {
        long observedStreamTime = -1;

        Aggregate(String storeName, Consumer<ProcessorContext<Void, Void>> afterRecord) {
            super(storeName, afterRecord);
        }

        @Override
        void accept(Record<byte[], byte[]> record) {
            if (record.value() != null) { // INST-25: a null value is skipped
                observedStreamTime = Math.max(observedStreamTime, record.timestamp());
                apply(Bytes.wrap(record.key()), record.value(), record.timestamp(), record.headers());
            }
        }

        /** One record with a key and a value, `observedStreamTime` already advanced to its timestamp. */
        abstract void apply(Bytes key, byte[] value, long ts, Headers headers);
    }
}
