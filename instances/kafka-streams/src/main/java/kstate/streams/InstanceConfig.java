package kstate.streams;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The instance's config file (INST-5): unknown fields ignored, a bad field a {@link UsageError} naming it (INST-6). */
final class InstanceConfig {
    /** A config that cannot be used: exit 64 with one line naming the field (INST-6, INST-18). */
    static final class UsageError extends Exception {
        UsageError(String field, String reason) {
            super(field == null ? "instance config: " + reason : "instance config field '" + field + "': " + reason);
        }
    }

    String instanceId;
    String bootstrap;
    String applicationId;
    String inputTopic;
    List<Integer> partitions;
    String storeName;
    String storeType;
    String stateDir;
    String statusDir;
    int commitEveryRecords = 200;
    int commitIntervalMs = 200;
    String onUncleanShutdown = "keep";
    String onRefused = "fail";
    boolean manageOffsets = true;
    String crashAt;
    int restoreBatchSize = 1000;
    Map<String, String> extra = new LinkedHashMap<>();
    /** The names in `store_options` and `processor_options` (INST-26): the key-value family takes none. */
    List<String> storeOptions = new ArrayList<>();
    List<String> processorOptions = new ArrayList<>();
    /** Their values, for the families that take options (INST-26, {@link Families}). */
    Map<String, JsonNode> storeOptionValues = new LinkedHashMap<>();
    Map<String, JsonNode> processorOptionValues = new LinkedHashMap<>();

    String changelogTopic() {
        // CL-1: <application.id>-<store name>-changelog, Kafka's ProcessorStateManager.storeChangelogTopic.
        return applicationId + "-" + storeName + "-changelog";
    }

    static InstanceConfig read(Path path) throws UsageError {
        JsonNode root;
        try {
            root = new ObjectMapper().readTree(Files.readAllBytes(path));
        } catch (IOException e) {
            throw new UsageError(null, "cannot read '" + path + "': " + e.getMessage());
        }
        if (root == null || !root.isObject()) {
            throw new UsageError(null, "expected a JSON object");
        }
        InstanceConfig c = new InstanceConfig();
        c.instanceId = string(root, "instance_id", null, true);
        c.bootstrap = string(root, "bootstrap", null, true);
        c.applicationId = string(root, "application_id", null, true);
        c.inputTopic = string(root, "input_topic", null, true);
        c.partitions = intList(root, "partitions");
        c.storeName = string(root, "store_name", null, true);
        c.storeType = string(root, "store_type", null, true);
        c.stateDir = string(root, "state_dir", null, true);
        c.statusDir = string(root, "status_dir", null, true);
        c.commitEveryRecords = integer(root, "commit_every_records", 200);
        c.commitIntervalMs = integer(root, "commit_interval_ms", 200);
        c.onUncleanShutdown = choice(root, "on_unclean_shutdown", "keep", "wipe");
        c.onRefused = choice(root, "on_refused", "fail", "wipe");
        c.restoreBatchSize = integer(root, "restore_batch_size", 1000);
        JsonNode manage = root.get("manage_offsets");
        if (manage != null) {
            if (!manage.isBoolean()) {
                throw new UsageError("manage_offsets", "expected a bool, got " + manage);
            }
            c.manageOffsets = manage.booleanValue();
        }
        c.crashAt = string(root, "crash_at", null, false);
        JsonNode storeOptions = objectOf(root, "store_options", false);
        if (storeOptions != null) {
            storeOptions.fieldNames().forEachRemaining(c.storeOptions::add);
            storeOptions.fields().forEachRemaining(e -> c.storeOptionValues.put(e.getKey(), e.getValue()));
        }
        JsonNode processorOptions = objectOf(root, "processor_options", true);
        if (processorOptions != null) {
            processorOptions.fieldNames().forEachRemaining(c.processorOptions::add);
            processorOptions.fields().forEachRemaining(e -> c.processorOptionValues.put(e.getKey(), e.getValue()));
        }
        JsonNode extra = objectOf(root, "extra", false);
        if (extra != null) {
            for (Iterator<Map.Entry<String, JsonNode>> it = extra.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                if (!e.getValue().isTextual()) {
                    throw new UsageError("extra", "expected an object of strings, got " + e.getValue());
                }
                c.extra.put(e.getKey(), e.getValue().textValue());
            }
        }
        return c;
    }

    private static String string(JsonNode root, String name, String dflt, boolean required) throws UsageError {
        JsonNode v = root.get(name);
        if (v == null) {
            if (required) {
                throw new UsageError(name, "required");
            }
            return dflt;
        }
        if (v.isNull() && !required) {
            return null;
        }
        if (!v.isTextual()) {
            throw new UsageError(name, "expected a string, got " + v);
        }
        return v.textValue();
    }

    private static int integer(JsonNode root, String name, int dflt) throws UsageError {
        JsonNode v = root.get(name);
        if (v == null) {
            return dflt;
        }
        // JSON true is no int (INST-6), nor is 1.5.
        if (!v.isIntegralNumber() || !v.canConvertToInt()) {
            throw new UsageError(name, "expected an int, got " + v);
        }
        return v.intValue();
    }

    private static List<Integer> intList(JsonNode root, String name) throws UsageError {
        JsonNode v = root.get(name);
        if (v == null) {
            throw new UsageError(name, "required");
        }
        if (!v.isArray()) {
            throw new UsageError(name, "expected a list of int, got " + v);
        }
        List<Integer> out = new ArrayList<>();
        for (JsonNode item : v) {
            if (!item.isIntegralNumber() || !item.canConvertToInt() || item.intValue() < 0) {
                throw new UsageError(name, "expected a list of int, got " + v);
            }
            out.add(item.intValue());
        }
        return out;
    }

    private static String choice(JsonNode root, String name, String... choices) throws UsageError {
        String v = string(root, name, choices[0], false);
        for (String c : choices) {
            if (c.equals(v)) {
                return v;
            }
        }
        throw new UsageError(name, "one of " + String.join(", ", choices) + ", got " + v);
    }

    private static JsonNode objectOf(JsonNode root, String name, boolean ints) throws UsageError {
        JsonNode v = root.get(name);
        if (v == null) {
            return null;
        }
        if (!v.isObject()) {
            throw new UsageError(name, "expected an object, got " + v);
        }
        if (ints) {
            for (JsonNode item : v) {
                if (!item.isIntegralNumber()) {
                    throw new UsageError(name, "expected an object of int, got " + v);
                }
            }
        }
        return v;
    }
}
