package kstate.streams;

import com.fasterxml.jackson.databind.JsonNode;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import kstate.storetypes.StoreTypes;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.SessionBytesStoreSupplier;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.VersionedBytesStoreSupplier;
import org.apache.kafka.streams.state.VersionedKeyValueStore;
import org.apache.kafka.streams.state.WindowBytesStoreSupplier;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.internals.RocksDbSessionBytesStoreSupplier;
import org.apache.kafka.streams.state.internals.RocksDbWindowBytesStoreSupplier;

/**
 * The versioned, window and session families' processors (INST-22..INST-26), written with the Processor API over
 * stores of Kafka's own suppliers and builders, so that every write, its change logging, restore and commit are
 * Kafka's. The header-aware types (KIP-1271) are reached by reflection: the same source builds against 4.2.
 */
final class Families {
    /** A store or processor option this family does not take, lacks or cannot use (INST-26): exit 64. */
    static final class OptionError extends Exception {
        OptionError(String option, String reason) {
            super("option '" + option + "': " + reason);
        }
    }

    private static final String STATE = "org.apache.kafka.streams.state.";

    private Families() {
    }

    static boolean handles(String storeType) {
        return switch (storeType) {
            case StoreTypes.VERSIONED_KV, StoreTypes.WINDOW, StoreTypes.TIMESTAMPED_WINDOW,
                    StoreTypes.TIMESTAMPED_WINDOW_WITH_HEADERS, StoreTypes.SESSION, StoreTypes.SESSION_WITH_HEADERS -> true;
            case StoreTypes.KEY_VALUE, StoreTypes.TIMESTAMPED_KV, StoreTypes.TIMESTAMPED_KV_WITH_HEADERS,
                    StoreTypes.VERSIONED_KV_WITH_HEADERS, StoreTypes.TIME_ORDERED_WINDOW_WITH_HEADERS -> false;
            default -> throw StoreTypes.unknown(storeType, "Families.handles");
        };
    }

    /**
     * The types of these families this Kafka version builds. `versioned_kv_with_headers` is never listed: no Kafka
     * version up to 4.4.0 has a header-aware versioned store builder in `Stores` (VS-*, HV-11).
     */
    static List<String> storeTypes() {
        List<String> types = new ArrayList<>(List.of("versioned_kv", "window", "timestamped_window"));
        if (storesMethod("timestampedWindowStoreWithHeadersBuilder") != null) {
            types.add("timestamped_window_with_headers");
        }
        types.add("session");
        if (storesMethod("sessionStoreWithHeadersBuilder") != null) {
            types.add("session_with_headers");
        }
        return types;
    }

    private static Method storesMethod(String name) {
        for (Method m : Stores.class.getMethods()) {
            if (m.getName().equals(name)) {
                return m;
            }
        }
        return null;
    }

    // --- options (INST-26) --------------------------------------------------------------------------------------

    /** The family's options, checked before anything is opened; a bad one is an {@link OptionError}. */
    record Options(long retention, long windowSize, Long segmentInterval, boolean retainDuplicates, long grace,
                   long gap) {
    }

    static Options options(InstanceConfig c) throws OptionError {
        Map<String, JsonNode> store = c.storeOptionValues;
        Map<String, JsonNode> proc = c.processorOptionValues;
        switch (c.storeType) {
            case StoreTypes.VERSIONED_KV -> {
                known(store, Set.of("history_retention_ms", "segment_interval_ms"));
                known(proc, Set.of());
                return new Options(required(store, "history_retention_ms"), 0,
                        optional(store, "segment_interval_ms"), false, 0, 0);
            }
            case StoreTypes.WINDOW, StoreTypes.TIMESTAMPED_WINDOW, StoreTypes.TIMESTAMPED_WINDOW_WITH_HEADERS -> {
                known(store, Set.of("retention_ms", "window_size_ms", "retain_duplicates", "segment_interval_ms"));
                known(proc, Set.of("grace_ms"));
                long retention = required(store, "retention_ms");
                long size = required(store, "window_size_ms");
                if (size < 1) {
                    throw new OptionError("window_size_ms", "a tumbling window is at least 1 ms long");
                }
                JsonNode dup = store.get("retain_duplicates");
                if (dup != null && !dup.isBoolean()) {
                    throw new OptionError("retain_duplicates", "expected a bool, got " + dup);
                }
                Long graceGiven = optional(proc, "grace_ms");
                long grace = graceGiven == null ? retention - size : graceGiven;
                if (size + grace > retention) {
                    throw new OptionError("grace_ms", "window size + grace exceeds the store's retention " + retention);
                }
                return new Options(retention, size, optional(store, "segment_interval_ms"),
                        dup != null && dup.booleanValue(), grace, 0);
            }
            case StoreTypes.SESSION, StoreTypes.SESSION_WITH_HEADERS -> {
                known(store, Set.of("retention_ms", "segment_interval_ms"));
                known(proc, Set.of("inactivity_gap_ms", "grace_ms"));
                long retention = required(store, "retention_ms");
                long gap = required(proc, "inactivity_gap_ms");
                Long graceGiven = optional(proc, "grace_ms");
                return new Options(retention, 0, optional(store, "segment_interval_ms"), false,
                        graceGiven == null ? Math.max(retention - gap, 0) : graceGiven, gap);
            }
            default -> throw StoreTypes.unknown(c.storeType, "Families.options");
        }
    }

