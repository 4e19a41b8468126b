package kstate.kafkajvm;

import com.fasterxml.jackson.databind.JsonNode;
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
        register("store.wipe", in -> {
            throw new K.Unavailable("Kafka wipes a task, not a store: StateManagerUtil.closeStateManager(wipeStateStore) "
                + "deletes the whole task directory (Utils.delete(ProcessorStateManager.baseDir())); this release has no "
                + "per-store wipe of a store's directory and <store>.position file");
        });
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
        final Map<String, Object> props = new HashMap<>();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092");
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        return new org.apache.kafka.streams.processor.internals.StateDirectory(new StreamsConfig(props),
            org.apache.kafka.common.utils.Time.SYSTEM, false, false);
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
