package kstate.kafkajvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import kstate.storetypes.StoreTypes;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.internals.ProcessorRecordContext;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.internals.WrappedStateStore;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;

import static kstate.kafkajvm.Json.hexNode;
import static kstate.kafkajvm.Json.hexOrNull;
import static kstate.kafkajvm.Json.obj;
import static kstate.kafkajvm.Main.register;

/** Store-level operations (spec/ops-index.md, store.*) of every family: a store built by its family's class
 *  ({@link StoreFamily}: Kafka's Stores.* suppliers and builders, metered, caching and change-logging layers over
 *  RocksDB or in memory), initialised in a task context ({@link StoreContext}), its life (open, close, crash), its
 *  flush, commit, restore and changelog, and what store.capabilities says of the families; each family's own
 *  operations are its class's. */
final class Stores {
    private Stores() { }

    private static final AtomicInteger IDS = new AtomicInteger();
    private static final Map<String, Handle> HANDLES = new LinkedHashMap<>();
    private static final Map<String, Iter> ITERATORS = new HashMap<>();
    private static final long DEFAULT_CACHE_MAX_BYTES = 10 * 1024 * 1024L;

    /** A task's commit of one store, as ProcessorStateManager.commit does it: store.commit(offsets), then the
     *  CommitCallback the store registered (4.3's RocksDBStore writes the position entry there; 4.4 writes it in
     *  commit and its callback does nothing). A task commits only the stores it holds open: its close clears them
     *  (ProcessorStateManager.close), so a closed store's callback is not called. */
    static void commit(final Handle h, final Map<TopicPartition, Long> offsets) {
        h.root.commit(offsets);
        if (!h.closed && h.context != null && h.context.commitCallback != null) {
            try {
                h.context.commitCallback.onCommit();
            } catch (final java.io.IOException e) {
                throw new org.apache.kafka.streams.errors.ProcessorStateException(
                    "Exception caught while trying to checkpoint store " + h.name, e);
            }
        }
    }

    static final class Handle {
        String id;
        String type;
        String backend;
        String name;
        StoreContext context;
        StateStore root;
        StoreFamily family;
        /** The layer of the store its family's operations call, the family's to say ({@link StoreFamily#bind}). */
        Object layer;
        boolean closed;
        /** Lost by store.crash: Kafka's objects were dropped without their close and are never called again. */
        boolean crashed;
        /** Whether the store logs to a changelog: only then does its task know a changelog partition for it. */
        boolean logging;
        int iterators;
        Path stateDir;
        boolean tempStateDir;
    }

    private record Iter(Handle handle, KeyValueIterator<Bytes, byte[]> it) { }

    static void closeAll() {
        PreReader.closeAll();
        for (final Handle h : HANDLES.values()) {
            if (!h.closed) {
                try {
                    h.root.close();
                } catch (RuntimeException e) {
                    // shutting down: a store that refuses to close is left to the process exit
                }
                h.closed = true;
            }
        }
    }

    static void registerAll() {
        register("store.capabilities", in -> capabilities());
        registerLifecycle();
        registerFlushAndCommit();
        register("store.task_files", Stores::taskFiles);
        // store.write_task_file (Tasks): the legacy .checkpoint is read by the task's migrateLegacyOffsets after the
        // store's init (as ProcessorStateManager.registerStateStores does), a <store>.position by the store's init.
    }

    /** The store's life: open, close, crash, its record context and its changelog. */
    private static void registerLifecycle() {
        register("store.open", Stores::open);
        register("store.close", Stores::close);
        register("store.crash", Stores::crash);
        register("store.set_context", in -> {
            final Handle h = handle(in);
            h.context.recordContext = contextFrom(in, h.context.recordContext);
            return obj();
        });
        register("store.changelog", Stores::changelog);
    }

