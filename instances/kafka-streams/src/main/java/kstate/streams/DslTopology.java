package kstate.streams;

import java.util.Map;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The key-value family's processor written with the DSL rather than the Processor API (INST-12, INST-27):
 * `builder.table(input, Materialized.as(store))`, so that the store's type is the one Kafka's DSL materializer picks,
 * `timestampedKeyValueStoreBuilder` by default and, with KIP-1285's `dsl.store.format=headers` (Kafka 4.4),
 * `timestampedKeyValueStoreWithHeadersBuilder` (KeyValueStoreMaterializer). Chosen by the config's `extra` entry
 * `kstate.topology = dsl`; the format is the `extra` entry `dsl.store.format`, passed to Kafka as a setting.
 */
final class DslTopology {
    /** The `extra` key that chooses the topology (INST-27): `papi` (default) or `dsl`. */
    static final String TOPOLOGY = "kstate.topology";
    static final String FORMAT = "dsl.store.format";

    private DslTopology() {
    }

    static boolean requested(InstanceConfig config) {
        return "dsl".equals(config.extra.get(TOPOLOGY));
    }

    /**
     * INST-27: the topology and, for the DSL, the store type its format makes are checked before anything opens; a
     * store type the DSL would not build is a usage error naming `store_type`, an unknown topology one naming `extra`.
     */
    static void check(InstanceConfig config) throws InstanceConfig.UsageError {
        String topology = config.extra.getOrDefault(TOPOLOGY, "papi");
        if (!topology.equals("papi") && !topology.equals("dsl")) {
            throw new InstanceConfig.UsageError("extra", TOPOLOGY + " is papi or dsl, got " + topology);
        }
        if (!topology.equals("dsl")) {
            return;
        }
        if (config.crashAt != null && config.crashAt.startsWith("after_put")) {
            // after_put is reached in the Processor API's processor; the DSL's KTableSource has no hook.
            throw new InstanceConfig.UsageError("crash_at", "after_put is not reached by the DSL topology");
        }
        String format = config.extra.getOrDefault(FORMAT, "default");
        boolean headers = format.equalsIgnoreCase("headers");
        if (!headers && !format.equalsIgnoreCase("default")) {
            throw new InstanceConfig.UsageError("extra", FORMAT + " is default or headers, got " + format);
        }
        if (headers && KeyValueFamily.headersBuilder() == null) {
            // Before 4.4 the setting is unknown to Kafka (logged and ignored): the store would silently stay
            // timestamped, so the instance refuses rather than run a store type the config did not ask for.
            throw new InstanceConfig.UsageError("extra", FORMAT + "=headers needs Kafka 4.4 (KIP-1285), this is "
                    + Main.kafkaVersion());
        }
        String built = headers ? "timestamped_kv_with_headers" : "timestamped_kv";
        if (!built.equals(config.storeType)) {
            throw new InstanceConfig.UsageError("store_type", "the DSL's table() with " + FORMAT + "=" + format
                    + " materializes " + built + ", not " + config.storeType);
        }
    }

    /** `table()` over the input, materialized under the store's name, logged, without a record cache (INST-13). */
    static Topology table(InstanceConfig config, Map<Object, Object> properties) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.table(config.inputTopic, Consumed.with(Serdes.Bytes(), Serdes.ByteArray()),
                Materialized.<Bytes, byte[], KeyValueStore<Bytes, byte[]>>as(config.storeName)
                        .withKeySerde(Serdes.Bytes()).withValueSerde(Serdes.ByteArray()).withCachingDisabled());
        java.util.Properties p = new java.util.Properties();
        p.putAll(properties);
        return builder.build(p);
    }
}
