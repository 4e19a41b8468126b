package kstate.kafkajvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import kstate.storetypes.StoreTypes;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.processor.internals.InternalTopicConfig;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.internals.WrappedStateStore;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import static kstate.kafkajvm.Json.hexNode;
import static kstate.kafkajvm.Json.hexOrNull;
import static kstate.kafkajvm.Json.obj;
import static kstate.kafkajvm.K.t;
import static kstate.kafkajvm.Main.register;
import static kstate.kafkajvm.Stores.drain;
import static kstate.kafkajvm.Stores.key;
import static kstate.kafkajvm.Stores.optKey;

/** Key-value stores (spec/kv-store.md, KV-*): {@code kv}, {@code timestamped_kv} and
 *  {@code timestamped_kv_with_headers}, built by Kafka's Stores.* suppliers per backend and its builders, and the
 *  {@code store.*} key-value operations and iterators, each calling the bytes store under the metered layer. */
final class KeyValueFamily extends StoreFamily {
    private KeyValueFamily() {
        super(StoreTypes.FAMILY_KEY_VALUE, TYPES);
    }

    /** The key-value store types a release offers: its Stores.* supplier per backend and its builder. */
    private static final List<String> TYPES = List.of(StoreTypes.KEY_VALUE, StoreTypes.TIMESTAMPED_KV,
        StoreTypes.TIMESTAMPED_KV_WITH_HEADERS);

    /** The header-aware supplier and builder came with KIP-1271. */
    @Override
    boolean offers(final String type) {
        if (type.equals(StoreTypes.TIMESTAMPED_KV_WITH_HEADERS)) {
            return releaseHasHeaderStores("persistentTimestampedKeyValueStoreWithHeaders", t(String.class),
                "timestampedKeyValueStoreWithHeadersBuilder", KeyValueBytesStoreSupplier.class);
        }
        return super.offers(type);
    }

    @Override
    JsonNode openOptions(final JsonNode options, final String type, final String backend) {
        if (options != null && options.size() > 0) {
            throw new Json.InputError("options." + options.fieldNames().next(), "a key-value store takes no options");
        }
        return options == null ? obj() : options;
    }

    @Override
    @SuppressWarnings("rawtypes")
    StoreBuilder builder(final String type, final String name, final boolean rocks, final JsonNode opts) {
        final KeyValueBytesStoreSupplier supplier;
        switch (type) {
            case StoreTypes.KEY_VALUE:
                supplier = rocks ? org.apache.kafka.streams.state.Stores.persistentKeyValueStore(name)
                    : org.apache.kafka.streams.state.Stores.inMemoryKeyValueStore(name);
                return org.apache.kafka.streams.state.Stores.keyValueStoreBuilder(supplier, Serdes.Bytes(), Serdes.ByteArray());
            case StoreTypes.TIMESTAMPED_KV:
                supplier = rocks ? org.apache.kafka.streams.state.Stores.persistentTimestampedKeyValueStore(name)
                    : org.apache.kafka.streams.state.Stores.inMemoryKeyValueStore(name);
                return org.apache.kafka.streams.state.Stores.timestampedKeyValueStoreBuilder(supplier, Serdes.Bytes(), Serdes.ByteArray());
            case StoreTypes.TIMESTAMPED_KV_WITH_HEADERS:
                supplier = rocks ? (KeyValueBytesStoreSupplier) K.invoke(K.method(org.apache.kafka.streams.state.Stores.class,
                    "persistentTimestampedKeyValueStoreWithHeaders", String.class), null, name)
                    : org.apache.kafka.streams.state.Stores.inMemoryKeyValueStore(name);
                return (StoreBuilder) K.invoke(K.method(org.apache.kafka.streams.state.Stores.class,
                    "timestampedKeyValueStoreWithHeadersBuilder", KeyValueBytesStoreSupplier.class,
                    org.apache.kafka.common.serialization.Serde.class, org.apache.kafka.common.serialization.Serde.class),
                    null, supplier, Serdes.Bytes(), Serdes.ByteArray());
            default:
                throw StoreTypes.unknown(type, "Stores.open: the key-value builders");
        }
    }

    /** The operations take and answer the stored bytes: the layer under the metered (typed) store. */
    @Override
    void bind(final Stores.Handle h) {
        h.layer = ((WrappedStateStore<?, ?, ?>) h.root).wrapped();
    }

    @Override
    ObjectNode retentionOptions(final long retentionMs) {
        return obj();
    }

    @Override
    List<String> loggedWrites() {
        return List.of("put", "put_if_absent", "delete");
    }