    /** Flushing, committing and restoring: the cache, the offsets, the changelog. */
    private static void registerFlushAndCommit() {
        register("store.flush", in -> {
            // The operation flushes the cache (CachingKeyValueStore[WithHeaders], CachingWindowStore or
            // CachingSessionStore: each has flushCache()), then the store. Kafka 4.3 made StateStore.flush() a deprecated no-op
            // (KIP-1035: a task commits instead), so the cache is flushed by the caching layer's own flushCache().
            final Handle h = handle(in);
            flushCache(h);
            flushDeprecated(h.root);
            return obj();
        });
        register("store.flush_cache", in -> {
            final Handle h = handle(in);
            if (!flushCache(h) && (h.closed || !h.root.isOpen())) {
                throw new Json.InputError("handle", "Store " + h.name + " is currently closed.");
            }
            return obj();
        });
        register("store.commit", in -> {
            final Handle h = handle(in);
            commit(h, offsets(in, "changelog_offsets"));
            return obj();
        });
        register("store.committed_offset", in -> {
            final Handle h = handle(in);
            final Long offset = h.root.committedOffset(new TopicPartition(Json.str(in, "topic"), Json.integer(in, "partition")));
            return obj().set("offset", offset == null ? NullNode.instance : Json.F.numberNode(offset));
        });
        register("store.restore", Stores::restore);
    }

    /** What the testee builds and offers on this release (store.capabilities, OPS-1). */
    private static ObjectNode capabilities() {
        final ObjectNode out = obj();
        final ArrayNode types = Json.arr();
        // A backend Kafka lacks for a family's stores (its store_backends) is a store type Kafka lacks, not an
        // operation the testee leaves out (OPS-1).
        final ObjectNode only = Json.obj();
        for (final StoreFamily family : StoreFamily.all()) {
            for (final String t : family.types()) {
                if (family.offers(t)) {
                    types.add(t);
                }
                if (family.onlyBackends() != null) {
                    final ArrayNode backends = Json.arr();
                    family.onlyBackends().forEach(backends::add);
                    only.set(t, backends);
                }
            }
        }
        out.set("store_types", types);
        out.set("backends", Json.arr().add("rocksdb").add("memory"));
        out.set("store_backends", only);
        out.put("logging", true);
        out.put("caching", true);
        out.put("cache_flush_listener", true);
        // store.crash loses the unflushed memtables (Crash); no legacy upgrades. The raw column families are
        // read by store.dump (Dump).
        out.put("crash", true);
        out.set("dump", Json.arr().add("rocksdb"));
        out.set("offsets", Json.arr().add("rocksdb"));
        out.put("iterators", true);
        out.set("upgrade", Json.arr());
        // ValueTimestampHeadersDeserializer.deserialize parses the header bytes before value and timestamp:
        // Kafka 4.4 has no lazy header decoding (HV-10), so its lazy cases are absent, not failed.
        out.put("lazy_headers", false);
        // Kafka's only wipe is a task's (StateManagerUtil.closeStateManager deletes the task directory): no
        // wipe of one store beside the task's others (VS-31), so those cases are absent; store.wipe still
        // answers where the task holds nothing but the wiped store.
        out.put("store_wipe", false);
        // Kafka's public Stores takes no segment interval for a window store and its internal supplier checks
        // none (WS-2): a given interval of 1 or more is reached through that supplier, one below 1 is absent.
        out.put("segment_interval_option", false);
        return out;
    }

