package kstate.kafkajvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static kstate.kafkajvm.Json.obj;
import static kstate.kafkajvm.Main.register;

/** {@code changelog.record_for_write} (CL-1..CL-8, VS-26): one write through the store type's own change-logging
 *  layer (ChangeLoggingKeyValueBytesStore, ChangeLoggingTimestampedKeyValueBytesStore[WithHeaders],
 *  ChangeLogging[Timestamped]WindowBytesStore[WithHeaders], ChangeLoggingSessionBytesStore[WithHeaders],
 *  ChangeLoggingVersionedKeyValueBytesStore), built by Kafka's Stores builders over an in-memory store (RocksDB for
 *  the versioned store, Kafka's only one), opened in the testee's task context; the record is what that layer
 *  handed to logChange. The store lives for this one operation. */
final class Changelog {
    private Changelog() { }

    static void registerAll() {
        register("changelog.record_for_write", Changelog::recordForWrite);
        register("changelog.topic_config", Changelog::topicConfig);
        register("changelog.topic_name", in -> {
            // ProcessorStateManager.storeChangelogTopic names it; Kafka checks the name where the topic is created
            // (InternalTopicManager -> NewTopic -> Topic.validate on the broker's and the admin client's side),
            // which the testee calls in its place: the check is Kafka's own (org.apache.kafka.common.internals.Topic).
            final String named = in.has("named_topology") && !in.get("named_topology").isNull() ? Json.str(in, "named_topology") : null;
            final String topic = (String) K.call("org.apache.kafka.streams.processor.internals.ProcessorStateManager",
                "storeChangelogTopic", K.t(String.class, String.class, String.class),
                Json.str(in, "application_id"), Json.str(in, "store_name"), named);
            K.call("org.apache.kafka.common.internals.Topic", "validate", K.t(String.class), topic);
            return obj().put("topic", topic);
        });
    }

    private static ObjectNode call(final String op, final ObjectNode in) throws Exception {
        return Main.OPS.get(op).apply(in);
    }

    private static ObjectNode recordForWrite(final JsonNode in) throws Exception {
        final String type = Json.str(in, "store_type");
        final StoreFamily family = StoreFamily.of(type);
        final String operation = Json.str(in, "operation");
        if (!family.loggedWrites().contains(operation)) {
            throw new Json.InputError("operation", operation + " is not a logged write of a " + type + " store");
        }
        Json.hex(in, "key");  // a key is required of every write, before any store opens
        final boolean consistency = in.has("consistency_position") && !in.get("consistency_position").isNull();
        final JsonNode context = Json.field(in, "context");
        if (!context.isObject() || !context.has("timestamp")) {
            throw new Json.InputError("context", "a record context with a timestamp");
        }
        final ObjectNode open = obj();
        open.put("store_type", type);
        open.put("backend", family.loggingBackend());
        open.put("logging", true);
        open.put("caching", false);
        open.put("name", "store");
        final Path stateDir = Files.createTempDirectory("kstate-kafka-jvm-log");
        open.put("state_dir", stateDir.toString());
        final ObjectNode ctx = obj();
        ctx.put("timestamp", Json.lng(context, "timestamp"));
        if (context.has("headers")) {
            ctx.set("headers", context.get("headers"));
        }
        open.set("context", ctx);
        final boolean duplicates = Json.bool(in, "retain_duplicates", false);
        open.set("options", family.loggingOptions(duplicates));
        final String handle = call("store.open", open).get("handle").textValue();
        try {
            final Stores.Handle h = Stores.handle(obj().put("handle", handle));
            if (consistency) {
                taskContext(h, in.get("consistency_position"));
            }
            final ObjectNode out = obj();
            final ObjectNode write = obj().put("handle", handle);
            write.set("key", in.get("key"));
            write.set("value", in.has("value") ? in.get("value") : NullNode.instance);
            family.logWrite(h, operation, write, in, out);
            final ArrayNode records = (ArrayNode) call("store.changelog", obj().put("handle", handle)).get("records");
            if (records.size() > 1) {
                throw new IllegalStateException("one write logged " + records.size() + " records");
            }
            out.set("record", records.isEmpty() ? NullNode.instance : records.get(0));
            return out;
        } finally {
            call("store.close", obj().put("handle", handle));
            deleteTree(stateDir);
        }
    }