    @Override
    @SuppressWarnings("unchecked")
    void logWrite(final Stores.Handle h, final String operation, final ObjectNode write, final JsonNode in,
                  final ObjectNode out) throws Exception {
        if (operation.equals("put_if_absent")) {
            final byte[] previous = in.has("previous") ? Json.hexOrNull(in, "previous") : null;
            if (previous != null) {
                // The key already holds `previous`: written beside the layer (no log), below it.
                final Object below = ((WrappedStateStore<?, ?, ?>) store(h)).wrapped();
                ((KeyValueStore<Bytes, byte[]>) below).put(Bytes.wrap(Json.hex(in, "key")), previous);
            }
        }
        Main.OPS.get("store." + operation).apply(write);
    }

    @Override
    @SuppressWarnings({"unchecked", "rawtypes"})
    InternalTopicConfig topicConfig(final String type, final String name, final String topic, final JsonNode in) {
        StoreBuilder builder = org.apache.kafka.streams.state.Stores.keyValueStoreBuilder(
            org.apache.kafka.streams.state.Stores.inMemoryKeyValueStore(name), Serdes.Bytes(), Serdes.ByteArray());
        builder = Changelog.withLogConfig(builder, in);
        return (InternalTopicConfig) K.construct("org.apache.kafka.streams.processor.internals.UnwindowedUnversionedChangelogTopicConfig",
            K.t(String.class, java.util.Map.class), topic, builder.logConfig());
    }

    /** The key-value bytes store of a handle; an operation of one family sent to a store of another is refused (OPS-2). */
    @SuppressWarnings("unchecked")
    static KeyValueStore<Bytes, byte[]> store(final Stores.Handle h) {
        final KeyValueStore<Bytes, byte[]> kv = orNull(h);
        if (kv == null) {
            throw notOf(h, "key-value");
        }
        return kv;
    }

    /** The key-value bytes store of a handle, null for a store of another family. */
    @SuppressWarnings("unchecked")
    static KeyValueStore<Bytes, byte[]> orNull(final Stores.Handle h) {
        return h.family instanceof KeyValueFamily ? (KeyValueStore<Bytes, byte[]>) h.layer : null;
    }

    private static KeyValueStore<Bytes, byte[]> kv(final Stores.Handle h) {
        return store(h);
    }

    @Override
    void registerOps() {
        register("store.put", in -> {
            final Stores.Handle h = Stores.handle(in);
            kv(h).put(key(in, "key"), hexOrNull(in, "value"));
            return obj();
        });
        register("store.put_if_absent", in -> {
            final Stores.Handle h = Stores.handle(in);
            return obj().set("previous", hexNode(kv(h).putIfAbsent(key(in, "key"), hexOrNull(in, "value"))));
        });
        register("store.put_all", KeyValueFamily::putAll);
        register("store.get", in -> obj().set("value", hexNode(kv(Stores.handle(in)).get(key(in, "key")))));
        register("store.delete", in -> obj().set("previous", hexNode(kv(Stores.handle(in)).delete(key(in, "key")))));
        register("store.get_typed", KeyValueFamily::getTyped);
        register("store.range", in -> drain(kv(Stores.handle(in)).range(key(in, "from"), key(in, "to"))));
        register("store.reverse_range", in -> drain(kv(Stores.handle(in)).reverseRange(key(in, "from"), key(in, "to"))));
        register("store.all", in -> drain(kv(Stores.handle(in)).all()));
        register("store.reverse_all", in -> drain(kv(Stores.handle(in)).reverseAll()));
        register("store.prefix_scan", in -> drain(kv(Stores.handle(in)).prefixScan(Json.hex(in, "prefix"), new ByteArraySerializer())));
        register("store.approximate_num_entries", in -> obj().put("count", kv(Stores.handle(in)).approximateNumEntries()));
        register("store.iterator_open", KeyValueFamily::iteratorOpen);
        register("store.iterator_next", in -> {
            final KeyValueIterator<Bytes, byte[]> it = Stores.iterator(in);
            final long max = Json.lng(in, "max", 1);
            final ArrayNode entries = Json.arr();
            for (long n = 0; n < max && it.hasNext(); n++) {
                final KeyValue<Bytes, byte[]> kv = it.next();
                entries.add(Json.arr().add(hexNode(kv.key.get())).add(hexNode(kv.value)));
            }
            return obj().set("entries", entries);
        });
        register("store.iterator_peek_next_key", in -> {
            final KeyValueIterator<Bytes, byte[]> it = Stores.iterator(in);
            // peekNextKey throws at the end; the operation answers null there (its definition), so ask hasNext first.
            return obj().set("key", it.hasNext() ? hexNode(it.peekNextKey().get()) : NullNode.instance);
        });
        register("store.iterator_close", in -> {
            Stores.iterator(in).close();
            return obj();
        });
    }