    private static void known(Map<String, JsonNode> given, Set<String> accepted) throws OptionError {
        for (String name : given.keySet()) {
            if (!accepted.contains(name)) {
                throw new OptionError(name, "not an option of this store type or processor (accepted: "
                        + (accepted.isEmpty() ? "none" : String.join(", ", new java.util.TreeSet<>(accepted))) + ")");
            }
        }
    }

    private static Long optional(Map<String, JsonNode> given, String name) throws OptionError {
        JsonNode v = given.get(name);
        if (v == null) {
            return null;
        }
        if (!v.isIntegralNumber() || !v.canConvertToLong() || v.longValue() < 0) {
            throw new OptionError(name, "expected a non-negative int, got " + v);
        }
        return v.longValue();
    }

    private static long required(Map<String, JsonNode> given, String name) throws OptionError {
        Long v = optional(given, name);
        if (v == null) {
            throw new OptionError(name, "required");
        }
        return v;
    }

    // --- stores: Kafka's suppliers and builders -------------------------------------------------------------------

    static StoreBuilder<?> storeBuilder(InstanceConfig c, Options o) {
        String name = c.storeName;
        try {
            switch (c.storeType) {
                case StoreTypes.VERSIONED_KV: {
                    VersionedBytesStoreSupplier s = o.segmentInterval() == null
                            ? Stores.persistentVersionedKeyValueStore(name, Duration.ofMillis(o.retention()))
                            : Stores.persistentVersionedKeyValueStore(name, Duration.ofMillis(o.retention()),
                                    Duration.ofMillis(o.segmentInterval()));
                    return Stores.versionedKeyValueStoreBuilder(s, Serdes.Bytes(), Serdes.ByteArray());
                }
                case StoreTypes.WINDOW:
                    return Stores.windowStoreBuilder(windowSupplier(name, o, "DEFAULT_WINDOW_STORE"), Serdes.Bytes(),
                            Serdes.ByteArray());
                case StoreTypes.TIMESTAMPED_WINDOW:
                    return Stores.timestampedWindowStoreBuilder(windowSupplier(name, o, "TIMESTAMPED_WINDOW_STORE"),
                            Serdes.Bytes(), Serdes.ByteArray());
                case StoreTypes.TIMESTAMPED_WINDOW_WITH_HEADERS:
                    return (StoreBuilder<?>) storesMethod("timestampedWindowStoreWithHeadersBuilder").invoke(null,
                            windowSupplier(name, o, "TIMESTAMPED_WINDOW_STORE_WITH_HEADERS"), Serdes.Bytes(),
                            Serdes.ByteArray());
                case StoreTypes.SESSION:
                    return Stores.sessionStoreBuilder(sessionSupplier(name, o), Serdes.Bytes(), Serdes.ByteArray());
                case StoreTypes.SESSION_WITH_HEADERS:
                    return (StoreBuilder<?>) storesMethod("sessionStoreWithHeadersBuilder").invoke(null,
                            sessionHeadersSupplier(name, o), Serdes.Bytes(), Serdes.ByteArray());
                default:
                    throw StoreTypes.unknown(c.storeType, "Families.storeBuilder");
            }
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("no builder for " + c.storeType + " in this Kafka version", e);
        }
    }

    /**
     * Kafka's RocksDB window supplier with the config's segment interval: `Stores.persistentWindowStore` fixes it at
     * max(retention / 2, 60 s) (WS-*), and the kit's stores name their segments by the interval they are given.
     */
    private static WindowBytesStoreSupplier windowSupplier(String name, Options o, String kind)
            throws ReflectiveOperationException {
        long segment = o.segmentInterval() != null ? o.segmentInterval() : Math.max(o.retention() / 2, 60_000L);
        if (kind.equals("TIMESTAMPED_WINDOW_STORE_WITH_HEADERS")) {
            Class<?> cls = Class.forName(STATE + "internals.RocksDbWindowHeadersBytesStoreSupplier");
            return (WindowBytesStoreSupplier) cls.getConstructor(String.class, long.class, long.class, long.class,
                    boolean.class).newInstance(name, o.retention(), segment, o.windowSize(), o.retainDuplicates());
        }
        return new RocksDbWindowBytesStoreSupplier(name, o.retention(), segment, o.windowSize(), o.retainDuplicates(),
                RocksDbWindowBytesStoreSupplier.WindowStoreTypes.valueOf(kind));
    }

