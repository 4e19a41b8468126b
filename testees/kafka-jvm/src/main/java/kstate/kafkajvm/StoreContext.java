package kstate.kafkajvm;

import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.CommitCallback;
import org.apache.kafka.streams.processor.StateRestoreCallback;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.internals.InternalProcessorContext;
import org.apache.kafka.streams.processor.internals.ProcessorRecordContext;
import org.apache.kafka.streams.processor.internals.Task;
import org.apache.kafka.streams.processor.internals.metrics.StreamsMetricsImpl;
import org.apache.kafka.streams.state.internals.ThreadCache;

import java.io.File;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** The task a store runs in: Kafka's InternalProcessorContext, which the stores' init and their change-logging and
 *  caching layers require, as a proxy answering the few methods they call. Everything a store does is Kafka's;
 *  this class only holds the task's identity, its record context, its ThreadCache, and catches what the
 *  change-logging layer hands to logChange (where a real task would send it to the record collector). A method
 *  a store calls that is not answered here fails loudly (an internal error), never silently. */
final class StoreContext implements InvocationHandler {
    /** One record the change-logging layer logged, as ProcessorContextImpl.logChange receives it. */
    record Logged(Bytes key, byte[] value, long timestamp, Headers headers) { }

    final String applicationId;
    final TaskId taskId;
    final File taskDir;
    final Map<String, Object> configs = new HashMap<>();
    final StreamsMetricsImpl metrics;
    final ThreadCache cache;
    final List<Logged> changelog = new ArrayList<>();
    ProcessorRecordContext recordContext;
    StateRestoreCallback restoreCallback;
    /** The store's CommitCallback, which ProcessorStateManager.commit calls right after store.commit (in 4.3 it
     *  is what writes the position entry: RocksDBStore::writePosition; in 4.4 that method is empty). */
    CommitCallback commitCallback;
    /** Where set, the task's own ProcessorContextImpl (Changelog.taskContext): logChange is handed to it, which adds
     *  the IQ consistency headers as a task does, and its RecordCollector (recording) is what catches the record. */
    InternalProcessorContext<?, ?> task;
    final InternalProcessorContext<?, ?> proxy;

    StoreContext(final String applicationId, final TaskId taskId, final File taskDir, final long cacheMaxBytes,
                 final ProcessorRecordContext initial) {
        this.applicationId = applicationId;
        this.taskId = taskId;
        this.taskDir = taskDir;
        // appConfigs() as a task answers it (AbstractProcessorContext: the originals, then every value with its default).
        final Map<String, Object> props = new HashMap<>();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092");
        props.put(StreamsConfig.STATE_DIR_CONFIG, taskDir.getParentFile().getParent());
        final StreamsConfig config = new StreamsConfig(props);
        configs.putAll(config.originals());
        configs.putAll(config.values());
        this.metrics = new StreamsMetricsImpl(new Metrics(), "kstate-testee", Time.SYSTEM);
        final Class<?> logContext = K.cls("org.apache.kafka.common.utils.LogContext");
        this.cache = (ThreadCache) K.construct("ThreadCache", K.t(logContext, long.class, StreamsMetricsImpl.class),
            K.construct(logContext.getName(), K.t()), cacheMaxBytes, metrics);
        this.recordContext = initial;
        this.proxy = (InternalProcessorContext<?, ?>) Proxy.newProxyInstance(getClass().getClassLoader(),
            new Class<?>[] {InternalProcessorContext.class}, this);
    }

    static ProcessorRecordContext recordContext(final long timestamp, final long offset, final int partition, final String topic,
                                                final Headers headers) {
        return new ProcessorRecordContext(timestamp, offset, partition, topic, headers == null ? new RecordHeaders() : headers);
    }

