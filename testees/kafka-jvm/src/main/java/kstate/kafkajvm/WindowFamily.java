package kstate.kafkajvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import kstate.storetypes.StoreTypes;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.Window;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.TimeWindow;
import org.apache.kafka.streams.processor.internals.InternalTopicConfig;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.WindowStoreIterator;
import org.apache.kafka.streams.state.internals.WrappedStateStore;

import java.time.Duration;
import java.util.List;

import static kstate.kafkajvm.Json.hex;
import static kstate.kafkajvm.Json.hexNode;
import static kstate.kafkajvm.Json.hexOrNull;
import static kstate.kafkajvm.Json.integer;
import static kstate.kafkajvm.Json.lng;
import static kstate.kafkajvm.Json.obj;
import static kstate.kafkajvm.K.t;
import static kstate.kafkajvm.KeySchemas.TOPIC;
import static kstate.kafkajvm.KeySchemas.wrap;
import static kstate.kafkajvm.Main.register;
import static kstate.kafkajvm.Stores.key;

/** Window stores (spec/window-store.md, WS-*): {@code window}, {@code timestamped_window} and
 *  {@code timestamped_window_with_headers}, built by Kafka's Stores.persistent*WindowStore / inMemoryWindowStore
 *  suppliers and its builders, the layout-only {@code time_ordered_window_with_headers} (the store of a windowed
 *  aggregation that emits final results, opened for its column families, not listed in store.capabilities), the
 *  {@code window_store.*} operations, and the window key schemas (WIN-*): WindowKeySchema and the prefixed ones. */
final class WindowFamily extends StoreFamily {
    private WindowFamily() {
        super(StoreTypes.FAMILY_WINDOW, TYPES);
    }

    private static final List<String> TYPES = List.of(StoreTypes.WINDOW, StoreTypes.TIMESTAMPED_WINDOW,
        StoreTypes.TIMESTAMPED_WINDOW_WITH_HEADERS);

    private static final KeySchemas.Schema[] SCHEMAS = {
        new KeySchemas.Schema("window", "key_schema", "WindowKeySchema", false),
        new KeySchemas.Schema("window", "time_first", "PrefixedWindowKeySchemas$TimeFirstWindowKeySchema", true),
        new KeySchemas.Schema("window", "key_first", "PrefixedWindowKeySchemas$KeyFirstWindowKeySchema", true),
    };

    /** The header-aware supplier and builder came with KIP-1271. */
    @Override
    boolean offers(final String type) {
        if (type.equals(StoreTypes.TIMESTAMPED_WINDOW_WITH_HEADERS)) {
            return releaseHasHeaderStores("persistentTimestampedWindowStoreWithHeaders",
                t(String.class, Duration.class, Duration.class, boolean.class),
                "timestampedWindowStoreWithHeadersBuilder", org.apache.kafka.streams.state.WindowBytesStoreSupplier.class);
        }
        if (type.equals(StoreTypes.TIME_ORDERED_WINDOW_WITH_HEADERS)) {
            K.cls("RocksDbIndexedTimeOrderedWindowBytesStoreWithHeadersSupplier");
            return true;
        }
        return super.offers(type);
    }

    @Override
    JsonNode openOptions(final JsonNode options, final String type, final String backend) {
        final JsonNode opts = options == null ? obj() : options;
        Json.onlyOptions(opts, "a window store takes retention_ms, window_size_ms, retain_duplicates and "
            + "segment_interval_ms", "retention_ms", "window_size_ms", "retain_duplicates", "segment_interval_ms");
        Json.lng(opts, "retention_ms");
        Json.lng(opts, "window_size_ms");
        Json.bool(opts, "retain_duplicates", false);
        Json.lng(opts, "segment_interval_ms", 0);
        return opts;
    }

