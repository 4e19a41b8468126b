package kstate.streams;

import com.fasterxml.jackson.databind.JsonNode;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
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
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.SessionBytesStoreSupplier;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.internals.RocksDbSessionBytesStoreSupplier;

/**
 * The session family: `KStreamSessionWindowAggregate` (INST-24) on a store of Kafka's own suppliers and builders,
 * its options (INST-26). The header-aware type (KIP-1271) is reached by reflection.
 */
final class SessionFamily implements StoreFamily {
    private static final String HEADERS_BUILDER = "sessionStoreWithHeadersBuilder";

    @Override
    public boolean builds(String storeType) {
        return switch (storeType) {
            case StoreTypes.SESSION -> true;
            case StoreTypes.SESSION_WITH_HEADERS -> Families.storesMethod(HEADERS_BUILDER) != null;
            default -> throw StoreTypes.unknown(storeType, "SessionFamily.builds");
        };
    }

    @Override
    public ConfiguredStore configure(InstanceConfig config) throws Families.OptionError {
        Map<String, JsonNode> store = config.storeOptionValues;
        Map<String, JsonNode> proc = config.processorOptionValues;
        Families.known(store, Set.of("retention_ms", "segment_interval_ms"));
        Families.known(proc, Set.of("inactivity_gap_ms", "grace_ms"));
        long retention = Families.required(store, "retention_ms");
        long gap = Families.required(proc, "inactivity_gap_ms");
        Long graceGiven = Families.optional(proc, "grace_ms");
        return new Sessions(config, retention, Families.optional(store, "segment_interval_ms"),
                graceGiven == null ? Math.max(retention - gap, 0) : graceGiven, gap);
    }

    /** A session store of `config` with its options; `segmentInterval` null for Kafka's default. */
    private record Sessions(InstanceConfig config, long retention, Long segmentInterval, long grace, long gap)
            implements ConfiguredStore {
        @Override
        public StoreBuilder<?> storeBuilder() {
            try {
                switch (config.storeType) {
                    case StoreTypes.SESSION:
                        return Stores.sessionStoreBuilder(supplier(), Serdes.Bytes(), Serdes.ByteArray());
                    case StoreTypes.SESSION_WITH_HEADERS:
                        return (StoreBuilder<?>) Families.storesMethod(HEADERS_BUILDER).invoke(null, headersSupplier(),
                                Serdes.Bytes(), Serdes.ByteArray());
                    default:
                        throw StoreTypes.unknown(config.storeType, "SessionFamily.storeBuilder");
                }
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("no builder for " + config.storeType + " in this Kafka version", e);
            }
        }

        /** Kafka's RocksDB session supplier; its segment interval (fixed at max(retention / 2, 60 s)) the config's. */
        private SessionBytesStoreSupplier supplier() {
            String name = config.storeName;
            if (segmentInterval == null) {
                return Stores.persistentSessionStore(name, Duration.ofMillis(retention));
            }
            long segment = segmentInterval;
            return new RocksDbSessionBytesStoreSupplier(name, retention) {
                @Override
                public long segmentIntervalMs() {
                    return segment; // get() reads it through this method
                }
            };
        }

        /**
         * KIP-1271's session supplier with the config's segment interval: Kafka's own
         * `RocksDbSessionHeadersBytesStoreSupplier` for everything but `get()`, which builds the same store
         * (`RocksDBSessionStoreWithHeaders` over `SessionRocksDBSegmentedBytesStoreWithHeaders`) with that interval.
         * A proxy, since the class is absent in 4.2.
         */
        private SessionBytesStoreSupplier headersSupplier() throws ReflectiveOperationException {
            String name = config.storeName;
            Object kafkas = Stores.class.getMethod("persistentSessionStoreWithHeaders", String.class, Duration.class)
                    .invoke(null, name, Duration.ofMillis(retention));
            if (segmentInterval == null) {
                return (SessionBytesStoreSupplier) kafkas;
            }
            long segment = segmentInterval;
            String state = Families.STATE;
            Class<?> marker = Class.forName(state + "HeadersBytesStoreSupplier");
            Class<?> bytesStore = Class.forName(state + "internals.SessionRocksDBSegmentedBytesStoreWithHeaders");
            Class<?> keySchema = Class.forName(state + "internals.SegmentedBytesStore$KeySchema");
            Class<?> abstractStore = Class.forName(state + "internals.AbstractRocksDBSegmentedBytesStore");
            Class<?> store = Class.forName(state + "internals.RocksDBSessionStoreWithHeaders");
            Constructor<?> bytesCtor = bytesStore.getDeclaredConstructor(String.class, String.class, long.class,
                    long.class, keySchema);
            bytesCtor.setAccessible(true);
            Constructor<?> storeCtor = store.getDeclaredConstructor(abstractStore);
            storeCtor.setAccessible(true);
            Object schema = Class.forName(state + "internals.SessionKeySchema").getConstructor().newInstance();
            String scope = ((SessionBytesStoreSupplier) kafkas).metricsScope();
            return (SessionBytesStoreSupplier) Proxy.newProxyInstance(SessionFamily.class.getClassLoader(),
                    new Class<?>[] {SessionBytesStoreSupplier.class, marker}, (proxy, method, args) -> {
                        if (method.getName().equals("segmentIntervalMs")) {
                            return segment;
                        }
                        if (method.getName().equals("get") && method.getParameterCount() == 0) {
                            return storeCtor.newInstance(bytesCtor.newInstance(name, scope, retention, segment, schema));
                        }
                        try {
                            return method.invoke(kafkas, args);
                        } catch (InvocationTargetException e) {
                            throw e.getCause();
                        }
                    });
        }

        @Override
        public ProcessorSupplier<byte[], byte[], Void, Void> processor(
                Consumer<ProcessorContext<Void, Void>> afterRecord) {
            return () -> new SessionAggregate(this, afterRecord);
        }

        /** As the instance has always named them: its segments are not inspected, so no upgrade mode is reported. */
        @Override
        public ColumnFamilies columnFamilies() {
            return new ColumnFamilies("", "default");
        }
    }