    /** store.close: a store's own close, or a task's downgrade close (OFF-20, UPG-4). */
    private static ObjectNode close(final JsonNode in) throws Exception {
        final Handle h = handleOrCrashed(in);
        if (h.crashed) {
            // The killed process never closes the store; closing a closed Kafka store does nothing.
            return obj();
        }
        final boolean downgrade = Json.bool(in, "downgrade", false);
        // A downgrade close (OFF-20, UPG-4) is the task's, as ProcessorStateManager.close runs it with upgrade.from
        // before 4.3: it notes each logged store's changelog offset (the one its last commit recorded), closes
        // the stores, then LegacyCheckpointingStateStore.maybeDowngradeOffsets writes the task's .checkpoint.
        final Map<org.apache.kafka.common.TopicPartition, Long> offsets = new HashMap<>();
        if (downgrade && !h.closed && h.logging) {
            final org.apache.kafka.common.TopicPartition tp =
                new org.apache.kafka.common.TopicPartition(changelogTopic(h), h.context.taskId.partition());
            offsets.put(tp, h.root.managesOffsets() ? h.root.committedOffset(tp) : null);
        }
        try {
            h.root.close();
        } finally {
            // Iterators stay: what a read of one answers after the close is the store's own behaviour.
            h.closed = true;
        }
        if (downgrade) {
            final Class<?> upgradeFrom = K.cls("org.apache.kafka.streams.internals.UpgradeFromValues");
            @SuppressWarnings({"unchecked", "rawtypes"})
            final Object from42 = Enum.valueOf((Class) upgradeFrom, "UPGRADE_FROM_42");
            K.call("LegacyCheckpointingStateStore", "maybeDowngradeOffsets", K.t(String.class, upgradeFrom,
                org.apache.kafka.streams.processor.internals.StateDirectory.class,
                org.apache.kafka.streams.processor.TaskId.class, Map.class),
                "", from42, Tasks.stateDirectory(h.stateDir, h.context.applicationId), h.context.taskId, offsets);
        }
        return obj();
    }

    /** store.crash: the store as a killed process leaves it (Crash). */
    private static ObjectNode crash(final JsonNode in) {
        final Handle h = handle(in);
        if (h.closed) {
            throw new org.apache.kafka.streams.errors.InvalidStateStoreException("Store " + h.name + " is not open");
        }
        // A killed process leaves no iterator: each is released before its RocksDB goes, whose native
        // iterators would outlive it otherwise. Its handle stays known, as after a clean close (where Kafka's
        // store closes its iterators): a later close of it is a no-op, a read is refused as a closed one's.
        for (final Iter i : ITERATORS.values()) {
            if (i.handle() == h) {
                i.it().close();
            }
        }
        try {
            Crash.crash(h.root);
        } finally {
            h.closed = true;
            h.crashed = true;
        }
        return obj();
    }

    /** store.changelog: the records the store's change-logging layer sent since the last call, cleared. */
    private static ObjectNode changelog(final JsonNode in) {
        final Handle h = handleOrCrashed(in);
        final ArrayNode records = Json.arr();
        for (final StoreContext.Logged r : h.context.changelog) {
            final ObjectNode rec = obj();
            rec.set("key", hexNode(r.key() == null ? null : r.key().get()));
            rec.set("value", hexNode(r.value()));
            rec.put("timestamp", r.timestamp());
            rec.set("headers", Json.headersJson(r.headers()));
            records.add(rec);
        }
        h.context.changelog.clear();
        final ObjectNode out = obj();
        out.put("topic", changelogTopic(h));
        out.put("partition", h.context.taskId.partition());
        out.set("records", records);
        return out;
    }

    /** store.task_files: the task directory's names, and the text of its .checkpoint and .position files. */
    private static ObjectNode taskFiles(final JsonNode in) throws Exception {
        final Path dir = taskDir(in);
        final Set<String> names = new TreeSet<>();
        final ObjectNode files = obj();
        if (Files.isDirectory(dir)) {
            try (var list = Files.list(dir)) {
                list.forEach(p -> names.add(p.getFileName().toString()));
            }
            for (final String n : names) {
                final Path p = dir.resolve(n);
                if ((n.equals(".checkpoint") || n.endsWith(".position")) && Files.isRegularFile(p)) {
                    files.put(n, new String(Files.readAllBytes(p), StandardCharsets.UTF_8));
                }
            }
        }
        final ArrayNode entries = Json.arr();
        names.forEach(entries::add);
        return obj().<ObjectNode>set("entries", entries).set("files", files);
    }

