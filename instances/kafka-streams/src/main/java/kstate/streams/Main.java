package kstate.streams;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * The Kafka Streams instance of the instance protocol (spec/instance-protocol.md): `java -jar ... CONFIG.json`, or
 * `--describe` (INST-1, INST-2). The application is a real `KafkaStreams` of the Kafka version it was built for; see
 * {@link Instance}.
 */
public final class Main {
    static final int EXIT_FATAL = 2;
    static final int EXIT_USAGE = 64;
    static final String IMPLEMENTATION = "kafka-streams";
    /** The events this instance writes (INST-21); `refused` is not among them (see the spec's Kafka Streams notes). */
    static final List<String> EVENTS = List.of("starting", "opened", "restored", "running", "unclean_shutdown", "wiped",
            "crash", "fatal", "exit", "stopped");
    /**
     * The crash points it implements (INST-7): a processor, the restore listener, and the producer's and consumer's
     * own calls (wrapped through a KafkaClientSupplier). `after_store_commit` has no hook in Kafka Streams' API.
     */
    static final List<String> CRASH_POINTS = List.of("after_put", "after_producer_flush", "after_consumer_commit",
            "after_restore_batch");

    private Main() {
    }

    /** The Kafka version this jar was built against (written into the jar by the build). */
    static String kafkaVersion() {
        try (InputStream in = Main.class.getResourceAsStream("/kstate/streams/build.properties")) {
            Properties p = new Properties();
            if (in != null) {
                p.load(in);
            }
            return p.getProperty("kafka.version", "unknown");
        } catch (IOException e) {
            return "unknown";
        }
    }

    /** KIP-1035 (store-managed offsets, OFF-*) is in Kafka 4.3 and later: `StateStore.commit(Map)` exists there. */
    static boolean managesOffsets() {
        try {
            org.apache.kafka.streams.processor.StateStore.class.getMethod("commit", Map.class);
            return true;
        } catch (NoSuchMethodException e) {
            return false;
        }
    }

    /** The store types this Kafka version builds, every family's (INST-2). */
    static List<String> storeTypes() {
        return Families.storeTypes();
    }

    static Map<String, Object> describe() {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("instance_protocol", 1);
        d.put("implementation", IMPLEMENTATION);
        d.put("version", "kafka-streams " + kafkaVersion());
        d.put("store_types", storeTypes());
        d.put("crash_points", CRASH_POINTS);
        d.put("events", EVENTS);
        // The protocol's options for what Kafka Streams does differently (spec/instance-protocol.md, INST-2):
        // the group assigns the partitions (INST-10), and a restore ends at ListOffsets(latest) (INST-14).
        d.put("partition_assignment", "group");
        d.put("restore_end_offset", "list_offsets");
        // A store Kafka refuses ends the client with `fatal`, never wiped (INST-16, INST-28); the DSL's table() is
        // the second topology of the key-value family (INST-27).
        d.put("refused_store", "fatal");
        d.put("topologies", List.of("papi", "dsl"));
        return d;
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 1 && args[0].equals("--describe")) {
            System.out.println(new ObjectMapper().writeValueAsString(describe()));
            System.exit(0);
        }
        if (args.length != 1 || args[0].startsWith("-")) {
            System.err.println("usage: kstate-streams-instance CONFIG.json | --describe");
            System.exit(EXIT_USAGE);
        }
        InstanceConfig config;
        try {
            config = InstanceConfig.read(Path.of(args[0]));
            check(config);
        } catch (InstanceConfig.UsageError e) {
            System.err.println("kstate-streams: " + e.getMessage());
            System.exit(EXIT_USAGE);
            return;
        }
        System.exit(new Instance(config).run());
    }

    /** What this instance cannot run is refused before anything is opened (INST-3, INST-6, INST-26). */
    static void check(InstanceConfig c) throws InstanceConfig.UsageError {
        if (!storeTypes().contains(c.storeType)) {
            throw new InstanceConfig.UsageError("store_type", "this instance (Kafka Streams " + kafkaVersion()
                    + ") runs " + String.join(", ", storeTypes()) + ", not " + c.storeType);
        }
        if (c.crashAt != null) {
            String point = c.crashAt.split(":", 2)[0];
            if (!CRASH_POINTS.contains(point)) {
                throw new InstanceConfig.UsageError("crash_at", "crash point " + point + " is not implemented; one of "
                        + String.join(", ", CRASH_POINTS));
            }
            String[] parts = c.crashAt.split(":", 2);
            if (parts.length == 2 && !parts[1].matches("[1-9][0-9]*")) {
                throw new InstanceConfig.UsageError("crash_at", "expected <point>:<n>, got " + c.crashAt);
            }
        }
        DslTopology.check(c);
        if (c.manageOffsets != managesOffsets()) {
            // The Kafka version decides, not a setting: 4.3+ always keeps offsets in the store, 4.2 never does.
            throw new InstanceConfig.UsageError("manage_offsets", "Kafka Streams " + kafkaVersion()
                    + (managesOffsets() ? " always keeps" : " cannot keep") + " offsets in the store (KIP-1035)");
        }
        for (int p : c.partitions) {
            if (p >= ConfiguredPartitionsAssignor.MAX_PARTITIONS) {
                throw new InstanceConfig.UsageError("partitions", "at most partition "
                        + (ConfiguredPartitionsAssignor.MAX_PARTITIONS - 1) + " (one client tag holds the set)");
            }
        }
        if (c.commitEveryRecords < 1 || c.commitIntervalMs < 0 || c.restoreBatchSize < 1) {
            throw new InstanceConfig.UsageError(c.commitEveryRecords < 1 ? "commit_every_records"
                    : c.commitIntervalMs < 0 ? "commit_interval_ms" : "restore_batch_size", "must be positive");
        }
    }
}
