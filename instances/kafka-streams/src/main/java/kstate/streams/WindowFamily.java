package kstate.streams;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import kstate.storetypes.StoreTypes;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.WindowBytesStoreSupplier;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.internals.RocksDbWindowBytesStoreSupplier;

/**
 * The window family: `KStreamWindowAggregate` over tumbling windows (INST-23) on a store of Kafka's own suppliers
 * and builders, its options (INST-26). The header-aware type (KIP-1271) is reached by reflection.
 */
final class WindowFamily implements StoreFamily {
    private static final String HEADERS_BUILDER = "timestampedWindowStoreWithHeadersBuilder";

    /** `time_ordered_window_with_headers` is only a column-family layout (LAY-*): the instance builds no store of it. */
    @Override
    public boolean builds(String storeType) {
        return switch (storeType) {
            case StoreTypes.WINDOW, StoreTypes.TIMESTAMPED_WINDOW -> true;
            case StoreTypes.TIMESTAMPED_WINDOW_WITH_HEADERS -> Families.storesMethod(HEADERS_BUILDER) != null;
            case StoreTypes.TIME_ORDERED_WINDOW_WITH_HEADERS -> false;
            default -> throw StoreTypes.unknown(storeType, "WindowFamily.builds");
        };
    }

    @Override
    public ConfiguredStore configure(InstanceConfig config) throws Families.OptionError {
        Map<String, JsonNode> store = config.storeOptionValues;
        Map<String, JsonNode> proc = config.processorOptionValues;
        Families.known(store, Set.of("retention_ms", "window_size_ms", "retain_duplicates", "segment_interval_ms"));
        Families.known(proc, Set.of("grace_ms"));
        long retention = Families.required(store, "retention_ms");
        long size = Families.required(store, "window_size_ms");
        if (size < 1) {
            throw new Families.OptionError("window_size_ms", "a tumbling window is at least 1 ms long");
        }
        JsonNode dup = store.get("retain_duplicates");
        if (dup != null && !dup.isBoolean()) {
            throw new Families.OptionError("retain_duplicates", "expected a bool, got " + dup);
        }
        Long graceGiven = Families.optional(proc, "grace_ms");
        long grace = graceGiven == null ? retention - size : graceGiven;
        if (size + grace > retention) {
            throw new Families.OptionError("grace_ms", "window size + grace exceeds the store's retention " + retention);
        }
        return new Windows(config, retention, size, Families.optional(store, "segment_interval_ms"),
                dup != null && dup.booleanValue(), grace);
    }

    /** A window store of `config` with its options; `segmentInterval` null for Kafka's default. */
    private record Windows(InstanceConfig config, long retention, long windowSize, Long segmentInterval,
                           boolean retainDuplicates, long grace) implements ConfiguredStore {
        @Override
        public StoreBuilder<?> storeBuilder() {
            try {
                switch (config.storeType) {
                    case StoreTypes.WINDOW:
                        return Stores.windowStoreBuilder(supplier("DEFAULT_WINDOW_STORE"), Serdes.Bytes(),
                                Serdes.ByteArray());
                    case StoreTypes.TIMESTAMPED_WINDOW:
                        return Stores.timestampedWindowStoreBuilder(supplier("TIMESTAMPED_WINDOW_STORE"),
                                Serdes.Bytes(), Serdes.ByteArray());
                    case StoreTypes.TIMESTAMPED_WINDOW_WITH_HEADERS:
                        return (StoreBuilder<?>) Families.storesMethod(HEADERS_BUILDER).invoke(null,
                                supplier("TIMESTAMPED_WINDOW_STORE_WITH_HEADERS"), Serdes.Bytes(), Serdes.ByteArray());
                    default:
                        throw StoreTypes.unknown(config.storeType, "WindowFamily.storeBuilder");
                }
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("no builder for " + config.storeType + " in this Kafka version", e);
            }
        }

        /**
         * Kafka's RocksDB window supplier with the config's segment interval: `Stores.persistentWindowStore` fixes it
         * at max(retention / 2, 60 s) (WS-*), and the kit's stores name their segments by the interval they are given.
         */
        private WindowBytesStoreSupplier supplier(String kind) throws ReflectiveOperationException {
            String name = config.storeName;
            long segment = segmentInterval != null ? segmentInterval : Math.max(retention / 2, 60_000L);
            if (kind.equals("TIMESTAMPED_WINDOW_STORE_WITH_HEADERS")) {
                Class<?> cls = Class.forName(Families.STATE + "internals.RocksDbWindowHeadersBytesStoreSupplier");
                return (WindowBytesStoreSupplier) cls.getConstructor(String.class, long.class, long.class, long.class,
                        boolean.class).newInstance(name, retention, segment, windowSize, retainDuplicates);
            }
            return new RocksDbWindowBytesStoreSupplier(name, retention, segment, windowSize, retainDuplicates,
                    RocksDbWindowBytesStoreSupplier.WindowStoreTypes.valueOf(kind));
        }

        @Override
        public ProcessorSupplier<byte[], byte[], Void, Void> processor(
                Consumer<ProcessorContext<Void, Void>> afterRecord) {
            return () -> new WindowAggregate(this, afterRecord);
        }

        /** As the instance has always named them: its segments are not inspected, so no upgrade mode is reported. */
        @Override
        public ColumnFamilies columnFamilies() {
            return new ColumnFamilies("", "default");
        }
    }

    /** INST-23: `KStreamWindowAggregate` over tumbling windows; stream time is the processor's, not persisted. */
    private static final class WindowAggregate extends Families.Aggregate<WindowStore<Bytes, Object>> {
        private final Windows windows;

        WindowAggregate(Windows windows, Consumer<ProcessorContext<Void, Void>> afterRecord) {
            super(windows.config().storeName, afterRecord);
            this.windows = windows;
        }

        @Override
        void apply(Bytes key, byte[] value, long ts, Headers headers) {
            long size = windows.windowSize();
            long windowStart = ts - ts % size;
            if (windowStart + size <= observedStreamTime - windows.grace()) {
                return; // the window is closed: dropped, nothing read or written
            }
            Object old = store.fetch(key, windowStart);
            long count = 0;
            long timestamp = ts;
            if (old != null) {
                byte[] oldValue = old instanceof byte[] bytes ? bytes : (byte[]) Families.call(old, "value");
                count = Families.count(oldValue);
                if (!(old instanceof byte[])) {
                    timestamp = Math.max((Long) Families.call(old, "timestamp"), ts);
                }
            }
            byte[] agg = Families.aggregate(count + 1, value);
            String storeType = windows.config().storeType;
            Object stored = switch (storeType) {
                case StoreTypes.WINDOW -> agg;
                case StoreTypes.TIMESTAMPED_WINDOW -> ValueAndTimestamp.make(agg, timestamp);
                case StoreTypes.TIMESTAMPED_WINDOW_WITH_HEADERS -> Families.make("ValueTimestampHeaders",
                        new Class<?>[] {Object.class, long.class, Headers.class}, agg, timestamp, headers);
                default -> throw StoreTypes.unknown(storeType, "WindowAggregate: the stored aggregate");
            };
            store.put(key, stored, windowStart);
        }
    }
}
