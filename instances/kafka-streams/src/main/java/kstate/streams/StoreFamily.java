package kstate.streams;

import java.util.function.Consumer;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.state.StoreBuilder;

/**
 * What the instance knows of one store family of the table (`StoreTypes.FAMILIES`): which of its types this Kafka
 * version builds, its options (INST-26), its store and its processor (INST-12, INST-22..INST-25). Each family is a
 * class of this package named after it, each word of the name capitalized, then `Family` ({@link Families#family}):
 * a new family adds one class, and the shared files name none.
 */
interface StoreFamily {
    /** Whether this Kafka version builds `storeType`, one of the family's types (INST-2's `store_types`). */
    boolean builds(String storeType);

    /** The store of `config`, its store and processor options checked before anything is opened (INST-26). */
    ConfiguredStore configure(InstanceConfig config) throws Families.OptionError;

    /**
     * The column families the `opened` event names (INST-21): `legacy` is the one whose data means the store opens
     * in upgrade mode (LAY-7, LAY-8), "" for none the instance reports; `data` is the store's own (LAY-5).
     */
    record ColumnFamilies(String legacy, String data) {
    }

    /** One store of the family with its options checked: what the topology and the `opened` event read. */
    interface ConfiguredStore {
        /** The store, by Kafka's own suppliers and builders. */
        StoreBuilder<?> storeBuilder();

        /** The family's processor; `afterRecord` is the instance's bookkeeping after each input record. */
        ProcessorSupplier<byte[], byte[], Void, Void> processor(Consumer<ProcessorContext<Void, Void>> afterRecord);

        ColumnFamilies columnFamilies();
    }
}
