package kstate.streams;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.streams.KafkaClientSupplier;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.processor.api.ProcessorContext;

/**
 * One instance: a `KafkaStreams` application with one sub-topology, source -> processor(store) (INST-10), whose
 * processor and store are those of the store type's family ({@link StoreFamily}), written with the Processor API
 * over stores of Kafka's own suppliers and builders, so that every store write, its change logging (INST-13),
 * restore (INST-14), commit (INST-15) and close (INST-17) are Kafka's. What this class adds is the protocol's glue:
 * the partitions of the config made the group's assignment, the events and status files, crash points and exit
 * codes.
 */
final class Instance {
    private final InstanceConfig config;
    private final Reporter reporter;
    private final String crashPoint;
    private final int crashAfter;
    private final AtomicInteger crashCount = new AtomicInteger();
    private final AtomicLong processed = new AtomicLong();
    private final AtomicLong commits = new AtomicLong();
    private final AtomicInteger sinceCommit = new AtomicInteger();
    /** Per partition, the next input offset committed for the group (INST-20's `input_next`). */
    private final Map<Integer, Long> inputNext = new LinkedHashMap<>();
    /** Per partition, what the store directory said before Kafka Streams opened it. */
    private final Map<Integer, StoreInspector.Inspection> before = new HashMap<>();
    private final Map<Integer, Long> committedBefore = new HashMap<>();
    private final Map<Integer, long[]> restoring = new HashMap<>();
    private final java.util.Set<Integer> openedReported = new java.util.HashSet<>();
    private volatile boolean running;
    /** The store of the config's family with its options (INST-26), checked in {@link #run}. */
    private StoreFamily.ConfiguredStore store;
    private final CountDownLatch done = new CountDownLatch(1);
    private final AtomicReference<Throwable> fatal = new AtomicReference<>();

    Instance(InstanceConfig config) throws IOException {
        this.config = config;
        this.reporter = new Reporter(config);
        if (config.crashAt == null) {
            crashPoint = null;
            crashAfter = 0;
        } else {
            String[] parts = config.crashAt.split(":", 2);
            crashPoint = parts[0];
            crashAfter = parts.length == 2 ? Integer.parseInt(parts[1]) : 1;
        }
        for (int p : config.partitions) {
            inputNext.put(p, null);
        }
    }

    // --- crash points (INST-7) ----------------------------------------------------------------------------------