    /** Stores.persistent*WindowStore checks the parameters (and picks Kafka's default segment interval); a given
     *  segment interval is passed to the same supplier class through its constructor. */
    @Override
    @SuppressWarnings("rawtypes")
    StoreBuilder builder(final String type, final String name, final boolean rocks, final JsonNode opts) {
        final Duration retention = Duration.ofMillis(Json.lng(opts, "retention_ms"));
        final Duration size = Duration.ofMillis(Json.lng(opts, "window_size_ms"));
        final boolean duplicates = Json.bool(opts, "retain_duplicates", false);
        if (opts.has("segment_interval_ms") && !opts.get("segment_interval_ms").isNull()) {
            checkableSegmentInterval(Json.lng(opts, "segment_interval_ms"));
        }
        final String kind;
        switch (type) {
            case StoreTypes.WINDOW: kind = ""; break;
            case StoreTypes.TIMESTAMPED_WINDOW: kind = "Timestamped"; break;
            case StoreTypes.TIMESTAMPED_WINDOW_WITH_HEADERS: kind = "TimestampedWithHeaders"; break;
            case StoreTypes.TIME_ORDERED_WINDOW_WITH_HEADERS: return timeOrderedWithHeadersBuilder(name, rocks, opts, retention, size, duplicates);
            default: throw StoreTypes.unknown(type, "Stores.windowBuilder");
        }
        org.apache.kafka.streams.state.WindowBytesStoreSupplier supplier;
        if (rocks) {
            final String method = kind.equals("TimestampedWithHeaders") ? "persistentTimestampedWindowStoreWithHeaders"
                : "persistent" + kind + "WindowStore";
            supplier = (org.apache.kafka.streams.state.WindowBytesStoreSupplier) K.invoke(K.method(
                org.apache.kafka.streams.state.Stores.class, method, String.class, Duration.class,
                Duration.class, boolean.class), null, name, retention, size, duplicates);
            if (opts.has("segment_interval_ms") && !opts.get("segment_interval_ms").isNull() && kind.equals("TimestampedWithHeaders")) {
                // The header-aware window store has its own supplier class (the enum value is refused by the plain one).
                supplier = (org.apache.kafka.streams.state.WindowBytesStoreSupplier) K.construct("RocksDbWindowHeadersBytesStoreSupplier",
                    K.t(String.class, long.class, long.class, long.class, boolean.class), name, retention.toMillis(),
                    Json.lng(opts, "segment_interval_ms"), size.toMillis(), duplicates);
            } else if (opts.has("segment_interval_ms") && !opts.get("segment_interval_ms").isNull()) {
                final Class<?> types = K.cls("RocksDbWindowBytesStoreSupplier$WindowStoreTypes");
                final String constant = kind.isEmpty() ? "DEFAULT_WINDOW_STORE"
                    : kind.equals("Timestamped") ? "TIMESTAMPED_WINDOW_STORE" : "TIMESTAMPED_WINDOW_STORE_WITH_HEADERS";
                supplier = (org.apache.kafka.streams.state.WindowBytesStoreSupplier) K.construct("RocksDbWindowBytesStoreSupplier",
                    K.t(String.class, long.class, long.class, long.class, boolean.class, types), name, retention.toMillis(),
                    Json.lng(opts, "segment_interval_ms"), size.toMillis(), duplicates,
                    Enum.valueOf(types.asSubclass(Enum.class), constant));
            }
        } else {
            supplier = org.apache.kafka.streams.state.Stores.inMemoryWindowStore(name, retention, size, duplicates);
        }
        final String builder = kind.equals("TimestampedWithHeaders") ? "timestampedWindowStoreWithHeadersBuilder"
            : kind.equals("Timestamped") ? "timestampedWindowStoreBuilder" : "windowStoreBuilder";
        return (StoreBuilder) K.invoke(K.method(org.apache.kafka.streams.state.Stores.class, builder,
            org.apache.kafka.streams.state.WindowBytesStoreSupplier.class, org.apache.kafka.common.serialization.Serde.class,
            org.apache.kafka.common.serialization.Serde.class), null, supplier, Serdes.Bytes(), Serdes.ByteArray());
    }

    /** WS-2, WIN-16: Kafka's public Stores takes no segment interval for a window store; the internal supplier
     *  that does (RocksDbWindowBytesStoreSupplier's constructor, given Kafka's own default by Stores) checks none, so
     *  an interval below 1 has no Kafka refusal to reach: it is unsupported, never answered by what the unchecked
     *  supplier then does (a division by zero in the segments). In-memory window stores have no segments. */
    static void checkableSegmentInterval(final long interval) {
        if (interval < 1) {
            throw new K.Unavailable("Kafka's Stores takes no segment interval for a window store and the internal "
                + "RocksDbWindowBytesStoreSupplier that takes one checks none (Stores only ever gives it "
                + "max(retention / 2, 60000)): a segment interval of " + interval + " has no Kafka check to answer");
        }
    }

