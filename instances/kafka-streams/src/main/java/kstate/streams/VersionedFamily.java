package kstate.streams;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import kstate.storetypes.StoreTypes;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.VersionedBytesStoreSupplier;
import org.apache.kafka.streams.state.VersionedKeyValueStore;

/** The versioned family: `table()` over a versioned store of Kafka's `Stores` (INST-22), its options (INST-26). */
final class VersionedFamily implements StoreFamily {
    /**
     * `versioned_kv_with_headers` is never built: no Kafka version up to 4.4.0 has a header-aware versioned store
     * builder in `Stores` (VS-*, HV-11).
     */
    @Override
    public boolean builds(String storeType) {
        return switch (storeType) {
            case StoreTypes.VERSIONED_KV -> true;
            case StoreTypes.VERSIONED_KV_WITH_HEADERS -> false;
            default -> throw StoreTypes.unknown(storeType, "VersionedFamily.builds");
        };
    }

    @Override
    public ConfiguredStore configure(InstanceConfig config) throws Families.OptionError {
        Map<String, JsonNode> store = config.storeOptionValues;
        Families.known(store, Set.of("history_retention_ms", "segment_interval_ms"));
        Families.known(config.processorOptionValues, Set.of());
        return new Versioned(config, Families.required(store, "history_retention_ms"),
                Families.optional(store, "segment_interval_ms"));
    }

    /** A versioned store of `config`; `segmentInterval` null for Kafka's default. */
    private record Versioned(InstanceConfig config, long historyRetention, Long segmentInterval)
            implements ConfiguredStore {
        @Override
        public StoreBuilder<?> storeBuilder() {
            String name = config.storeName;
            switch (config.storeType) {
                case StoreTypes.VERSIONED_KV: {
                    VersionedBytesStoreSupplier s = segmentInterval == null
                            ? Stores.persistentVersionedKeyValueStore(name, Duration.ofMillis(historyRetention))
                            : Stores.persistentVersionedKeyValueStore(name, Duration.ofMillis(historyRetention),
                                    Duration.ofMillis(segmentInterval));
                    return Stores.versionedKeyValueStoreBuilder(s, Serdes.Bytes(), Serdes.ByteArray());
                }
                default:
                    throw StoreTypes.unknown(config.storeType, "VersionedFamily.storeBuilder");
            }
        }

        @Override
        public ProcessorSupplier<byte[], byte[], Void, Void> processor(
                Consumer<ProcessorContext<Void, Void>> afterRecord) {
            return () -> new VersionedTable(config.storeName, afterRecord);
        }

        @Override
        public ColumnFamilies columnFamilies() {
            return Families.tableColumnFamilies(config.storeType);
        }
    }

    /** INST-22: `table()` over a versioned store, every record a version at its timestamp, null a tombstone. */
    private static final class VersionedTable extends Families.StoreProcessor<VersionedKeyValueStore<Bytes, byte[]>> {
        VersionedTable(String storeName, Consumer<ProcessorContext<Void, Void>> afterRecord) {
            super(storeName, afterRecord);
        }

        @Override
        void accept(Record<byte[], byte[]> record) {
            store.put(Bytes.wrap(record.key()), record.value(), record.timestamp());
        }
    }
}