    void reach(String point) {
        if (!point.equals(crashPoint)) {
            return;
        }
        int count = crashCount.incrementAndGet();
        if (count >= crashAfter) {
            reporter.event("crash", Map.of("point", point, "count", count));
            try {
                // SIGKILL, as the protocol says: no shutdown hook, no close, no flush.
                new ProcessBuilder("kill", "-KILL", Long.toString(reporter.pid())).inheritIO().start().waitFor();
                Thread.sleep(10_000);
            } catch (IOException | InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            Runtime.getRuntime().halt(137);
        }
    }

    // --- the application ----------------------------------------------------------------------------------------

    /** After each input record, whatever the family: the count, a commit request, the `after_put` crash point. */
    private void afterRecord(ProcessorContext<Void, Void> context) {
        processed.incrementAndGet();
        // commit_every_records: Kafka Streams commits by time only; a processor may ask for one more (INST-15).
        if (sinceCommit.incrementAndGet() >= config.commitEveryRecords) {
            sinceCommit.set(0);
            context.commit();
        }
        reach("after_put");
    }

    private Topology topology() {
        if (DslTopology.requested(config)) {
            return DslTopology.table(config, properties());
        }
        Topology topology = new Topology();
        topology.addSource("source", new ByteArrayDeserializer(), new ByteArrayDeserializer(), config.inputTopic);
        topology.addProcessor("processor", store.processor(this::afterRecord), "source");
        topology.addStateStore(store.storeBuilder(), "processor");
        return topology;
    }

    private Properties properties() {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, config.applicationId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, config.bootstrap);
        p.put(StreamsConfig.STATE_DIR_CONFIG, config.stateDir);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, config.commitIntervalMs);
        p.put(StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, 0);
        // Every write reaches the store and the changelog at once (INST-13): no record cache.
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.TASK_ASSIGNOR_CLASS_CONFIG, ConfiguredPartitionsAssignor.class.getName());
        p.put(StreamsConfig.CLIENT_TAG_PREFIX + ConfiguredPartitionsAssignor.TAG,
                ConfiguredPartitionsAssignor.encode(config.partitions));
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        // Kafka 4.4 clients send the cluster and node ids in ApiVersions v5 (metadata.cluster.check.enable); Tansu
        // 0.6 misreads that request and drops the connection, so no coordinator is ever reached. Older clients
        // ignore the setting; a real broker only loses the misrouted-connection check.
        p.put("metadata.cluster.check.enable", false);
        // Group joins on Tansu take session.timeout.ms / 2 (runtime notes): a short session keeps starts quick.
        p.put(StreamsConfig.mainConsumerPrefix("session.timeout.ms"), 2000);
        p.put(StreamsConfig.mainConsumerPrefix("heartbeat.interval.ms"), 500);
        p.put(StreamsConfig.mainConsumerPrefix("auto.offset.reset"), "earliest");
        // restore_batch_size: a restore batch is one poll of the restore consumer (INST-14, RST-3).
        p.put(StreamsConfig.restoreConsumerPrefix("max.poll.records"), config.restoreBatchSize);
        p.put(StreamsConfig.producerPrefix("acks"), "all");
        p.put(StreamsConfig.producerPrefix("enable.idempotence"), true);
        p.put(StreamsConfig.producerPrefix("linger.ms"), 0);
        // One changelog record per produce batch: Tansu 0.6 answers ListOffsets(latest) with the base offset of the
        // last batch + 1 (runtime notes), and Kafka Streams' restore stops at that end offset (StoreChangelogReader
        // asks the Admin client), so a multi-record last batch would be cut short. A real broker loses only speed.
        p.put(StreamsConfig.producerPrefix("batch.size"), 0);
        p.putAll(config.extra); // free-form settings of this implementation (INST-5)
        p.remove(DslTopology.TOPOLOGY); // the instance's own choice (INST-27), not a Kafka setting
        return p;
    }

    /** The default clients, with the producer's flush and the consumer's commit as crash points and status. */
    private final class Clients implements KafkaClientSupplier {
        @Override
        public Admin getAdmin(Map<String, Object> cfg) {
            return Admin.create(cfg);
        }

        @Override
        public Producer<byte[], byte[]> getProducer(Map<String, Object> cfg) {
            return new KafkaProducer<>(cfg, new ByteArraySerializer(), new ByteArraySerializer()) {
                /** Under exactly_once_v2 the input offsets go with the transaction, not the consumer's commit. */
                private Map<TopicPartition, OffsetAndMetadata> inTransaction;

                @Override
                public void flush() {
                    super.flush();
                    reach("after_producer_flush");
                }

                @Override
                public void sendOffsetsToTransaction(Map<TopicPartition, OffsetAndMetadata> offsets,
                                                     org.apache.kafka.clients.consumer.ConsumerGroupMetadata group) {
                    super.sendOffsetsToTransaction(offsets, group);
                    inTransaction = offsets;
                }

                @Override
                public void commitTransaction() {
                    super.commitTransaction();
                    if (inTransaction != null) { // INST-20: the status follows the offsets the transaction committed
                        Map<TopicPartition, OffsetAndMetadata> offsets = inTransaction;
                        inTransaction = null;
                        onCommitted(offsets);
                    }
                }

                @Override
                public void abortTransaction() {
                    super.abortTransaction();
                    inTransaction = null;
                }
            };
        }

        @Override
        public Consumer<byte[], byte[]> getConsumer(Map<String, Object> cfg) {
            return new KafkaConsumer<>(cfg, new ByteArrayDeserializer(), new ByteArrayDeserializer()) {
                @Override
                public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets) {
                    super.commitSync(offsets);
                    onCommitted(offsets);
                }

                @Override
                public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets, Duration timeout) {
                    super.commitSync(offsets, timeout);
                    onCommitted(offsets);
                }
            };
        }

        @Override
        public Consumer<byte[], byte[]> getRestoreConsumer(Map<String, Object> cfg) {
            return new KafkaConsumer<>(cfg, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        }

        @Override
        public Consumer<byte[], byte[]> getGlobalConsumer(Map<String, Object> cfg) {
            return new KafkaConsumer<>(cfg, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        }
    }

    private void onCommitted(Map<TopicPartition, OffsetAndMetadata> offsets) {
        synchronized (inputNext) {
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
                if (e.getKey().topic().equals(config.inputTopic) && inputNext.containsKey(e.getKey().partition())) {
                    inputNext.put(e.getKey().partition(), e.getValue().offset());
                }
            }
        }
        commits.incrementAndGet();
        reach("after_consumer_commit");
        // INST-20: rewritten after every commit (the consumer's commit is the last step Kafka's API lets us see).
        if (running) {
            writeStatus("running");
        }
    }

    private Map<String, Long> inputNextJson() {
        Map<String, Long> out = new LinkedHashMap<>();
        synchronized (inputNext) {
            inputNext.forEach((p, o) -> out.put(Integer.toString(p), o));
        }
        return out;
    }

    private void writeStatus(String state) {
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("state", state);
        s.put("input_next", inputNextJson());
        s.put("commits", commits.get());
        s.put("processed", processed.get());
        s.put("store_type", config.storeType);
        reporter.status(s);
    }

    // --- opening and restoring: what Kafka Streams tells through its restore listener --------------------------

    private Path taskDir(int p) {
        return Path.of(config.stateDir, config.applicationId, "0_" + p);
    }

    private Path storeDir(int p) {
        return taskDir(p).resolve("rocksdb").resolve(config.storeName);
    }

    /** The family whose data means a store opened in upgrade mode (LAY-7, LAY-8), for the `opened` event. */
    private String legacyFamily() {
        return store.columnFamilies().legacy();
    }

    /** The type's own data family (LAY-5). */
    private String dataFamily() {
        return store.columnFamilies().data();
    }

    /** Before Kafka opens anything: unclean shutdowns (KV-52) by the config's policy (INST-16). */
    private void inspectStores() throws Exception {
        for (int p : config.partitions) {
            String key = config.changelogTopic() + "-" + p;
            StoreInspector.Inspection inspection = StoreInspector.inspect(storeDir(p), key, legacyFamily());
            Long committed = inspection == null ? null : inspection.committedOffset();
            if (committed == null) {
                // Before 4.3 the offset lives in the task's .checkpoint; 4.3+ migrates it into the store on open
                // (OFF-19), so a store written by 4.2 opens at that offset.
                committed = StoreInspector.checkpointOffset(taskDir(p), config.changelogTopic(), p);
            }
            if (inspection != null && inspection.open()) {
                reporter.event("unclean_shutdown", Map.of("partition", p, "policy", config.onUncleanShutdown,
                        "error", "the store's status is OPEN: it was not closed cleanly (KV-52, OFF-6)"));
                if (config.onUncleanShutdown.equals("wipe")) {
                    // As Kafka's StateManagerUtil.wipeStateStores does under exactly-once: the task directory goes.
                    deleteTree(taskDir(p));
                    reporter.event("wiped", Map.of("partition", p));
                    inspection = null;
                    committed = null;
                }
            }
            before.put(p, inspection);
            committedBefore.put(p, committed);
        }
    }

    /**
     * The group's committed input offsets before this run (INST-20's `input_next` from the start): Kafka Streams
     * commits only when it processed something, so an instance with nothing new to read would otherwise never say
     * where its input stands.
     */
    private void readCommittedInput() throws Exception {
        Map<String, Object> cfg = new HashMap<>();
        cfg.put("bootstrap.servers", config.bootstrap);
        cfg.put("metadata.cluster.check.enable", false); // see properties()
        try (Admin admin = Admin.create(cfg)) {
            Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(config.applicationId)
                    .partitionsToOffsetAndMetadata().get(30, java.util.concurrent.TimeUnit.SECONDS);
            synchronized (inputNext) {
                offsets.forEach((tp, o) -> {
                    if (o != null && tp.topic().equals(config.inputTopic) && inputNext.containsKey(tp.partition())) {
                        inputNext.put(tp.partition(), o.offset());
                    }
                });
            }
        }
    }

    private static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(path);
            }
        }
    }

    private synchronized void opened(int p) {
        if (!config.partitions.contains(p) || !openedReported.add(p)) {
            return;
        }
        StoreInspector.Inspection inspection = before.get(p);
        boolean upgrade = inspection != null && inspection.legacyDataPresent();
        // The families the store reads in its mode, as the reference names them: Kafka opens a timestamped store
        // in upgrade mode when its legacy family holds data (LAY-7, LAY-8), reading both, else its own family.
        List<String> families = upgrade ? List.of(legacyFamily(), dataFamily()) : List.of(dataFamily());
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("partition", p);
        e.put("store_type", config.storeType);
        e.put("mode", upgrade ? "upgrade" : "regular");
        e.put("column_families", families);
        e.put("segment_modes", Map.of());
        e.put("committed_changelog_offset", committedBefore.get(p));
        reporter.event("opened", e);
    }

    private final class RestoreListener implements StateRestoreListener {
        @Override
        public void onRestoreStart(TopicPartition tp, String store, long start, long end) {
            opened(tp.partition());
            synchronized (Instance.this) {
                restoring.put(tp.partition(), new long[] {start, 0, 0, -1}); // start, records, batches, last
            }
        }

        @Override
        public void onBatchRestored(TopicPartition tp, String store, long batchEnd, long n) {
            synchronized (Instance.this) {
                long[] r = restoring.get(tp.partition());
                if (r != null) {
                    r[1] += n;
                    r[2] += 1;
                    r[3] = batchEnd;
                }
            }
            reach("after_restore_batch");
        }

        @Override
        public void onRestoreEnd(TopicPartition tp, String store, long total) {
            restored(tp.partition());
        }
    }

    private synchronized void restored(int p) {
        long[] r = restoring.remove(p);
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("partition", p);
        e.put("records", r == null ? 0 : r[1]);
        e.put("batches", r == null ? 0 : r[2]);
        // The listener tells where the restore started; without compaction that is the first record read.
        e.put("first_offset", r == null || r[1] == 0 ? null : r[0]);
        e.put("last_offset", r == null || r[1] == 0 ? null : r[3]);
        reporter.event("restored", e);
    }

    /** At RUNNING: stores Kafka found nothing to restore for get their `opened` and `restored` events here. */
    private void becameRunning(KafkaStreams streams) {
        java.util.Set<Integer> active = new java.util.HashSet<>();
        for (ThreadMetadata thread : streams.metadataForLocalThreads()) {
            for (TaskMetadata task : thread.activeTasks()) {
                active.add(task.taskId().partition());
            }
        }
        synchronized (this) {
            for (int p : active) {
                if (config.partitions.contains(p) && !openedReported.contains(p)) {
                    opened(p);
                    restored(p);
                }
            }
        }
        if (!running) {
            running = true;
            writeStatus("running");
            reporter.event("running", Map.of("input_next", inputNextJson(), "assigned", active));
        }
    }

    // --- the life of the instance -------------------------------------------------------------------------------

    int run() throws Exception {
        reporter.event("starting", Map.of("store_type", config.storeType, "partitions", config.partitions));
        try {
            store = Families.of(config.storeType).configure(config);
        } catch (Families.OptionError e) {
            System.err.println("kstate-streams: " + e.getMessage());
            reporter.event("exit", Map.of("code", Main.EXIT_USAGE, "reason", e.getMessage()));
            return Main.EXIT_USAGE;
        }
        inspectStores();
        readCommittedInput();
        KafkaStreams streams = new KafkaStreams(topology(), properties(), new Clients());
        streams.setGlobalStateRestoreListener(new RestoreListener());
        streams.setUncaughtExceptionHandler(exception -> {
            fatal.compareAndSet(null, exception);
            done.countDown();
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.setStateListener((now, old) -> {
            if (now == KafkaStreams.State.RUNNING) {
                // Not on the stream thread's call stack: metadata is read from another thread.
                new Thread(() -> becameRunning(streams), "kstate-running").start();
            } else if (now == KafkaStreams.State.ERROR) {
                done.countDown();
            }
        });
        sun.misc.Signal.handle(new sun.misc.Signal("TERM"), signal -> done.countDown());
        sun.misc.Signal.handle(new sun.misc.Signal("INT"), signal -> done.countDown());
        try {
            streams.start();
        } catch (RuntimeException e) {
            // Kafka 4.3+ opens the stores of existing task directories in start() (StateDirectory
            // .initializeStartupStores): a store it refuses surfaces here, not on a stream thread (INST-28).
            fatal.compareAndSet(null, e);
            done.countDown();
        }
        done.await();
        Throwable error = fatal.get();
        // INST-17: Kafka's clean close commits, closes every store (status CLOSED) and leaves the group.
        boolean closed = streams.close(new KafkaStreams.CloseOptions().leaveGroup(true).timeout(Duration.ofSeconds(30)));
        if (error != null || !closed || streams.state() == KafkaStreams.State.ERROR) {
            String reason = error != null ? String.valueOf(rootCause(error)) : "Kafka Streams did not close cleanly";
            reporter.event("fatal", Map.of("reason", reason));
            reporter.event("exit", Map.of("code", Main.EXIT_FATAL, "reason", reason));
            return Main.EXIT_FATAL;
        }
        writeStatus("stopped");
        reporter.event("stopped", Map.of("commits", commits.get(), "processed", processed.get()));
        return 0;
    }

    private static Throwable rootCause(Throwable t) {
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t;
    }
}