    // --- opening --------------------------------------------------------------------------------------------

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static ObjectNode open(final JsonNode in) throws Exception {
        final String type = storeType(in);
        final String backend = backend(in);
        final JsonNode opts = openOptions(in, type, backend);
        if (Json.bool(in, "pre_4_3_reader", false)) {
            // Main.answer hands such an open to Kafka PreReader.RELEASE (PreReader) before it gets here.
            throw new IllegalStateException("a pre-4.3 open reached this release's Stores.open");
        }
        final String name = in.has("name") ? Json.str(in, "name") : "store";
        // Kafka checks a store name where a topology names it (Materialized.as -> Named.validate), before anything
        // is created; Stores.* suppliers do not, so the testee calls that check first.
        org.apache.kafka.streams.kstream.Materialized.as(name);
        final String applicationId = in.has("application_id") ? Json.str(in, "application_id") : "app";
        final String taskIdText = in.has("task_id") ? Json.str(in, "task_id") : "0_0";
        final TaskId taskId = taskId(taskIdText);
        final boolean logging = Json.bool(in, "logging", true);
        final boolean caching = Json.bool(in, "caching", false);
        final boolean flushListener = Json.bool(in, "cache_flush_listener", false);
        final long cacheMaxBytes = Json.lng(in, "cache_max_bytes", DEFAULT_CACHE_MAX_BYTES);
        final Handle h = new Handle();
        if (in.has("state_dir") && !in.get("state_dir").isNull()) {
            h.stateDir = Path.of(Json.str(in, "state_dir"));
        } else {
            h.stateDir = Files.createTempDirectory("kstate-kafka-jvm");
            h.tempStateDir = true;
        }
        final File taskDir = kafkaTaskDir(h.stateDir, applicationId, taskId);
        final ProcessorRecordContext initial = contextFrom(in.has("context") && in.get("context").isObject() ? in.get("context") : obj(),
            // The neutral operations' default record context (timestamp 0, offset -1, no topic, partition -1). "No
            // topic" is a null topic, as a punctuation's context has (StoreQueryUtils.updatePosition skips it); an
            // empty topic name would enter the store's position as a topic.
            StoreContext.recordContext(0L, -1L, -1, null, new RecordHeaders()));
        final StoreContext context = new StoreContext(applicationId, taskId, taskDir, cacheMaxBytes, initial);
        // RocksDBStore.openDB opens the offsets family with ignoreInvalidState = !eosEnabled (processing.guarantee).
        Tasks.guarantee(context, Json.bool(in, "ignore_invalid_state", false));

        StoreBuilder builder = builder(type, name, backend.equals("rocksdb"), opts);
        builder = logging ? builder.withLoggingEnabled(new HashMap<>()) : builder.withLoggingDisabled();
        builder = caching ? builder.withCachingEnabled() : builder.withCachingDisabled();
        final StateStore root = (StateStore) builder.build();
        if (flushListener && caching) {
            setFlushListener(root, type);
        }
        initInTask(root, h, context, taskDir, logging, name);
        h.id = "h" + IDS.incrementAndGet();
        h.type = type;
        h.backend = backend;
        h.name = name;
        h.context = context;
        h.root = root;
        h.logging = logging;
        bindLayers(h);
        HANDLES.put(h.id, h);
        final ObjectNode out = obj();
        out.put("handle", h.id);
        out.put("manages_offsets", !PreReader.CHILD && root.managesOffsets());
        out.set("mode", mode(root));
        out.put("changelog_topic", changelogTopic(h));
        out.put("changelog_partition", taskId.partition());
        return out;
    }

    /** The store type an open names (``kv`` when none; the legacy alias read as its type): a type of the spec
     * that this release builds, else bad input (OPS-2) or unsupported. */
    private static String storeType(final JsonNode in) {
        String type = in.has("store_type") && !in.get("store_type").isNull() ? Json.str(in, "store_type") : "kv";
        if (type.equals("timestamped_kv_headers")) {
            type = "timestamped_kv_with_headers";  // the legacy alias (OPS-2)
        }
        // No store type of the spec (OPS-2): bad input, refused by name; unsupported is for a type of the spec the
        // release under test does not build.
        StoreFamily.of(type).requireOffered(type);
        return type;
    }

