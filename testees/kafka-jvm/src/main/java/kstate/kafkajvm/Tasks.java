package kstate.kafkajvm;

import com.fasterxml.jackson.databind.JsonNode;
import kstate.storetypes.StoreTypes;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.StateStore;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

import static kstate.kafkajvm.Json.obj;
import static kstate.kafkajvm.Main.register;

/** What the task around a store does (ProcessorStateManager): its processing guarantee, the legacy
 *  {@code .checkpoint} it migrates into the stores after their init (LegacyCheckpointingStateStore
 *  .migrateLegacyOffsets), and placing the legacy task files a test starts from (store.write_task_file). store.crash is Crash's. */
final class Tasks {
    private Tasks() { }

    static void registerAll() {
        register("store.write_task_file", Tasks::writeTaskFile);
        register("store.wipe", Tasks::wipe);
    }

    /** {@code store.wipe} (UPG-3, LAY-11, LAY-15) through Kafka's own wipe, which is a task's: a task closed dirty under
     *  EOS (StateManagerUtil.closeStateManager with closeClean false, eosEnabled true) closes its state manager and
     *  deletes the whole task directory (Utils.delete(ProcessorStateManager.baseDir()), which removes a link as a
     *  link). Kafka has no wipe of one store with the task's other stores kept, so the testee expresses a store's
     *  wipe only where the task holds nothing but that store's state; a task holding other stores' state is
     *  answered unsupported, naming it, never with a different (task-wide) effect. */
    private static com.fasterxml.jackson.databind.node.ObjectNode wipe(final JsonNode in) throws Exception {
        final String name = Json.str(in, "name");
        // The store name Kafka would accept (Materialized.as -> Named.validate), the task location StateDirectory
        // names (TaskId.parse): each refused before anything is deleted (LAY-11).
        org.apache.kafka.streams.kstream.Materialized.as(name);
        if (in.has("store_type")) {
            final String type = Json.str(in, "store_type");
            try {
                StoreTypes.family(type.equals("timestamped_kv_headers") ? StoreTypes.TIMESTAMPED_KV_WITH_HEADERS : type);
            } catch (StoreTypes.UnknownStoreTypeException e) {
                throw new Json.InputError("store_type", "not a store type: " + type);
            }
        }
        final Path task = Stores.taskDir(in);
        if (!Files.exists(task, LinkOption.NOFOLLOW_LINKS)) {
            return obj();  // no task directory: Kafka's wipe has nothing to delete
        }
        if (Stores.openIn(task)) {
            throw new K.Unavailable("a store of this task is open in the testee; Kafka's wipe closes the stores its "
                + "task's state manager registered, which the testee's open stores are not");
        }
        final java.util.List<String> others = othersState(task, name);
        final String applicationId = in.has("application_id") ? Json.str(in, "application_id") : "app";
        others.addAll(othersCheckpointed(task, (String) K.call("org.apache.kafka.streams.processor.internals.ProcessorStateManager",
            "storeChangelogTopic", K.t(String.class, String.class, String.class), applicationId, name, null)));
        if (!others.isEmpty()) {
            throw new K.Unavailable("Kafka wipes a task, not a store (StateManagerUtil.closeStateManager deletes the "
                + "whole task directory): this task also holds " + String.join(", ", others) + ", which Kafka's wipe "
                + "would delete too; this release has no wipe of one store with the task's other stores kept");
        }
        final org.apache.kafka.streams.processor.TaskId taskId =
            org.apache.kafka.streams.processor.TaskId.parse(in.has("task_id") ? Json.str(in, "task_id") : "0_0");
        final Map<String, Object> props = new HashMap<>();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092");
        props.put(StreamsConfig.STATE_DIR_CONFIG, Json.str(in, "state_dir"));
        // A task's StateDirectory has persistent stores (the store being wiped is a RocksDB one).
        final org.apache.kafka.streams.processor.internals.StateDirectory directory =
            new org.apache.kafka.streams.processor.internals.StateDirectory(new StreamsConfig(props),
                org.apache.kafka.common.utils.Time.SYSTEM, true, false);
        final Object manager = stateManager(taskId, true, directory, Map.of());
        final org.slf4j.Logger logger = org.slf4j.LoggerFactory.getLogger(Tasks.class);
        final Class<?> psm = K.cls(PSM);
        final Class<?> sd = org.apache.kafka.streams.processor.internals.StateDirectory.class;
        final Class<?> taskType = org.apache.kafka.streams.processor.internals.Task.TaskType.class;
        final Object active = org.apache.kafka.streams.processor.internals.Task.TaskType.ACTIVE;
        // closeClean false, eosEnabled true: the dirty close of a corrupted task, which wipes (4.4 adds the
        // transactional-state-stores flag, off by default: the wipe is then unconditional).
        if (K44) {
            K.call(UTIL, "closeStateManager", K.t(org.slf4j.Logger.class, String.class, boolean.class, boolean.class,
                boolean.class, psm, sd, taskType), logger, "", false, true, false, manager, directory, active);
        } else {
            K.call(UTIL, "closeStateManager", K.t(org.slf4j.Logger.class, String.class, boolean.class, boolean.class,
                psm, sd, taskType), logger, "", false, true, manager, directory, active);
        }
        return obj();
    }

