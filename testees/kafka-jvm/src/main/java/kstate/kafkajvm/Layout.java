package kstate.kafkajvm;

import com.fasterxml.jackson.databind.node.NullNode;
import org.apache.kafka.streams.processor.TaskId;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Pattern;

import static kstate.kafkajvm.Json.obj;
import static kstate.kafkajvm.Main.register;

/** Task directories (LAY-1) as Kafka's StateDirectory names and lists them: its TASK_DIR_PATH_NAME pattern and
 *  TaskId.parse for a directory name, getOrCreateDirectoryForTask for a task (which creates nothing in a
 *  StateDirectory without persistent stores). TASK_DIR_PATH_NAME is private: reflection. */
final class Layout {
    private Layout() { }

    /** A KeyValueSegments of the store, as a segmented store builds one (retention does not enter the names). */
    private static Object segments(final String storeName, final long interval) {
        return K.construct("KeyValueSegments", K.t(String.class, String.class, long.class, long.class),
            storeName, "testee", Long.MAX_VALUE, interval);
    }

    static void registerAll() {
        register("layout.segment_dir_name", in -> obj().put("name", (String) K.callOn(
            segments(Json.str(in, "store_name"), Json.lng(in, "segment_interval")), "segmentName", K.t(long.class),
            Json.lng(in, "segment_id"))));
        register("layout.parse_segment_name", in -> {
            // AbstractSegments.segmentIdFromSegmentName reads a directory entry of the store's directory and renames
            // an old-format one in place (renameSegmentFile); the entry is made in a temporary directory, and what
            // it is called afterwards is the rename.
            final String name = Json.str(in, "segment_name");
            if (name.isEmpty() || name.contains("/") || name.contains("\0") || name.equals(".") || name.equals("..")) {
                throw new Json.InputError("segment_name", "not the name of a directory entry");
            }
            final Object segments = segments(Json.str(in, "store_name"), Json.lng(in, "segment_interval"));
            final Path parent = Files.createTempDirectory("kstate-segments");
            try {
                Files.createDirectory(parent.resolve(name));
                final long id = (long) K.callOn(segments, "segmentIdFromSegmentName", K.t(String.class, File.class), name, parent.toFile());
                final java.util.List<String> after = new java.util.ArrayList<>();
                try (var list = Files.list(parent)) {
                    list.forEach(p -> after.add(p.getFileName().toString()));
                }
                final String renamed = after.size() == 1 && !after.get(0).equals(name) ? after.get(0) : null;
                return obj().put("segment_id", id).set("rename_to", renamed == null ? NullNode.instance : Json.F.textNode(renamed));
            } finally {
                Changelog.deleteTree(parent);
            }
        });
        register("layout.parse_task_dir_name", in -> {
            final String name = Json.str(in, "name");
            final Pattern pattern = (Pattern) Changelog.field(
                org.apache.kafka.streams.processor.internals.StateDirectory.class, "TASK_DIR_PATH_NAME").get(null);
            if (!pattern.matcher(name).matches()) {
                return obj().set("task", NullNode.instance);
            }
            final TaskId id = TaskId.parse(name);
            return obj().set("task", Json.arr().add(id.subtopology()).add(id.partition()));
        });
        register("layout.task_dir", in -> {
            final String applicationId = Json.str(in, "application_id");
            final String named = in.has("named_topology") && !in.get("named_topology").isNull() ? Json.str(in, "named_topology") : null;
            final TaskId id = new TaskId(Json.integer(in, "subtopology"), Json.integer(in, "partition"), named);
            final Path stateDir = Files.createTempDirectory("kstate-task-dir");
            try {
                final org.apache.kafka.streams.processor.internals.StateDirectory directory =
                    Tasks.stateDirectory(stateDir, applicationId, false, named != null);
                final File dir = directory.getOrCreateDirectoryForTask(id);
                return obj().put("task_dir", stateDir.relativize(dir.toPath()).toString()).put("name", dir.getName());
            } finally {
                Changelog.deleteTree(stateDir);
            }
        });
    }
}