    /** The backend an open names: ``rocksdb`` (the default) or ``memory``. */
    private static String backend(final JsonNode in) {
        final String backend = in.has("backend") && !in.get("backend").isNull() ? Json.str(in, "backend") : "rocksdb";
        if (!backend.equals("rocksdb") && !backend.equals("memory")) {
            throw new Json.InputError("backend", "rocksdb or memory");
        }
        return backend;
    }

    /** The options of an open of `type` on `backend`, checked as Kafka's suppliers would take them (an empty
     * object when none). */
    private static JsonNode openOptions(final JsonNode in, final String type, final String backend) {
        final JsonNode options = in.get("options");
        if (options != null && !options.isNull()) {
            if (!options.isObject()) {
                throw new Json.InputError("options", "an object");
            }
        }
        return StoreFamily.of(type).openOptions(options == null || options.isNull() ? null : options, type, backend);
    }

    /** The builder of Kafka's `type` store called `name` (on RocksDB when `rocks`, else in memory), before its
     * logging and caching layers are chosen. */
    @SuppressWarnings("rawtypes")
    private static StoreBuilder builder(final String type, final String name, final boolean rocks, final JsonNode opts)
            throws Exception {
        return StoreFamily.of(type).builder(type, name, rocks, opts);
    }

    /** A KTable's flush listener on the caching layer of `root` (CACHE-5), as `type`'s materialised store gets. */
    @SuppressWarnings("unchecked")
    private static void setFlushListener(final StateStore root, final String type) {
        // Without a cache there is nothing to listen to (the metered store's setFlushListener answers false).
        // As a KTable's materialised store gets one (TimestampedCacheFlushListener): the metered layer hands it to
        // the caching layer (CachedStateStore.setFlushListener), whose putAndMaybeForward then reads the store
        // below for a dirty tombstone and drops it when the key is absent there (CACHE-5). sendOldValues false:
        // the old value is read only for a tombstone. What the cache forwards is not observed by an operation.
        final boolean set = ((org.apache.kafka.streams.state.internals.CachedStateStore<Object, Object>) (Object) root)
            .setFlushListener(record -> { }, false);
        if (!set) {
            throw new IllegalStateException("the caching layer of " + type + " took no flush listener");
        }
    }