    /** The time-ordered header-aware window store as Kafka's emit-final windowed aggregation builds it
     *  (RocksDbIndexedTimeOrderedWindowBytesStoreWithHeadersSupplier.create, no index, under
     *  Stores.timestampedWindowStoreWithHeadersBuilder). Kafka has it on RocksDB only and picks its segment interval
     *  itself (create takes none): an in-memory store or a given interval is not expressible, so unsupported. */
    @SuppressWarnings("rawtypes")
    private static StoreBuilder timeOrderedWithHeadersBuilder(final String name, final boolean rocks, final JsonNode opts,
                                                              final Duration retention, final Duration size,
                                                              final boolean duplicates) {
        if (!rocks) {
            throw new K.Unavailable("Kafka has no in-memory time-ordered window store");
        }
        if (opts.has("segment_interval_ms") && !opts.get("segment_interval_ms").isNull()) {
            throw new K.Unavailable("RocksDbIndexedTimeOrderedWindowBytesStoreWithHeadersSupplier.create takes no segment interval");
        }
        final Object supplier = K.call("RocksDbIndexedTimeOrderedWindowBytesStoreWithHeadersSupplier", "create",
            K.t(String.class, Duration.class, Duration.class, boolean.class, boolean.class),
            name, retention, size, duplicates, false);
        return (StoreBuilder) K.invoke(K.method(org.apache.kafka.streams.state.Stores.class,
            "timestampedWindowStoreWithHeadersBuilder", org.apache.kafka.streams.state.WindowBytesStoreSupplier.class,
            org.apache.kafka.common.serialization.Serde.class, org.apache.kafka.common.serialization.Serde.class),
            null, supplier, Serdes.Bytes(), Serdes.ByteArray());
    }

    @Override
    void bind(final Stores.Handle h) {
        h.layer = ((WrappedStateStore<?, ?, ?>) h.root).wrapped();
    }

    @Override
    ObjectNode retentionOptions(final long retentionMs) {
        return obj().put("retention_ms", retentionMs).put("window_size_ms", 1L);
    }

    @Override
    List<String> loggedWrites() {
        return List.of("put");
    }

    /** A retention no test timestamp expires; the window size does not enter the logged record. */
    @Override
    ObjectNode loggingOptions(final boolean retainDuplicates) {
        return super.loggingOptions(retainDuplicates).put("retain_duplicates", retainDuplicates);
    }

    @Override
    void logWrite(final Stores.Handle h, final String operation, final ObjectNode write, final JsonNode in,
                  final ObjectNode out) throws Exception {
        write.put("window_start", Json.lng(in, "window_start"));
        // The layer's seqnum before the write (ChangeLoggingWindowBytesStore.seqnum); the put moves it
        // (maybeUpdateSeqnumForDups) when the store keeps duplicates.
        final WindowStore<Bytes, byte[]> layer = store(h);
        final java.lang.reflect.Field seqnum = Changelog.field(layer.getClass(), "seqnum");
        seqnum.setInt(layer, (int) Json.lng(in, "seqnum", 0));
        Main.OPS.get("window_store.put").apply(write);
        out.put("seqnum", seqnum.getInt(layer));
    }

    /** The builder is consulted for its logConfig only, which does not depend on the retention (the window
     *  builders' constructors add cleanup.policy=delete for retainDuplicates alone). */
    @Override
    @SuppressWarnings("rawtypes")
    InternalTopicConfig topicConfig(final String type, final String name, final String topic, final JsonNode in) {
        final long retention = Json.lng(in, "retention_ms");
        final ObjectNode opts = obj().put("retention_ms", 0L);
        opts.put("window_size_ms", 0L).put("retain_duplicates", Json.bool(in, "retain_duplicates", false));
        final StoreBuilder builder = builder(type, name, false, opts);
        return Changelog.windowedTopicConfig(topic, Changelog.withLogConfig(builder, in), retention);
    }

    @Override
    void writeAtZero(final ObjectNode put) throws Exception {
        Main.OPS.get("window_store.put").apply(put.put("window_start", 0L));
    }

