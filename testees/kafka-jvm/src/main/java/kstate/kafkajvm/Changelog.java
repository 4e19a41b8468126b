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
import kstate.storetypes.StoreTypes;

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

    /** The writes each family's change-logging layer logs, as the operation defines them. */
    private static final Map<String, List<String>> OPERATIONS = Map.of(
        StoreTypes.FAMILY_KEY_VALUE, List.of("put", "put_if_absent", "delete"),
        StoreTypes.FAMILY_VERSIONED, List.of("put", "delete"),
        StoreTypes.FAMILY_WINDOW, List.of("put"),
        StoreTypes.FAMILY_SESSION, List.of("put", "remove"));

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

    @SuppressWarnings("unchecked")
    private static ObjectNode recordForWrite(final JsonNode in) throws Exception {
        final String type = Json.str(in, "store_type");
        final String family = Stores.family(type);
        final String operation = Json.str(in, "operation");
        final List<String> logged = OPERATIONS.get(family);
        if (logged == null) {
            throw StoreTypes.unknown(family, "changelog.record_for_write: the logged writes");
        }
        if (!logged.contains(operation)) {
            throw new Json.InputError("operation", operation + " is not a logged write of a " + type + " store");
        }
        final byte[] key = Json.hex(in, "key");
        final boolean consistency = in.has("consistency_position") && !in.get("consistency_position").isNull();
        final JsonNode context = Json.field(in, "context");
        if (!context.isObject() || !context.has("timestamp")) {
            throw new Json.InputError("context", "a record context with a timestamp");
        }
        final ObjectNode open = obj();
        open.put("store_type", type);
        open.put("backend", family.equals(StoreTypes.FAMILY_VERSIONED) ? "rocksdb" : "memory");
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
        switch (family) {
            case StoreTypes.FAMILY_WINDOW:
                // A retention no test timestamp expires; the window size does not enter the logged record.
                open.set("options", obj().put("retention_ms", Long.MAX_VALUE / 4).put("window_size_ms", 1L)
                    .put("retain_duplicates", duplicates));
                break;
            case StoreTypes.FAMILY_SESSION:
                open.set("options", obj().put("retention_ms", Long.MAX_VALUE / 4));
                break;
            case StoreTypes.FAMILY_VERSIONED:
                open.set("options", obj().put("history_retention_ms", Long.MAX_VALUE / 4));
                break;
            case StoreTypes.FAMILY_KEY_VALUE:
                break;
            default:
                throw StoreTypes.unknown(family, "changelog.record_for_write: the store's options");
        }
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
            switch (family) {
                case StoreTypes.FAMILY_KEY_VALUE:
                    if (operation.equals("put_if_absent")) {
                        final byte[] previous = in.has("previous") ? Json.hexOrNull(in, "previous") : null;
                        if (previous != null) {
                            // The key already holds `previous`: written beside the layer (no log), below it.
                            final Object below = ((org.apache.kafka.streams.state.internals.WrappedStateStore<?, ?, ?>) h.bytes).wrapped();
                            ((org.apache.kafka.streams.state.KeyValueStore<org.apache.kafka.common.utils.Bytes, byte[]>) below)
                                .put(org.apache.kafka.common.utils.Bytes.wrap(key), previous);
                        }
                    }
                    call("store." + operation, write);
                    break;
                case StoreTypes.FAMILY_VERSIONED:
                    write.put("timestamp", Json.lng(in, "timestamp"));
                    call("versioned_store." + operation, write);
                    break;
                case StoreTypes.FAMILY_WINDOW: {
                    write.put("window_start", Json.lng(in, "window_start"));
                    // The layer's seqnum before the write (ChangeLoggingWindowBytesStore.seqnum); the put moves it
                    // (maybeUpdateSeqnumForDups) when the store keeps duplicates.
                    final java.lang.reflect.Field seqnum = field(h.window.getClass(), "seqnum");
                    seqnum.setInt(h.window, (int) Json.lng(in, "seqnum", 0));
                    call("window_store.put", write);
                    out.put("seqnum", seqnum.getInt(h.window));
                    break;
                }
                case StoreTypes.FAMILY_SESSION:
                    write.put("start", Json.lng(in, "start"));
                    write.put("end", Json.lng(in, "end"));
                    if (operation.equals("remove")) {
                        write.remove("value");
                    }
                    call("session_store." + operation, write);
                    break;
                default:
                    throw StoreTypes.unknown(family, "changelog.record_for_write: the family's write");
            }
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
        final String family = Stores.family(type);
        final String name = "store";
        final org.apache.kafka.streams.processor.internals.InternalTopicConfig config;
        org.apache.kafka.streams.state.StoreBuilder builder;
        final String topic = name + "-changelog";
        switch (family) {
            case StoreTypes.FAMILY_VERSIONED: {
                if (type.endsWith("with_headers")) {
                    throw new K.Unavailable("this Kafka release has no header-aware versioned store");
                }
                final long history = Json.lng(in, "history_retention_ms");
                builder = org.apache.kafka.streams.state.Stores.versionedKeyValueStoreBuilder(
                    org.apache.kafka.streams.state.Stores.persistentVersionedKeyValueStore(name, java.time.Duration.ofMillis(history)),
                    org.apache.kafka.common.serialization.Serdes.Bytes(), org.apache.kafka.common.serialization.Serdes.ByteArray());
                builder = withLogConfig(builder, in);
                config = (org.apache.kafka.streams.processor.internals.InternalTopicConfig) K.construct(
                    "org.apache.kafka.streams.processor.internals.VersionedChangelogTopicConfig",
                    K.t(String.class, Map.class, long.class), topic, builder.logConfig(), history);
                break;
            }
            case StoreTypes.FAMILY_WINDOW:
            case StoreTypes.FAMILY_SESSION: {
                final long retention = Json.lng(in, "retention_ms");
                // The builder is consulted for its logConfig only, which does not depend on the retention (the
                // window builders' constructors add cleanup.policy=delete for retainDuplicates alone); the
                // retention goes to WindowedChangelogTopicConfig, the class CL-16 is about, as
                // InternalTopologyBuilder hands it the store's retentionPeriod().
                final ObjectNode opts = obj().put("retention_ms", 0L);
                if (family.equals(StoreTypes.FAMILY_WINDOW)) {
                    opts.put("window_size_ms", 0L).put("retain_duplicates", Json.bool(in, "retain_duplicates", false));
                    builder = Stores.windowBuilder(type, name, false, opts);
                } else {
                    builder = Sessions.builder(type, name, false, opts);
                }
                builder = withLogConfig(builder, in);
                config = (org.apache.kafka.streams.processor.internals.InternalTopicConfig) K.construct(
                    "org.apache.kafka.streams.processor.internals.WindowedChangelogTopicConfig",
                    K.t(String.class, Map.class, long.class), topic, builder.logConfig(), retention);
                break;
            }
            case StoreTypes.FAMILY_KEY_VALUE: {
                builder = org.apache.kafka.streams.state.Stores.keyValueStoreBuilder(
                    org.apache.kafka.streams.state.Stores.inMemoryKeyValueStore(name),
                    org.apache.kafka.common.serialization.Serdes.Bytes(), org.apache.kafka.common.serialization.Serdes.ByteArray());
                builder = withLogConfig(builder, in);
                config = (org.apache.kafka.streams.processor.internals.InternalTopicConfig) K.construct(
                    "org.apache.kafka.streams.processor.internals.UnwindowedUnversionedChangelogTopicConfig",
                    K.t(String.class, Map.class), topic, builder.logConfig());
                break;
            }
            default:
                throw StoreTypes.unknown(family, "changelog.topic_config");
        }
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

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static org.apache.kafka.streams.state.StoreBuilder withLogConfig(final org.apache.kafka.streams.state.StoreBuilder builder,
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