    /** store.put_all: one batch of [key, value] pairs. */
    @SuppressWarnings("unchecked")
    private static ObjectNode putAll(final JsonNode in) {
        final Stores.Handle h = Stores.handle(in);
        final JsonNode list = Json.field(in, "entries");
        if (!list.isArray()) {
            throw new Json.InputError("entries", "a list of [key, value] pairs");
        }
        final List<KeyValue<Bytes, byte[]>> entries = new ArrayList<>();
        int i = 0;
        for (final JsonNode pair : list) {
            final String where = "entries[" + i++ + "]";
            if (!pair.isArray() || pair.size() != 2) {
                throw new Json.InputError(where, "a [key, value] pair");
            }
            final byte[] k = Json.parseHex(pair.get(0), where, true);
            entries.add(KeyValue.pair(k == null ? null : Bytes.wrap(k), Json.parseHex(pair.get(1), where, true)));
        }
        if (entries.stream().anyMatch(e -> e.key == null)) {
            // MeteredKeyValueStore.putAll checks every key before it writes any: a batch with a null key goes
            // through it, so that Kafka's user-facing store refuses it whole (the layers below write first).
            ((KeyValueStore<Bytes, byte[]>) (KeyValueStore<?, ?>) h.root).putAll(entries);
        }
        kv(h).putAll(entries);
        return obj();
    }

    /** store.iterator_open: a key-value iterator of one kind, kept under an id until it is closed. */
    private static ObjectNode iteratorOpen(final JsonNode in) {
        final Stores.Handle h = Stores.handle(in);
        final String kind = in.has("kind") && !in.get("kind").isNull() ? Json.str(in, "kind") : "range";
        final KeyValueIterator<Bytes, byte[]> it;
        switch (kind) {
            case "range": it = kv(h).range(optKey(in, "from"), optKey(in, "to")); break;
            case "reverse_range": it = kv(h).reverseRange(optKey(in, "from"), optKey(in, "to")); break;
            case "all": it = kv(h).all(); break;
            case "reverse_all": it = kv(h).reverseAll(); break;
            case "prefix_scan": it = kv(h).prefixScan(Json.hex(in, "prefix"), new ByteArraySerializer()); break;
            default: throw new Json.InputError("kind", "one of range, reverse_range, all, reverse_all, prefix_scan");
        }
        return obj().put("iterator", Stores.keepIterator(h, it));
    }

    @SuppressWarnings("unchecked")
    private static ObjectNode getTyped(final JsonNode in) {
        final Stores.Handle h = Stores.handle(in);
        kv(h);  // a key-value operation: refused on a store of another family
        final Bytes key = key(in, "key");
        final Object typed = ((KeyValueStore<Bytes, Object>) h.root).get(key);
        final ObjectNode out = obj();
        out.put("found", typed != null);
        if (typed == null) {
            if (h.type.equals(StoreTypes.KEY_VALUE)) {
                out.putNull("value");  // the plain facade answers the (null) stored bytes as they are
            }
            return out;
        }
        final Set<String> fields = new TreeSet<>();
        if (in.has("fields") && in.get("fields").isArray()) {
            in.get("fields").forEach(f -> fields.add(f.asText()));
        } else {
            fields.add("value");
            fields.add("timestamp");
            fields.add("headers");
        }
        if (typed instanceof byte[]) {
            if (fields.contains("value")) {
                out.set("value", hexNode((byte[]) typed));
            }
        } else if (typed instanceof ValueAndTimestamp) {
            final ValueAndTimestamp<byte[]> v = (ValueAndTimestamp<byte[]>) typed;
            if (fields.contains("value")) {
                out.set("value", hexNode(v.value()));
            }
            if (fields.contains("timestamp")) {
                out.put("timestamp", v.timestamp());
            }
        } else {
            final org.apache.kafka.streams.state.ValueTimestampHeaders<byte[]> v =
                (org.apache.kafka.streams.state.ValueTimestampHeaders<byte[]>) typed;
            if (fields.contains("value")) {
                out.set("value", hexNode(v.value()));
            }
            if (fields.contains("timestamp")) {
                out.put("timestamp", v.timestamp());
            }
            if (fields.contains("headers")) {
                out.set("headers", Json.headersJson(v.headers()));
            }
        }
        return out;
    }
}