    /** The window bytes store of a handle; refused on a store of another family (OPS-2). */
    static WindowStore<Bytes, byte[]> store(final Stores.Handle h) {
        final WindowStore<Bytes, byte[]> w = orNull(h);
        if (w == null) {
            throw notOf(h, "window");
        }
        return w;
    }

    /** The window bytes store of a handle, null for a store of another family. */
    @SuppressWarnings("unchecked")
    static WindowStore<Bytes, byte[]> orNull(final Stores.Handle h) {
        return h.family instanceof WindowFamily ? (WindowStore<Bytes, byte[]>) h.layer : null;
    }

    @Override
    void registerOps() {
        registerStoreOps();
        registerKeySchemas();
        register("window.segment_interval", in -> {
            final Duration retention = Duration.ofMillis(Json.lng(in, "retention"));
            final Duration size = Duration.ofMillis(Json.lng(in, "window_size"));
            // Stores checks the retention and the window size and picks the default interval (WIN-16).
            final org.apache.kafka.streams.state.WindowBytesStoreSupplier supplier =
                org.apache.kafka.streams.state.Stores.persistentWindowStore("store", retention, size, false);
            if (in.has("segment_interval") && !in.get("segment_interval").isNull()) {
                // A given interval is the internal supplier's (the one store.open builds for segment_interval_ms):
                // its segmentIntervalMs() is what the segments use. Below 1 Kafka has no check (unsupported).
                final long interval = Json.lng(in, "segment_interval");
                checkableSegmentInterval(interval);
                final Class<?> types = K.cls("RocksDbWindowBytesStoreSupplier$WindowStoreTypes");
                final org.apache.kafka.streams.state.WindowBytesStoreSupplier given =
                    (org.apache.kafka.streams.state.WindowBytesStoreSupplier) K.construct("RocksDbWindowBytesStoreSupplier",
                        K.t(String.class, long.class, long.class, long.class, boolean.class, types), "store",
                        retention.toMillis(), interval, size.toMillis(), false,
                        Enum.valueOf(types.asSubclass(Enum.class), "DEFAULT_WINDOW_STORE"));
                return obj().put("segment_interval", given.segmentIntervalMs());
            }
            return obj().put("segment_interval", supplier.segmentIntervalMs());
        });
    }

    /** The window store's operations (window_store.*). */
    private static void registerStoreOps() {
        register("window_store.put", in -> {
            store(Stores.handle(in)).put(key(in, "key"), hexOrNull(in, "value"), Json.lng(in, "window_start"));
            return obj();
        });
        register("window_store.fetch", in -> obj().set("value",
            hexNode(store(Stores.handle(in)).fetch(key(in, "key"), Json.lng(in, "time")))));
        register("window_store.fetch_range", in -> {
            final WindowStore<Bytes, byte[]> w = store(Stores.handle(in));
            final Bytes k = key(in, "key");
            final long from = Json.lng(in, "from_ms");
            final long to = Json.lng(in, "to_ms");
            final ArrayNode entries = Json.arr();
            try (WindowStoreIterator<byte[]> it = Json.bool(in, "backward", false) ? w.backwardFetch(k, from, to) : w.fetch(k, from, to)) {
                while (it.hasNext()) {
                    final KeyValue<Long, byte[]> kv = it.next();
                    entries.add(Json.arr().add(kv.key).add(hexNode(kv.value)));
                }
            }
            return obj().set("entries", entries);
        });
        register("window_store.fetch_keys", in -> {
            final WindowStore<Bytes, byte[]> w = store(Stores.handle(in));
            final Bytes from = key(in, "key_from");
            final Bytes to = key(in, "key_to");
            final long fromMs = Json.lng(in, "from_ms");
            final long toMs = Json.lng(in, "to_ms");
            return windowed(Json.bool(in, "backward", false) ? w.backwardFetch(from, to, fromMs, toMs) : w.fetch(from, to, fromMs, toMs));
        });
        register("window_store.fetch_all", in -> {
            final WindowStore<Bytes, byte[]> w = store(Stores.handle(in));
            final long fromMs = Json.lng(in, "from_ms");
            final long toMs = Json.lng(in, "to_ms");
            return windowed(Json.bool(in, "backward", false) ? w.backwardFetchAll(fromMs, toMs) : w.fetchAll(fromMs, toMs));
        });
        register("window_store.all", in -> {
            final WindowStore<Bytes, byte[]> w = store(Stores.handle(in));
            return windowed(Json.bool(in, "backward", false) ? w.backwardAll() : w.all());
        });
    }

