package kstate.kafkajvm;

import com.fasterxml.jackson.databind.node.NullNode;
import org.apache.kafka.streams.processor.TaskId;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Pattern;

import static kstate.kafkajvm.Json.obj;
import static kstate.kafkajvm.Main.register;

/** Task directories (LAY-1) as Kafka's StateDirectory names and lists them: its TASK_DIR_PATH_NAME pattern and
 *  TaskId.parse for a directory name, getOrCreateDirectoryForTask for a task (which creates nothing in a
 *  StateDirectory without persistent stores). TASK_DIR_PATH_NAME is private: reflection. */
final class Layout {
    private Layout() { }

    static void registerAll() {
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
                final Map<String, Object> props = new HashMap<>();
                props.put(org.apache.kafka.streams.StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
                props.put(org.apache.kafka.streams.StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092");
                props.put(org.apache.kafka.streams.StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
                final org.apache.kafka.streams.processor.internals.StateDirectory directory =
                    new org.apache.kafka.streams.processor.internals.StateDirectory(new org.apache.kafka.streams.StreamsConfig(props),
                        org.apache.kafka.common.utils.Time.SYSTEM, false, named != null);
                final File dir = directory.getOrCreateDirectoryForTask(id);
                return obj().put("task_dir", stateDir.relativize(dir.toPath()).toString()).put("name", dir.getName());
            } finally {
                Changelog.deleteTree(stateDir);
            }
        });
    }
}