    /** Kafka's RocksDB session supplier; its segment interval (fixed at max(retention / 2, 60 s)) the config's. */
    private static SessionBytesStoreSupplier sessionSupplier(String name, Options o) {
        if (o.segmentInterval() == null) {
            return Stores.persistentSessionStore(name, Duration.ofMillis(o.retention()));
        }
        long segment = o.segmentInterval();
        return new RocksDbSessionBytesStoreSupplier(name, o.retention()) {
            @Override
            public long segmentIntervalMs() {
                return segment; // get() reads it through this method
            }
        };
    }

    /**
     * KIP-1271's session supplier with the config's segment interval: Kafka's own `RocksDbSessionHeadersBytesStoreSupplier`
     * for everything but `get()`, which builds the same store (`RocksDBSessionStoreWithHeaders` over
     * `SessionRocksDBSegmentedBytesStoreWithHeaders`) with that interval. A proxy, since the class is absent in 4.2.
     */
    private static SessionBytesStoreSupplier sessionHeadersSupplier(String name, Options o)
            throws ReflectiveOperationException {
        Object kafkas = Stores.class.getMethod("persistentSessionStoreWithHeaders", String.class, Duration.class)
                .invoke(null, name, Duration.ofMillis(o.retention()));
        if (o.segmentInterval() == null) {
            return (SessionBytesStoreSupplier) kafkas;
        }
        long segment = o.segmentInterval();
        Class<?> marker = Class.forName(STATE + "HeadersBytesStoreSupplier");
        Class<?> bytesStore = Class.forName(STATE + "internals.SessionRocksDBSegmentedBytesStoreWithHeaders");
        Class<?> keySchema = Class.forName(STATE + "internals.SegmentedBytesStore$KeySchema");
        Class<?> abstractStore = Class.forName(STATE + "internals.AbstractRocksDBSegmentedBytesStore");
        Class<?> store = Class.forName(STATE + "internals.RocksDBSessionStoreWithHeaders");
        Constructor<?> bytesCtor = bytesStore.getDeclaredConstructor(String.class, String.class, long.class,
                long.class, keySchema);
        bytesCtor.setAccessible(true);
        Constructor<?> storeCtor = store.getDeclaredConstructor(abstractStore);
        storeCtor.setAccessible(true);
        Object schema = Class.forName(STATE + "internals.SessionKeySchema").getConstructor().newInstance();
        String scope = ((SessionBytesStoreSupplier) kafkas).metricsScope();
        return (SessionBytesStoreSupplier) Proxy.newProxyInstance(Families.class.getClassLoader(),
                new Class<?>[] {SessionBytesStoreSupplier.class, marker}, (proxy, method, args) -> {
                    if (method.getName().equals("segmentIntervalMs")) {
                        return segment;
                    }
                    if (method.getName().equals("get") && method.getParameterCount() == 0) {
                        return storeCtor.newInstance(bytesCtor.newInstance(name, scope, o.retention(), segment, schema));
                    }
                    try {
                        return method.invoke(kafkas, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    // --- processors ----------------------------------------------------------------------------------------------

    /** The processor of `c`'s family; `afterRecord` is the instance's bookkeeping after each input record. */
    static ProcessorSupplier<byte[], byte[], Void, Void> processor(InstanceConfig c, Options o,
                                                                    Consumer<ProcessorContext<Void, Void>> afterRecord) {
        return switch (c.storeType) {
            case StoreTypes.VERSIONED_KV -> () -> new VersionedTable(c.storeName, afterRecord);
            case StoreTypes.SESSION, StoreTypes.SESSION_WITH_HEADERS -> () -> new SessionAggregate(c, o, afterRecord);
            case StoreTypes.WINDOW, StoreTypes.TIMESTAMPED_WINDOW, StoreTypes.TIMESTAMPED_WINDOW_WITH_HEADERS ->
                    () -> new WindowAggregate(c, o, afterRecord);
            default -> throw StoreTypes.unknown(c.storeType, "Families.processor");
        };
    }

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

    private static Object call(Object target, String method) {
        try {
            return target.getClass().getMethod(method).invoke(target);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Object make(String cls, Class<?>[] types, Object... args) {
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

    /** INST-22: `table()` over a versioned store, every record a version at its timestamp, null a tombstone. */
    private static final class VersionedTable extends StoreProcessor<VersionedKeyValueStore<Bytes, byte[]>> {
        VersionedTable(String storeName, Consumer<ProcessorContext<Void, Void>> afterRecord) {
            super(storeName, afterRecord);
        }

        @Override
        void accept(Record<byte[], byte[]> record) {
            store.put(Bytes.wrap(record.key()), record.value(), record.timestamp());
        }
    }

    /** The windowed aggregates' shared frame: the store, the stream time they observe, and the hook after each record. */
    private abstract static class Aggregate<S> extends StoreProcessor<S> {
        final InstanceConfig config;
        final Options options;
        long observedStreamTime = -1;

        Aggregate(InstanceConfig config, Options options, Consumer<ProcessorContext<Void, Void>> afterRecord) {
            super(config.storeName, afterRecord);
            this.config = config;
            this.options = options;
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

    /** INST-23: `KStreamWindowAggregate` over tumbling windows; stream time is the processor's, not persisted. */
    private static final class WindowAggregate extends Aggregate<WindowStore<Bytes, Object>> {
        WindowAggregate(InstanceConfig config, Options options, Consumer<ProcessorContext<Void, Void>> afterRecord) {
            super(config, options, afterRecord);
        }

        @Override
        void apply(Bytes key, byte[] value, long ts, Headers headers) {
            long size = options.windowSize();
            long windowStart = ts - ts % size;
            if (windowStart + size <= observedStreamTime - options.grace()) {
                return; // the window is closed: dropped, nothing read or written
            }
            Object old = store.fetch(key, windowStart);
            long count = 0;
            long timestamp = ts;
            if (old != null) {
                byte[] oldValue = old instanceof byte[] bytes ? bytes : (byte[]) call(old, "value");
                count = count(oldValue);
                if (!(old instanceof byte[])) {
                    timestamp = Math.max((Long) call(old, "timestamp"), ts);
                }
            }
            byte[] agg = aggregate(count + 1, value);
            Object stored = switch (config.storeType) {
                case StoreTypes.WINDOW -> agg;
                case StoreTypes.TIMESTAMPED_WINDOW -> ValueAndTimestamp.make(agg, timestamp);
                case StoreTypes.TIMESTAMPED_WINDOW_WITH_HEADERS -> make("ValueTimestampHeaders",
                        new Class<?>[] {Object.class, long.class, Headers.class}, agg, timestamp, headers);
                default -> throw StoreTypes.unknown(config.storeType, "WindowAggregate: the stored aggregate");
            };
            store.put(key, stored, windowStart);
        }
    }

    /** INST-24: `KStreamSessionWindowAggregate`: merge the overlapping sessions, drop a closed one. */
    private static final class SessionAggregate extends Aggregate<SessionStore<Bytes, Object>> {
        SessionAggregate(InstanceConfig config, Options options, Consumer<ProcessorContext<Void, Void>> afterRecord) {
            super(config, options, afterRecord);
        }

        @Override
        void apply(Bytes key, byte[] value, long ts, Headers headers) {
            long closeTime = observedStreamTime - options.grace();
            long start = ts;
            long end = ts;
            long count = 0;
            List<KeyValue<Windowed<Bytes>, Object>> merged = new ArrayList<>();
            try (KeyValueIterator<Windowed<Bytes>, Object> it = store.findSessions(key, ts - options.gap(),
                    ts + options.gap())) {
                it.forEachRemaining(merged::add); // read to the end before the store changes
            }
            for (KeyValue<Windowed<Bytes>, Object> session : merged) {
                Object agg = session.value;
                count += count(agg instanceof byte[] bytes ? bytes : (byte[]) call(agg, "aggregation"));
                start = Math.min(start, session.key.window().start());
                end = Math.max(end, session.key.window().end());
            }
            if (end < closeTime) {
                return; // the merged session is closed: dropped
            }
            if (start != ts || end != ts) {
                for (KeyValue<Windowed<Bytes>, Object> session : merged) {
                    store.remove(session.key);
                }
            }
            byte[] agg = aggregate(count + 1, value);
            Object stored = switch (config.storeType) {
                case StoreTypes.SESSION -> agg;
                case StoreTypes.SESSION_WITH_HEADERS -> make("AggregationWithHeaders",
                        new Class<?>[] {Object.class, Headers.class}, agg, headers);
                default -> throw StoreTypes.unknown(config.storeType, "SessionAggregate: the stored aggregate");
            };
            store.put(new Windowed<>(key, new SessionWindow(start, end)), stored);
        }
    }
}