    private static ObjectNode windowed(final KeyValueIterator<Windowed<Bytes>, byte[]> it) {
        final ArrayNode entries = Json.arr();
        try (it) {
            while (it.hasNext()) {
                final KeyValue<Windowed<Bytes>, byte[]> kv = it.next();
                entries.add(Json.arr().add(hexNode(kv.key.key().get())).add(kv.key.window().start()).add(hexNode(kv.value)));
            }
        }
        return obj().set("entries", entries);
    }

    /** The window key schemas' codec operations (WIN-*). */
    private static void registerKeySchemas() {
        for (final KeySchemas.Schema s : SCHEMAS) {
            schema(s);
            KeySchemas.ranges(s);
            KeySchemas.segmentId(s);
        }
        register("window.time_first.from_non_prefix_window_key", in -> obj().set("bytes", hexNode((byte[]) K.call(
            SCHEMAS[1].cls(), "fromNonPrefixWindowKey", t(byte[].class), (Object) hex(in, "bytes")))));
        register("window.key_first.from_non_prefix_window_key", in -> obj().set("bytes", hexNode((byte[]) K.call(
            SCHEMAS[2].cls(), "fromNonPrefixWindowKey", t(byte[].class), (Object) hex(in, "bytes")))));
        register("window.is_time_first_schema_key", in -> obj().put("result", (boolean) K.call(
            "PrefixedWindowKeySchemas", "isTimeFirstSchemaKey", t(byte[].class), (Object) hex(in, "bytes"))));
        register("window.key_schema.to_binary", in -> {
            final Windowed<byte[]> key = new Windowed<>(hexOrNull(in, "key"),
                new TimeWindow(lng(in, "window_start"), lng(in, "window_end")));
            return obj().set("bytes", hexNode((byte[]) K.call("WindowKeySchema", "toBinary",
                t(Windowed.class, Serializer.class, Headers.class, String.class), key, new ByteArraySerializer(), new RecordHeaders(), TOPIC)));
        });
        register("window.key_schema.from_binary", in -> {
            final Windowed<?> w = (Windowed<?>) K.call("WindowKeySchema", "from", t(byte[].class, long.class, Deserializer.class, Headers.class, String.class),
                hex(in, "bytes"), lng(in, "window_size"), new ByteArrayDeserializer(), new RecordHeaders(), TOPIC);
            return obj().put("start", w.window().start()).put("end", w.window().end()).set("key", hexNode((byte[]) w.key()));
        });
    }

    private static void schema(final KeySchemas.Schema s) {
        final String p = s.prefix();
        register(p + "to_store_key_binary", in -> obj().set("bytes", hexNode(((Bytes) K.call(s.cls(), "toStoreKeyBinary",
            t(Bytes.class, long.class, int.class), wrap(hexOrNull(in, "key")), lng(in, "timestamp"), integer(in, "seqnum"))).get())));
        register(p + "extract_store_key", in -> {
            final byte[] data = hex(in, "bytes");
            final ObjectNode out = obj();
            out.set("key", hexNode((byte[]) K.call(s.cls(), "extractStoreKeyBytes", t(byte[].class), (Object) data)));
            out.put("timestamp", (long) K.call(s.cls(), "extractStoreTimestamp", t(byte[].class), (Object) data));
            out.put("seqnum", (int) K.call(s.cls(), "extractStoreSequence", t(byte[].class), (Object) data));
            if (s.prefixed()) {
                out.put("is_time_first", (boolean) K.call("PrefixedWindowKeySchemas", "isTimeFirstSchemaKey", t(byte[].class), (Object) data));
            }
            return out;
        });
        register(p + "extract_store_window", in -> {
            final Window w = (Window) K.call(s.cls(), "extractStoreWindow", t(byte[].class, long.class), hex(in, "bytes"), lng(in, "window_size"));
            return obj().put("start", w.start()).put("end", w.end());
        });
    }
}