    /** A RecordCollector that records what ProcessorContextImpl.logChange sends (where a task's RecordCollectorImpl
     *  would serialize it and hand it to the producer), refusing what a ProducerRecord refuses, as it would. */
    org.apache.kafka.streams.processor.internals.RecordCollector recordingCollector() {
        return (org.apache.kafka.streams.processor.internals.RecordCollector) Proxy.newProxyInstance(getClass().getClassLoader(),
            new Class<?>[] {org.apache.kafka.streams.processor.internals.RecordCollector.class}, (self, method, args) -> {
                if (method.getName().equals("send") && args.length == 10 && args[4] instanceof Integer) {
                    final long timestamp = (Long) args[5];
                    new org.apache.kafka.clients.producer.ProducerRecord<>((String) args[0], (Integer) args[4], timestamp, args[1], args[2]);
                    changelog.add(new Logged((Bytes) args[1], (byte[]) args[2], timestamp, (Headers) args[3]));
                    return null;
                }
                switch (method.getName()) {
                    case "toString": return "RecordingCollector";
                    case "hashCode": return System.identityHashCode(self);
                    case "equals": return self == args[0];
                    default: throw new UnsupportedOperationException("the testee's record collector does not answer " + method.getName());
                }
            });
    }

    @Override
    public Object invoke(final Object self, final Method method, final Object[] args) {
        final String name = method.getName();
        switch (name) {
            case "applicationId": return applicationId;
            case "taskId": return taskId;
            case "stateDir": return taskDir;
            case "appConfigs": return configs;
            case "appConfigsWithPrefix": {
                final Map<String, Object> out = new HashMap<>();
                configs.forEach((k, v) -> {
                    if (k.startsWith((String) args[0])) {
                        out.put(k.substring(((String) args[0]).length()), v);
                    }
                });
                return out;
            }
            case "metrics": return metrics;
            case "cache": return cache;
            case "recordContext": return recordContext;
            case "setRecordContext":
                recordContext = (ProcessorRecordContext) args[0];
                return null;
            case "recordMetadata": return Optional.ofNullable(recordContext);
            case "timestamp": return recordContext.timestamp();
            case "headers": return recordContext.headers();
            case "topic": return recordContext.topic();
            case "partition": return recordContext.partition();
            case "offset": return recordContext.offset();
            case "keySerde": return Serdes.ByteArray();
            case "valueSerde": return Serdes.ByteArray();
            case "taskType": return Task.TaskType.ACTIVE;
            // The wall clock, as ProcessorContextImpl answers it (a store logs and measures dropped records with it).
            case "currentSystemTimeMs": return Time.SYSTEM.milliseconds();
            case "currentNode": return null;
            case "changelogFor": return K.call("org.apache.kafka.streams.processor.internals.ProcessorStateManager",
                "storeChangelogTopic", K.t(String.class, String.class, String.class), applicationId, args[0], null);
            case "register":
                // StateStoreContext.register(store, restoreCallback[, commitCallback]): the restore callback is kept
                // for store.restore, the commit callback for a task's commit (commit below).
                restoreCallback = (StateRestoreCallback) args[1];
                commitCallback = args.length > 2 ? (CommitCallback) args[2] : null;
                return null;
            case "registerCacheFlushListener":
                cache.addDirtyEntryFlushListener((String) args[0], (ThreadCache.DirtyEntryFlushListener) args[1]);
                return null;
            case "logChange":
                if (task != null) {
                    return K.invoke(method, task, args);
                }
                // A task sends the change as a ProducerRecord; its constructor refuses what a producer refuses (a
                // negative timestamp), after the store below has already written, as in Kafka.
                new org.apache.kafka.clients.producer.ProducerRecord<>("changelog", 0, (long) args[3], args[1], args[2]);
                // 4.3: (store, key, value, timestamp, position); 4.4: (store, key, value, timestamp, headers, position).
                changelog.add(new Logged((Bytes) args[1], (byte[]) args[2], (long) args[3],
                    args.length == 6 && args[4] != null ? (Headers) args[4] : recordContext.headers()));
                return null;
            case "toString": return "StoreContext(" + applicationId + ", " + taskId + ")";
            case "hashCode": return System.identityHashCode(self);
            case "equals": return self == args[0];
            default:
                throw new UnsupportedOperationException("the testee's task context does not answer " + name);
        }
    }
}