    /** `root` initialised in its task, the legacy .checkpoint then migrated; a store that fails to initialise is
     * closed first. */
    private static void initInTask(final StateStore root, final Handle h, final StoreContext context, final File taskDir,
                                   final boolean logging, final String name) {
        // Kafka's suppliers and builders have checked every parameter by now: only then is the task directory made.
        taskDir.mkdirs();
        try {
            root.init(context.proxy, root);
            if (!PreReader.CHILD) {
                // Before 4.3 the task, not the store, reads the .checkpoint (ProcessorStateManager), and no store
                // manages offsets (StateStore has no managesOffsets): the pre-4.3 reader leaves the file as it is.
                Tasks.migrateLegacyOffsets(h.stateDir, context, root, logging ? changelogTopic(context.applicationId, name) : null);
            }
        } catch (RuntimeException e) {
            // A task whose store fails to initialise closes it (releasing RocksDB's lock) before it gives up.
            try {
                root.close();
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    /** The layers of `h`'s store that its operations read and write. */
    private static void bindLayers(final Handle h) throws ReflectiveOperationException {
        // The operations take and answer the stored bytes (a timestamped value is [timestamp][value]), which is
        // the interface of the layers under the metered (typed) store.
        h.family = StoreFamily.of(h.type);
        h.family.bind(h);
    }

    @SuppressWarnings("deprecation")
    private static void flushDeprecated(final StateStore store) {
        store.flush();
    }

    /** RocksDBTimestampedStore (and the header-aware store) open a plain store in upgrade mode, reading both column
     *  families through a DualColumnFamilyAccessor until reopened; the accessor Kafka chose says the mode. */
    private static JsonNode mode(final StateStore root) {
        Object s = root;
        while (s instanceof WrappedStateStore) {
            s = ((WrappedStateStore<?, ?, ?>) s).wrapped();
        }
        if (!s.getClass().getName().contains("RocksDB")) {
            return NullNode.instance;
        }
        for (Class<?> c = s.getClass(); c != null; c = c.getSuperclass()) {
            try {
                final java.lang.reflect.Field f = c.getDeclaredField("cfAccessor");
                f.setAccessible(true);
                final Object accessor = f.get(s);
                return Json.F.textNode(accessor != null && accessor.getClass().getSimpleName().startsWith("Dual") ? "upgrade" : "regular");
            } catch (NoSuchFieldException e) {
                // look in the superclass
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
        }
        return NullNode.instance;
    }

    private static String changelogTopic(final Handle h) {
        return changelogTopic(h.context.applicationId, h.name);
    }

    private static String changelogTopic(final String applicationId, final String name) {
        return (String) K.call("org.apache.kafka.streams.processor.internals.ProcessorStateManager", "storeChangelogTopic",
            K.t(String.class, String.class, String.class), applicationId, name, null);
    }

    private static ProcessorRecordContext contextFrom(final JsonNode in, final ProcessorRecordContext current) {
        final long timestamp = in.has("timestamp") ? Json.lng(in, "timestamp") : current.timestamp();
        final long offset = in.has("offset") ? Json.lng(in, "offset") : current.offset();
        final int partition = in.has("partition") ? Json.integer(in, "partition") : current.partition();
        // The neutral vocabulary's "" (no input topic) is Kafka's null topic (a punctuation's context): a record
        // context naming a topic "" would enter the store's position under that name.
        final String topic = in.has("topic") ? (Json.str(in, "topic").isEmpty() ? null : Json.str(in, "topic")) : current.topic();
        final Headers headers = in.has("headers") ? Json.headers(in, "headers") : current.headers();
        return StoreContext.recordContext(timestamp, offset, partition, topic, headers);
    }

    // --- helpers --------------------------------------------------------------------------------------------------

    /** The open or closed store a handle names; one store.crash lost is refused as Kafka refuses a closed store
     *  (its objects, never closed, still think themselves open, over RocksDB handles already released). */
    static Handle handle(final JsonNode in) {
        final Handle h = handleOrCrashed(in);
        if (h.crashed) {
            throw new org.apache.kafka.streams.errors.InvalidStateStoreException("Store " + h.name + " is currently closed.");
        }
        return h;
    }

    /** The store a handle names, crashed or not: for the operations that do not call the store (its changelog, the
     *  files it left, the close a killed process never runs). */
    static Handle handleOrCrashed(final JsonNode in) {
        final String id = Json.str(in, "handle");
        final Handle h = HANDLES.get(id);
        if (h == null) {
            throw new Json.InputError("handle", "no store " + id);
        }
        return h;
    }

    /** The open key-value iterator an input names. */
    static KeyValueIterator<Bytes, byte[]> iterator(final JsonNode in) {
        final String id = Json.str(in, "iterator");
        final Iter it = ITERATORS.get(id);
        if (it == null) {
            throw new Json.InputError("iterator", "no open iterator " + id);
        }
        return it.it();
    }

    /** Keeps `it`, an iterator of `h`'s store, under a new id until it is closed (a crash releases it); the id. */
    static String keepIterator(final Handle h, final KeyValueIterator<Bytes, byte[]> it) {
        final String id = h.id + "-i" + ++h.iterators;
        ITERATORS.put(id, new Iter(h, it));
        return id;
    }

    static Bytes key(final JsonNode in, final String name) {
        final byte[] k = hexOrNull(in, name);
        return k == null ? null : Bytes.wrap(k);
    }

    static Bytes optKey(final JsonNode in, final String name) {
        return in.has(name) ? key(in, name) : null;
    }

    static ObjectNode drain(final KeyValueIterator<Bytes, byte[]> it) {
        final ArrayNode entries = Json.arr();
        try (it) {
            while (it.hasNext()) {
                final KeyValue<Bytes, byte[]> kv = it.next();
                entries.add(Json.arr().add(hexNode(kv.key.get())).add(hexNode(kv.value)));
            }
        }
        return obj().set("entries", entries);
    }

    /** The first layer whose class name starts with the given one (CachingKeyValueStore, CachingKeyValueStoreWithHeaders). */
    private static Object layer(final StateStore root, final String simpleName) {
        StateStore s = root;
        while (true) {
            if (s.getClass().getSimpleName().startsWith(simpleName)) {
                return s;
            }
            if (!(s instanceof WrappedStateStore)) {
                return null;
            }
            s = ((WrappedStateStore<?, ?, ?>) s).wrapped();
        }
    }

    /** The family of a store type given in an input (the legacy alias accepted, OPS-2), from the generated table
     *  of kstate.codecs.store_types; a type the table lacks is refused, naming it. */
    static String family(final String type) {
        final String canonical = type.equals("timestamped_kv_headers") ? StoreTypes.TIMESTAMPED_KV_WITH_HEADERS : type;
        try {
            return StoreTypes.family(canonical);
        } catch (StoreTypes.UnknownStoreTypeException e) {
            throw new Json.InputError("store_type", "not a store type: " + type);
        }
    }

    /** Whether a store of the type keeps segment databases under {@code <task>/<store>/} (LAY-3) or one database
     *  under {@code <task>/rocksdb/<store>}. */
    static boolean segmented(final String type) {
        return StoreFamily.of(type).segmented();
    }

    /** Flushes the store's caching layer through its own flushCache() (a Kafka 4.3+ StateStore.flush() no longer
     *  does); false when the store has no cache. */
    private static boolean flushCache(final Handle h) {
        final Object caching = layer(h.root, "Caching");
        if (caching == null) {
            return false;
        }
        K.callOn(caching, "flushCache", K.t());
        return true;
    }

    static Map<TopicPartition, Long> offsets(final JsonNode in, final String name) {
        final Map<TopicPartition, Long> out = new LinkedHashMap<>();
        final JsonNode list = in.get(name);
        if (list == null || list.isNull()) {
            return out;
        }
        if (!list.isArray()) {
            throw new Json.InputError(name, "a list of [topic, partition, offset-or-null]");
        }
        int i = 0;
        for (final JsonNode e : list) {
            final String where = name + "[" + i++ + "]";
            final TopicPartition tp = Json.triplePartition(e, where, "a [topic, partition, offset-or-null] triple");
            out.put(tp, e.get(2).isNull() ? null : Json.asLong(e.get(2), where));
        }
        return out;
    }

    /** The task id as Kafka parses it (TaskId.parse); text it refuses is bad input. */
    private static TaskId taskId(final String taskIdText) {
        try {
            return TaskId.parse(taskIdText);
        } catch (RuntimeException e) {
            throw new Json.InputError("task_id", "not a task id: " + taskIdText);
        }
    }

    /** The task directory as Kafka's StateDirectory names it (getOrCreateDirectoryForTask, which creates nothing in
     *  a StateDirectory without persistent stores): {@code <state.dir>/<application.id>/<task>}. As in an
     *  application without named topologies (KafkaStreams: topologyMetadata.hasNamedTopologies() false), a named
     *  topology's task is refused (getTaskDirectoryParentName: IllegalStateException). */
    private static File kafkaTaskDir(final Path stateDir, final String applicationId, final TaskId taskId) {
        return Tasks.stateDirectory(stateDir, applicationId).getOrCreateDirectoryForTask(taskId);
    }

    /** Whether a store the testee holds open lives in this task directory. */
    static boolean openIn(final Path task) {
        for (final Handle h : HANDLES.values()) {
            if (!h.closed && h.context != null && h.context.taskDir.toPath().toAbsolutePath().normalize()
                    .equals(task.toAbsolutePath().normalize())) {
                return true;
            }
        }
        return false;
    }

    static Path taskDir(final JsonNode in) {
        if (in.has("handle") && !in.get("handle").isNull()) {
            return handle(in).context.taskDir.toPath();
        }
        // The same task id and directory store.open takes: what TaskId.parse refuses names no task directory.
        return kafkaTaskDir(Path.of(Json.str(in, "state_dir")), in.has("application_id") ? Json.str(in, "application_id") : "app",
            taskId(in.has("task_id") ? Json.str(in, "task_id") : "0_0")).toPath();
    }

    // --- typed reads and restore ------------------------------------------------------------------------------

    @SuppressWarnings("unchecked")
    private static ObjectNode restore(final JsonNode in) {
        final Handle h = handle(in);
        final JsonNode list = Json.field(in, "records");
        if (!list.isArray()) {
            throw new Json.InputError("records", "a list of records");
        }
        final long batchSize = Json.lng(in, "batch_size", 1000);
        if (batchSize < 1 || batchSize > Integer.MAX_VALUE) {
            throw new Json.InputError("batch_size", "at least one record a batch");
        }
        final boolean commit = Json.bool(in, "commit_offsets", false);
        final TopicPartition partition = new TopicPartition(changelogTopic(h), h.context.taskId.partition());
        final List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
        int i = 0;
        for (final JsonNode r : list) {
            final String where = "records[" + i + "]";
            if (!r.isObject()) {
                throw new Json.InputError(where, "a record object");
            }
            final byte[] k = Json.hex(r, "key");
            final byte[] v = hexOrNull(r, "value");
            final Headers headers = r.has("headers") ? Json.headers(r, "headers") : new RecordHeaders();
            records.add(new ConsumerRecord<>(partition.topic(), partition.partition(), i, Json.lng(r, "timestamp"),
                org.apache.kafka.common.record.TimestampType.CREATE_TIME, k.length, v == null ? -1 : v.length, k, v,
                headers == null ? new RecordHeaders() : headers, java.util.Optional.empty()));
            i++;
        }
        if (h.context.restoreCallback == null) {
            throw new IllegalStateException("the store registered no restore callback");
        }
        // ProcessorStateManager converts each changelog record for the store's format (StateManagerUtil.converterForStore)
        // and hands the batch to the store's registered callback; the testee does the same with Kafka's classes.
        final Object converter = K.call("org.apache.kafka.streams.processor.internals.StateManagerUtil", "converterForStore",
            K.t(StateStore.class), h.root);
        final Object adapter = K.call("org.apache.kafka.streams.processor.internals.StateRestoreCallbackAdapter", "adapt",
            K.t(org.apache.kafka.streams.processor.StateRestoreCallback.class), h.context.restoreCallback);
        int batches = 0;
        for (int from = 0; from < records.size(); from += (int) batchSize) {
            final List<ConsumerRecord<byte[], byte[]>> batch = new ArrayList<>();
            for (final ConsumerRecord<byte[], byte[]> r : records.subList(from, (int) Math.min(records.size(), from + batchSize))) {
                batch.add((ConsumerRecord<byte[], byte[]>) K.callOn(converter, "convert", K.t(ConsumerRecord.class), r));
            }
            K.callOn(adapter, "restoreBatch", K.t(java.util.Collection.class), batch);
            batches++;
            if (commit) {
                final Map<TopicPartition, Long> offsets = new HashMap<>();
                offsets.put(partition, batch.get(batch.size() - 1).offset());
                commit(h, offsets);
            }
        }
        return obj().put("restored", records.size()).put("batches", batches);
    }
}