    /** INST-24: `KStreamSessionWindowAggregate`: merge the overlapping sessions, drop a closed one. */
    private static final class SessionAggregate extends Families.Aggregate<SessionStore<Bytes, Object>> {
        private final Sessions sessions;

        SessionAggregate(Sessions sessions, Consumer<ProcessorContext<Void, Void>> afterRecord) {
            super(sessions.config().storeName, afterRecord);
            this.sessions = sessions;
        }

        @Override
        void apply(Bytes key, byte[] value, long ts, Headers headers) {
            long closeTime = observedStreamTime - sessions.grace();
            long start = ts;
            long end = ts;
            long count = 0;
            List<KeyValue<Windowed<Bytes>, Object>> merged = new ArrayList<>();
            try (KeyValueIterator<Windowed<Bytes>, Object> it = store.findSessions(key, ts - sessions.gap(),
                    ts + sessions.gap())) {
                it.forEachRemaining(merged::add); // read to the end before the store changes
            }
            for (KeyValue<Windowed<Bytes>, Object> session : merged) {
                Object agg = session.value;
                count += Families.count(agg instanceof byte[] bytes ? bytes : (byte[]) Families.call(agg, "aggregation"));
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
            byte[] agg = Families.aggregate(count + 1, value);
            String storeType = sessions.config().storeType;
            Object stored = switch (storeType) {
                case StoreTypes.SESSION -> agg;
                case StoreTypes.SESSION_WITH_HEADERS -> Families.make("AggregationWithHeaders",
                        new Class<?>[] {Object.class, Headers.class}, agg, headers);
                default -> throw StoreTypes.unknown(storeType, "SessionAggregate: the stored aggregate");
            };
            store.put(new Windowed<>(key, new SessionWindow(start, end)), stored);
        }
    }
}