    /** CL-12: the consistency headers come from the task, not the store: ProcessorContextImpl.logChange adds them
     *  (addVectorClockToHeaders) when the IQ consistency config (InternalConfig.IQ_CONSISTENCY_OFFSET_VECTOR_ENABLED)
     *  is on. The store is registered with a ProcessorStateManager of the task (its changelog partition), a
     *  ProcessorContextImpl over it made active with a recording RecordCollector, and the store's own Position
     *  holds the case's position when it writes (merged into the empty position it opened with, as the writes that
     *  made it would have left it): the layer hands that position to logChange. */
    private static void taskContext(final Stores.Handle h, final JsonNode position) throws Exception {
        final StoreContext sc = h.context;
        final ObjectNode positionIn = obj();
        positionIn.set("position", position);
        final byte[] bytes = Json.hex(call("position.serialize", positionIn), "bytes");
        final org.apache.kafka.streams.query.Position wanted = (org.apache.kafka.streams.query.Position) K.call("PositionSerde",
            "deserialize", K.t(java.nio.ByteBuffer.class), java.nio.ByteBuffer.wrap(bytes));
        // The task's identity and the IQ consistency flag; the processing guarantee does not enter logChange.
        final Map<String, Object> props = new java.util.HashMap<>();
        for (final String key : List.of(org.apache.kafka.streams.StreamsConfig.APPLICATION_ID_CONFIG,
                org.apache.kafka.streams.StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, org.apache.kafka.streams.StreamsConfig.STATE_DIR_CONFIG)) {
            props.put(key, sc.configs.get(key));
        }
        props.put((String) K.cls("org.apache.kafka.streams.StreamsConfig$InternalConfig")
            .getField("IQ_CONSISTENCY_OFFSET_VECTOR_ENABLED").get(null), true);
        final org.apache.kafka.streams.StreamsConfig config = new org.apache.kafka.streams.StreamsConfig(props);
        final org.apache.kafka.streams.processor.internals.StateDirectory directory = Tasks.stateDirectory(
            sc.taskDir.getParentFile().getParentFile().toPath(), sc.applicationId);
        final Object manager = Tasks.stateManager(sc.taskId, false, directory,
            Map.of(h.name, (String) K.call("org.apache.kafka.streams.processor.internals.ProcessorStateManager",
                "storeChangelogTopic", K.t(String.class, String.class, String.class), sc.applicationId, h.name, null)));
        K.callOn(manager, "registerStore", K.t(org.apache.kafka.streams.processor.StateStore.class,
            org.apache.kafka.streams.processor.StateRestoreCallback.class, org.apache.kafka.streams.processor.CommitCallback.class),
            h.root, sc.restoreCallback, sc.commitCallback);
        final org.apache.kafka.streams.processor.internals.ProcessorContextImpl task =
            new org.apache.kafka.streams.processor.internals.ProcessorContextImpl(sc.taskId, config,
                (org.apache.kafka.streams.processor.internals.ProcessorStateManager) manager, sc.metrics, sc.cache);
        task.transitionToActive(null, sc.recordingCollector(), sc.cache);
        task.setRecordContext(sc.recordContext);
        sc.task = task;
        h.root.getPosition().merge(wanted);
        final byte[] held = ((java.nio.ByteBuffer) K.call("PositionSerde", "serialize",
            K.t(org.apache.kafka.streams.query.Position.class), h.root.getPosition())).array();
        if (!java.util.Arrays.equals(held, bytes)) {
            // Position.merge adds a topic only with its partitions (a store's position grows by withComponent):
            // a topic without partitions is no position a Kafka store reaches.
            throw new K.Unavailable("no Kafka store's position is " + position + ": a store's position holds a topic "
                + "only with an offset of one of its partitions (Position.merge, withComponent)");
        }
    }

