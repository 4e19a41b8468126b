package kstate.streams;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import kstate.storetypes.StoreTypes;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.ValueAndTimestamp;

/**
 * The key-value family: `table()` (INST-12) written with the Processor API over a store of Kafka's own `Stores`
 * builders, through Kafka's change-logging layer (INST-13). It takes no store or processor option (INST-26). Its
 * DSL topology is {@link DslTopology} (INST-27).
 */
final class KeyValueFamily implements StoreFamily {
    /** The KIP-1271 header-aware key-value builder, where this Kafka version has it (4.3 and later). */
    static Method headersBuilder() {
        try {
            return Stores.class.getMethod("timestampedKeyValueStoreWithHeadersBuilder", KeyValueBytesStoreSupplier.class,
                    Serde.class, Serde.class);
        } catch (NoSuchMethodException e) {
            return null;
        }
    }

    @Override
    public boolean builds(String storeType) {
        return switch (storeType) {
            case StoreTypes.KEY_VALUE, StoreTypes.TIMESTAMPED_KV -> true;
            case StoreTypes.TIMESTAMPED_KV_WITH_HEADERS -> headersBuilder() != null;
            default -> throw StoreTypes.unknown(storeType, "KeyValueFamily.builds");
        };
    }

    @Override
    public ConfiguredStore configure(InstanceConfig config) throws Families.OptionError {
        List<String> options = new ArrayList<>(config.processorOptions);
        options.addAll(config.storeOptions);
        if (!options.isEmpty()) {
            throw new Families.OptionError("the key-value family takes no store or processor option, got " + options);
        }
        return new Table(config);
    }

    /** A key-value store of `config` and its `table()`. */
    private static final class Table implements ConfiguredStore {
        private final InstanceConfig config;

        Table(InstanceConfig config) {
            this.config = config;
        }

        @Override
        public StoreBuilder<?> storeBuilder() {
            String name = config.storeName;
            switch (config.storeType) {
                case StoreTypes.KEY_VALUE:
                    return Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(name), Serdes.Bytes(),
                            Serdes.ByteArray());
                case StoreTypes.TIMESTAMPED_KV:
                    return Stores.timestampedKeyValueStoreBuilder(Stores.persistentTimestampedKeyValueStore(name),
                            Serdes.Bytes(), Serdes.ByteArray());
                case StoreTypes.TIMESTAMPED_KV_WITH_HEADERS:
                    try {
                        // Reflection: the same source builds against 4.2, which has no KIP-1271 builders.
                        Method supplier = Stores.class.getMethod("persistentTimestampedKeyValueStoreWithHeaders",
                                String.class);
                        return (StoreBuilder<?>) headersBuilder().invoke(null, supplier.invoke(null, name),
                                Serdes.Bytes(), Serdes.ByteArray());
                    } catch (ReflectiveOperationException e) {
                        throw new IllegalStateException("no KIP-1271 key-value builder in this Kafka version", e);
                    }
                default:
                    throw StoreTypes.unknown(config.storeType, "KeyValueFamily.storeBuilder");
            }
        }

        /** The value a `table()` puts for a record, in the store type's typed form (INST-12). */
        private Object typedValue(Record<byte[], byte[]> record) {
            switch (config.storeType) {
                case StoreTypes.KEY_VALUE:
                    return record.value();
                case StoreTypes.TIMESTAMPED_KV:
                    return ValueAndTimestamp.make(record.value(), record.timestamp());
                case StoreTypes.TIMESTAMPED_KV_WITH_HEADERS:
                    return Families.make("ValueTimestampHeaders", new Class<?>[] {Object.class, long.class,
                            Headers.class}, record.value(), record.timestamp(), record.headers());
                default:
                    throw StoreTypes.unknown(config.storeType, "KeyValueFamily.typedValue");
            }
        }

        @Override
        public ProcessorSupplier<byte[], byte[], Void, Void> processor(
                Consumer<ProcessorContext<Void, Void>> afterRecord) {
            return () -> new TableProcessor(afterRecord);
        }

        @Override
        public ColumnFamilies columnFamilies() {
            return Families.tableColumnFamilies(config.storeType);
        }

        /** `table()` (INST-12): a put of the record's typed value, a null value a delete. */
        private final class TableProcessor extends Families.StoreProcessor<KeyValueStore<Bytes, Object>> {
            TableProcessor(Consumer<ProcessorContext<Void, Void>> afterRecord) {
                super(config.storeName, afterRecord);
            }

            @Override
            void accept(Record<byte[], byte[]> record) {
                Bytes key = Bytes.wrap(record.key());
                if (record.value() == null) {
                    store.delete(key);
                } else {
                    store.put(key, typedValue(record));
                }
            }
        }
    }
}