    private static final String PSM = "org.apache.kafka.streams.processor.internals.ProcessorStateManager";
    private static final String UTIL = "org.apache.kafka.streams.processor.internals.StateManagerUtil";
    /** 4.4 added the transactional-state-stores flag (and a Time) to ProcessorStateManager and closeStateManager. */
    private static final boolean K44 = java.util.Arrays.stream(K.cls(UTIL).getDeclaredMethods())
        .anyMatch(m -> m.getName().equals("closeStateManager") && m.getParameterCount() == 8);

    /** An active task's ProcessorStateManager, with the given store-to-changelog map and no source partitions. */
    static Object stateManager(final org.apache.kafka.streams.processor.TaskId taskId, final boolean eos,
                               final org.apache.kafka.streams.processor.internals.StateDirectory directory,
                               final Map<String, String> changelogs) {
        final Class<?> logContext = K.cls("org.apache.kafka.common.utils.LogContext");
        final Object log = K.construct(logContext.getName(), K.t());
        final Class<?> taskType = org.apache.kafka.streams.processor.internals.Task.TaskType.class;
        final Object active = org.apache.kafka.streams.processor.internals.Task.TaskType.ACTIVE;
        final Class<?> sd = org.apache.kafka.streams.processor.internals.StateDirectory.class;
        if (K44) {
            return K.construct(PSM, K.t(org.apache.kafka.streams.processor.TaskId.class, taskType, boolean.class, boolean.class,
                logContext, sd, org.apache.kafka.common.utils.Time.class, Map.class, java.util.Collection.class),
                taskId, active, eos, false, log, directory, org.apache.kafka.common.utils.Time.SYSTEM, changelogs, java.util.Set.of());
        }
        return K.construct(PSM, K.t(org.apache.kafka.streams.processor.TaskId.class, taskType, boolean.class, logContext, sd,
            Map.class, java.util.Collection.class), taskId, active, eos, log, directory, changelogs, java.util.Set.of());
    }

    /** The partitions of the task's .checkpoint (read by Kafka's OffsetCheckpoint) that are not the wiped store's
     *  changelog: offsets the task keeps for other stores (an in-memory store's live only there). A file that does
     *  not read names no other store: Kafka's wipe deletes it with the task. Not read through a link (LAY-15). */
    private static java.util.List<String> othersCheckpointed(final Path task, final String changelogTopic) {
        final Path checkpoint = task.resolve(".checkpoint");
        final java.util.List<String> others = new java.util.ArrayList<>();
        if (!Files.isRegularFile(checkpoint, LinkOption.NOFOLLOW_LINKS)) {
            return others;
        }
        try {
            for (final TopicPartition partition : new org.apache.kafka.streams.state.internals.OffsetCheckpoint(
                    checkpoint.toFile()).read().keySet()) {
                if (!partition.topic().equals(changelogTopic)) {
                    others.add(".checkpoint's offset of " + partition);
                }
            }
        } catch (java.io.IOException | RuntimeException e) {
            // unreadable: no other store is named in it
        }
        return others;
    }

    /** What the task directory holds beyond the named store's own state: its directory (rocksdb/<name>, or <name> for
     *  a segmented store), the <name>~wiping leftover of an interrupted reference wipe, its <name>.position file, and
     *  the task's .checkpoint (its offsets checked by othersCheckpointed). Read without following links (LAY-15). */
    private static java.util.List<String> othersState(final Path task, final String name) throws java.io.IOException {
        final java.util.Set<String> own = java.util.Set.of(name, name + "~wiping", name + ".position", ".checkpoint");
        final java.util.List<String> others = new java.util.ArrayList<>();
        try (java.util.stream.Stream<Path> entries = Files.list(task)) {
            for (final Path entry : (Iterable<Path>) entries.sorted()::iterator) {
                final String entryName = entry.getFileName().toString();
                if (entryName.equals("rocksdb") && Files.isDirectory(entry, LinkOption.NOFOLLOW_LINKS)) {
                    try (java.util.stream.Stream<Path> stores = Files.list(entry)) {
                        stores.map(p -> p.getFileName().toString()).sorted()
                            .filter(n -> !n.equals(name) && !n.equals(name + "~wiping"))
                            .forEach(n -> others.add("rocksdb/" + n));
                    }
                } else if (!own.contains(entryName)) {
                    others.add(entryName);
                }
            }
        }
        return others;
    }