    /** {@code changelog.topic_config} (CL-15..CL-17): the store's builder from Kafka's Stores (its logConfig: a window
     *  store keeping duplicates carries cleanup.policy=delete until withLoggingEnabled replaces the map), then the
     *  topic config InternalTopologyBuilder makes of it (VersionedChangelogTopicConfig with the history retention,
     *  WindowedChangelogTopicConfig with the retention for window and session stores,
     *  UnwindowedUnversionedChangelogTopicConfig otherwise) and its properties(topic.* defaults, additional retention). */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private static ObjectNode topicConfig(final JsonNode in) {
        final String type = Json.str(in, "store_type");
        final StoreFamily family = StoreFamily.of(type);
        final String name = "store";
        final String topic = name + "-changelog";
        final org.apache.kafka.streams.processor.internals.InternalTopicConfig config = family.topicConfig(type, name, topic, in);
        final Map<String, String> defaults = stringMap(in, "topic_defaults");
        final long additional = in.has("additional_retention_ms") && !in.get("additional_retention_ms").isNull()
            ? Json.lng(in, "additional_retention_ms")
            : (long) org.apache.kafka.streams.StreamsConfig.configDef().defaultValues()
                .get(org.apache.kafka.streams.StreamsConfig.WINDOW_STORE_CHANGE_LOG_ADDITIONAL_RETENTION_MS_CONFIG);
        final Map<String, String> properties = config.properties(defaults == null ? new java.util.HashMap<>() : defaults, additional);
        final ObjectNode out = obj();
        new java.util.TreeMap<>(properties).forEach(out::put);
        return obj().set("config", out);
    }

    /** WindowedChangelogTopicConfig with the store's retention, as InternalTopologyBuilder hands it the store's
     *  retentionPeriod() (CL-16): the topic config of a window or session store's changelog. */
    @SuppressWarnings("rawtypes")
    static org.apache.kafka.streams.processor.internals.InternalTopicConfig windowedTopicConfig(
            final String topic, final org.apache.kafka.streams.state.StoreBuilder builder, final long retention) {
        return (org.apache.kafka.streams.processor.internals.InternalTopicConfig) K.construct(
            "org.apache.kafka.streams.processor.internals.WindowedChangelogTopicConfig",
            K.t(String.class, Map.class, long.class), topic, builder.logConfig(), retention);
    }

    /** The builder with the input's log_config, when it gives one (withLoggingEnabled replaces the builder's map). */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static org.apache.kafka.streams.state.StoreBuilder withLogConfig(final org.apache.kafka.streams.state.StoreBuilder builder,
                                                                           final JsonNode in) {
        final Map<String, String> logConfig = stringMap(in, "log_config");
        return logConfig == null ? builder : builder.withLoggingEnabled(logConfig);
    }

    private static Map<String, String> stringMap(final JsonNode in, final String name) {
        if (!in.has(name) || in.get(name).isNull()) {
            return null;
        }
        final JsonNode node = in.get(name);
        if (!node.isObject()) {
            throw new Json.InputError(name, "an object of string values");
        }
        final Map<String, String> out = new java.util.LinkedHashMap<>();
        for (final java.util.Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext();) {
            final Map.Entry<String, JsonNode> e = it.next();
            if (!e.getValue().isTextual()) {
                throw new Json.InputError(name + "." + e.getKey(), "a string");
            }
            out.put(e.getKey(), e.getValue().textValue());
        }
        return out;
    }

    /** A private field of Kafka's layer (reflection: the seqnum of ChangeLoggingWindowBytesStore is internal). */
    static java.lang.reflect.Field field(final Class<?> start, final String name) {
        for (Class<?> c = start; c != null; c = c.getSuperclass()) {
            try {
                final java.lang.reflect.Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f;
            } catch (NoSuchFieldException e) {
                // look in the superclass
            }
        }
        throw new K.Unavailable("this Kafka release has no field " + name + " on " + start.getName());
    }

    static void deleteTree(final Path dir) {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // a temporary directory left behind is not the operation's answer
        }
    }
}