    /** RocksDBStore.openDB passes ignoreInvalidState = !eosEnabled to the offsets family's open: a store opened with
     *  ignore_invalid_state runs in an at_least_once task, one without it in an exactly_once_v2 task. */
    static void guarantee(final StoreContext context, final boolean ignoreInvalidState) {
        context.configs.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG,
            ignoreInvalidState ? StreamsConfig.AT_LEAST_ONCE : StreamsConfig.EXACTLY_ONCE_V2);
    }

    /** As ProcessorStateManager.registerStateStores ends: the task's legacy .checkpoint is migrated into the logged
     *  stores that manage their offsets, keyed by their changelog partition, and then deleted. Kafka's task
     *  registers all its stores at once; the testee's task holds the one store being opened. A store that does
     *  not manage its offsets (in memory) is wrapped by Kafka's task in a LegacyCheckpointingStateStore, which
     *  the testee does not build, so the file is left for it untouched. */
    static void migrateLegacyOffsets(final Path stateDir, final StoreContext context, final StateStore root,
                                     final String changelogTopic) {
        if (!root.managesOffsets()) {
            return;
        }
        final Map<TopicPartition, StateStore> stores = new LinkedHashMap<>();
        if (changelogTopic != null) {
            stores.put(new TopicPartition(changelogTopic, context.taskId.partition()), root);
        }
        K.call("LegacyCheckpointingStateStore", "migrateLegacyOffsets", K.t(String.class,
            org.apache.kafka.streams.processor.internals.StateDirectory.class,
            org.apache.kafka.streams.processor.TaskId.class, Map.class),
            "", stateDirectory(stateDir, context.applicationId), context.taskId, stores);
    }

    static org.apache.kafka.streams.processor.internals.StateDirectory stateDirectory(final Path stateDir,
                                                                                      final String applicationId) {
        return stateDirectory(stateDir, applicationId, false, false);
    }

    /** Kafka's StateDirectory over {@code stateDir} for {@code applicationId}, as KafkaStreams builds it (its
     *  hasPersistentStores and hasNamedTopologies flags given): the one place the testee names task directories. */
    static org.apache.kafka.streams.processor.internals.StateDirectory stateDirectory(
            final Path stateDir, final String applicationId, final boolean persistentStores, final boolean namedTopologies) {
        final Map<String, Object> props = new HashMap<>();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092");
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        return new org.apache.kafka.streams.processor.internals.StateDirectory(new StreamsConfig(props),
            org.apache.kafka.common.utils.Time.SYSTEM, persistentStores, namedTopologies);
    }

    /** Places a legacy task file as an older release left it; what reads it afterwards is Kafka's (the task's
     *  migrateLegacyOffsets for .checkpoint, RocksDBStore.init's StoreQueryUtils.maybeMigrateExistingPositionFile
     *  for a <store>.position). LAY-15: the text goes to a new file of a random name in the task directory, then is
     *  renamed over the target, which replaces a link planted there instead of writing through it; a target that is
     *  a directory (or anything but a file or a link) is refused before anything is created. */
    private static com.fasterxml.jackson.databind.node.ObjectNode writeTaskFile(final JsonNode in) throws Exception {
        final String file = Json.str(in, "file");
        if (!(file.equals(".checkpoint") || (file.endsWith(".position") && !file.equals(".position")
                && !file.contains("/") && !file.contains("\\") && !file.contains("\0")))) {
            throw new Json.InputError("file", "not a legacy task file name: " + file + " (.checkpoint or <store>.position)");
        }
        final String text = Json.str(in, "text");
        final Path dir = Stores.taskDir(in);
        final Path target = dir.resolve(file);
        if (Files.exists(target, LinkOption.NOFOLLOW_LINKS) && !Files.isRegularFile(target, LinkOption.NOFOLLOW_LINKS)
                && !Files.isSymbolicLink(target)) {
            throw new Json.InputError("file", file + " in the task directory is not a regular file; nothing is written there");
        }
        Files.createDirectories(dir);
        final Path temporary = Files.createTempFile(dir, "." + file + ".", ".tmp");
        try {
            Files.write(temporary, text.getBytes(StandardCharsets.UTF_8), StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING, LinkOption.NOFOLLOW_LINKS);
            Files.move(temporary, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } finally {
            Files.deleteIfExists(temporary);
        }
        return obj();
    }
}
