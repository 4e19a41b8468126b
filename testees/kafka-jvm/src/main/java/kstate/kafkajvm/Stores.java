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
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.internals.ProcessorRecordContext;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.VersionedKeyValueStore;
import org.apache.kafka.streams.state.VersionedRecord;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.WindowStoreIterator;
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

/** Store-level operations (spec/ops-index.md, store.*): key-value stores built by Kafka's Stores.* suppliers and
 *  builders (metered, caching and change-logging layers over RocksDB or in memory), initialised in a task
 *  context ({@link StoreContext}); each operation calls the store's own method. */
final class Stores {
    private Stores() { }

    private static final AtomicInteger IDS = new AtomicInteger();
    private static final Map<String, Handle> HANDLES = new LinkedHashMap<>();
    private static final Map<String, Iter> ITERATORS = new HashMap<>();
    private static final long DEFAULT_CACHE_MAX_BYTES = 10 * 1024 * 1024L;

    /** The key-value store types a release offers: its Stores.* supplier per backend and its builder. */
    private static final List<String> KV_TYPES = List.of("kv", "timestamped_kv", "timestamped_kv_with_headers");
    private static final List<String> VERSIONED_TYPES = List.of("versioned_kv");
    private static final List<String> WINDOW_TYPES = List.of("window", "timestamped_window", "timestamped_window_with_headers");
    /** The layout-only window type (spec/ops.md): the store of a windowed aggregation that emits final results,
     *  opened for its column families (layout.column_families), not listed in store.capabilities. */
    private static final String TIME_ORDERED_WITH_HEADERS = StoreTypes.TIME_ORDERED_WINDOW_WITH_HEADERS;

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
        KeyValueStore<Bytes, byte[]> bytes;
        WindowStore<Bytes, byte[]> window;
        org.apache.kafka.streams.state.SessionStore<Bytes, byte[]> session;
        VersionedKeyValueStore<Bytes, byte[]> versioned;
        VersionedKeyValueStore<Bytes, byte[]> versionedInner;
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

    private static boolean hasType(final String type) {
        try {
            if (type.equals("timestamped_kv_with_headers")) {
                org.apache.kafka.streams.state.Stores.class.getMethod("persistentTimestampedKeyValueStoreWithHeaders", String.class);
                org.apache.kafka.streams.state.Stores.class.getMethod("timestampedKeyValueStoreWithHeadersBuilder",
                    KeyValueBytesStoreSupplier.class, org.apache.kafka.common.serialization.Serde.class,
                    org.apache.kafka.common.serialization.Serde.class);
            }
            if (type.equals("timestamped_window_with_headers")) {
                org.apache.kafka.streams.state.Stores.class.getMethod("persistentTimestampedWindowStoreWithHeaders", String.class,
                    java.time.Duration.class, java.time.Duration.class, boolean.class);
                org.apache.kafka.streams.state.Stores.class.getMethod("timestampedWindowStoreWithHeadersBuilder",
                    org.apache.kafka.streams.state.WindowBytesStoreSupplier.class, org.apache.kafka.common.serialization.Serde.class,
                    org.apache.kafka.common.serialization.Serde.class);
            }
            if (type.equals(TIME_ORDERED_WITH_HEADERS)) {
                K.cls("RocksDbIndexedTimeOrderedWindowBytesStoreWithHeadersSupplier");
                return true;
            }
            return KV_TYPES.contains(type) || WINDOW_TYPES.contains(type) || VERSIONED_TYPES.contains(type)
                || Sessions.hasType(type);
        } catch (NoSuchMethodException e) {
            return false;
        }
    }

    static void registerAll() {
        register("store.capabilities", in -> capabilities());
        registerLifecycle();
        registerKeyValue();
        registerFlushAndCommit();
        registerVersioned();
        registerWindow();
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

    /** The key-value operations and their iterators. */
    private static void registerKeyValue() {
        register("store.put", in -> {
            final Handle h = handle(in);
            kv(h).put(key(in, "key"), hexOrNull(in, "value"));
            return obj();
        });
        register("store.put_if_absent", in -> {
            final Handle h = handle(in);
            return obj().set("previous", hexNode(kv(h).putIfAbsent(key(in, "key"), hexOrNull(in, "value"))));
        });
        register("store.put_all", Stores::putAll);
        register("store.get", in -> obj().set("value", hexNode(kv(handle(in)).get(key(in, "key")))));
        register("store.delete", in -> obj().set("previous", hexNode(kv(handle(in)).delete(key(in, "key")))));
        register("store.get_typed", Stores::getTyped);
        register("store.range", in -> drain(kv(handle(in)).range(key(in, "from"), key(in, "to"))));
        register("store.reverse_range", in -> drain(kv(handle(in)).reverseRange(key(in, "from"), key(in, "to"))));
        register("store.all", in -> drain(kv(handle(in)).all()));
        register("store.reverse_all", in -> drain(kv(handle(in)).reverseAll()));
        register("store.prefix_scan", in -> drain(kv(handle(in)).prefixScan(Json.hex(in, "prefix"), new ByteArraySerializer())));
        register("store.approximate_num_entries", in -> obj().put("count", kv(handle(in)).approximateNumEntries()));
        register("store.iterator_open", Stores::iteratorOpen);
        register("store.iterator_next", in -> {
            final Iter iter = iterator(in);
            final long max = Json.lng(in, "max", 1);
            final ArrayNode entries = Json.arr();
            for (long n = 0; n < max && iter.it().hasNext(); n++) {
                final KeyValue<Bytes, byte[]> kv = iter.it().next();
                entries.add(Json.arr().add(hexNode(kv.key.get())).add(hexNode(kv.value)));
            }
            return obj().set("entries", entries);
        });
        register("store.iterator_peek_next_key", in -> {
            final Iter iter = iterator(in);
            // peekNextKey throws at the end; the operation answers null there (its definition), so ask hasNext first.
            return obj().set("key", iter.it().hasNext() ? hexNode(iter.it().peekNextKey().get()) : NullNode.instance);
        });
        register("store.iterator_close", in -> {
            iterator(in).it().close();
            return obj();
        });
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

    /** The versioned store's operations (VS-*). */
    private static void registerVersioned() {
        register("versioned_store.put", in -> {
            final VersionedKeyValueStore<Bytes, byte[]> v = versioned(handle(in));
            if (in.has("headers") && !in.get("headers").isNull() && in.get("headers").size() > 0) {
                throw new Json.InputError("headers", "a versioned_kv store takes no headers");
            }
            return obj().put("valid_to", v.put(key(in, "key"), hexOrNull(in, "value"), Json.lng(in, "timestamp")));
        });
        register("versioned_store.get", in -> {
            final Handle vh = handle(in);
            versioned(vh);
            final VersionedKeyValueStore<Bytes, byte[]> v = vh.versionedInner;
            final boolean asOf = in.has("as_of") && !in.get("as_of").isNull();
            return obj().set("record", versionedRecord(asOf ? v.get(key(in, "key"), Json.lng(in, "as_of")) : v.get(key(in, "key"))));
        });
        register("versioned_store.delete", in -> {
            final VersionedKeyValueStore<Bytes, byte[]> v = versioned(handle(in));
            return obj().set("record", versionedRecord(v.delete(key(in, "key"), Json.lng(in, "timestamp"))));
        });
        register("versioned_store.get_versions", Stores::versionedGetVersions);
    }

    /** The window store's operations (window_store.*). */
    private static void registerWindow() {
        register("window_store.put", in -> {
            window(handle(in)).put(key(in, "key"), hexOrNull(in, "value"), Json.lng(in, "window_start"));
            return obj();
        });
        register("window_store.fetch", in -> obj().set("value",
            hexNode(window(handle(in)).fetch(key(in, "key"), Json.lng(in, "time")))));
        register("window_store.fetch_range", in -> {
            final WindowStore<Bytes, byte[]> w = window(handle(in));
            final Bytes k = key(in, "key");
            final long from = Json.lng(in, "from_ms");
            final long to = Json.lng(in, "to_ms");
            final ArrayNode entries = Json.arr();
            try (WindowStoreIterator<byte[]> it = Json.bool(in, "backward", false) ? w.backwardFetch(k, from, to) : w.fetch(k, from, to)) {
                while (it.hasNext()) {
                    final KeyValue<Long, byte[]> kv = it.next();
                    entries.add(Json.arr().add(kv.key).add(hexNode(kv.value)));
                }
            }
            return obj().set("entries", entries);
        });
        register("window_store.fetch_keys", in -> {
            final WindowStore<Bytes, byte[]> w = window(handle(in));
            final Bytes from = key(in, "key_from");
            final Bytes to = key(in, "key_to");
            final long fromMs = Json.lng(in, "from_ms");
            final long toMs = Json.lng(in, "to_ms");
            return windowed(Json.bool(in, "backward", false) ? w.backwardFetch(from, to, fromMs, toMs) : w.fetch(from, to, fromMs, toMs));
        });
        register("window_store.fetch_all", in -> {
            final WindowStore<Bytes, byte[]> w = window(handle(in));
            final long fromMs = Json.lng(in, "from_ms");
            final long toMs = Json.lng(in, "to_ms");
            return windowed(Json.bool(in, "backward", false) ? w.backwardFetchAll(fromMs, toMs) : w.fetchAll(fromMs, toMs));
        });
        register("window_store.all", in -> {
            final WindowStore<Bytes, byte[]> w = window(handle(in));
            return windowed(Json.bool(in, "backward", false) ? w.backwardAll() : w.all());
        });
    }

    /** What the testee builds and offers on this release (store.capabilities, OPS-1). */
    private static ObjectNode capabilities() {
        final ObjectNode out = obj();
        final ArrayNode types = Json.arr();
        for (final String t : KV_TYPES) {
            if (hasType(t)) {
                types.add(t);
            }
        }
        for (final String t : WINDOW_TYPES) {
            if (hasType(t)) {
                types.add(t);
            }
        }
        VERSIONED_TYPES.forEach(types::add);
        for (final String t : Sessions.TYPES) {
            if (Sessions.hasType(t)) {
                types.add(t);
            }
        }
        out.set("store_types", types);
        out.set("backends", Json.arr().add("rocksdb").add("memory"));
        // Kafka's Stores builds a versioned store on RocksDB only (persistentVersionedKeyValueStore): the in-memory
        // versioned store is a store type Kafka lacks, not an operation the testee leaves out (OPS-1).
        final ObjectNode only = Json.obj();
        VERSIONED_TYPES.forEach(t -> only.set(t, Json.arr().add("rocksdb")));
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

    /** store.put_all: one batch of [key, value] pairs. */
    private static ObjectNode putAll(final JsonNode in) {
        final Handle h = handle(in);
        final JsonNode list = Json.field(in, "entries");
        if (!list.isArray()) {
            throw new Json.InputError("entries", "a list of [key, value] pairs");
        }
        final List<KeyValue<Bytes, byte[]>> entries = new ArrayList<>();
        int i = 0;
        for (final JsonNode pair : list) {
            final String where = "entries[" + i++ + "]";
            if (!pair.isArray() || pair.size() != 2) {
                throw new Json.InputError(where, "a [key, value] pair");
            }
            final byte[] k = Json.parseHex(pair.get(0), where, true);
            entries.add(KeyValue.pair(k == null ? null : Bytes.wrap(k), Json.parseHex(pair.get(1), where, true)));
        }
        if (entries.stream().anyMatch(e -> e.key == null)) {
            // MeteredKeyValueStore.putAll checks every key before it writes any: a batch with a null key goes
            // through it, so that Kafka's user-facing store refuses it whole (the layers below write first).
            ((KeyValueStore<Bytes, byte[]>) (KeyValueStore<?, ?>) h.root).putAll(entries);
        }
        kv(h).putAll(entries);
        return obj();
    }

    /** store.iterator_open: a key-value iterator of one kind, kept under an id until it is closed. */
    private static ObjectNode iteratorOpen(final JsonNode in) {
        final Handle h = handle(in);
        final String kind = in.has("kind") && !in.get("kind").isNull() ? Json.str(in, "kind") : "range";
        final KeyValueIterator<Bytes, byte[]> it;
        switch (kind) {
            case "range": it = kv(h).range(optKey(in, "from"), optKey(in, "to")); break;
            case "reverse_range": it = kv(h).reverseRange(optKey(in, "from"), optKey(in, "to")); break;
            case "all": it = kv(h).all(); break;
            case "reverse_all": it = kv(h).reverseAll(); break;
            case "prefix_scan": it = kv(h).prefixScan(Json.hex(in, "prefix"), new ByteArraySerializer()); break;
            default: throw new Json.InputError("kind", "one of range, reverse_range, all, reverse_all, prefix_scan");
        }
        final String id = h.id + "-i" + ++h.iterators;
        ITERATORS.put(id, new Iter(h, it));
        return obj().put("iterator", id);
    }

    /** versioned_store.get_versions: a key's versions through IQv2's MultiVersionedKeyQuery. */
    private static ObjectNode versionedGetVersions(final JsonNode in) {
        final VersionedKeyValueStore<Bytes, byte[]> v = versioned(handle(in));
        // KIP-968: MultiVersionedKeyQuery through the store's IQv2 query().
        org.apache.kafka.streams.query.MultiVersionedKeyQuery<Bytes, byte[]> q =
            org.apache.kafka.streams.query.MultiVersionedKeyQuery.withKey(key(in, "key"));
        if (in.has("from_ms") && !in.get("from_ms").isNull()) {
            q = q.fromTime(java.time.Instant.ofEpochMilli(Json.lng(in, "from_ms")));
        }
        if (in.has("to_ms") && !in.get("to_ms").isNull()) {
            q = q.toTime(java.time.Instant.ofEpochMilli(Json.lng(in, "to_ms")));
        }
        final String order = in.has("order") && !in.get("order").isNull() ? Json.str(in, "order") : "any";
        switch (order) {
            case "ascending": q = q.withAscendingTimestamps(); break;
            case "descending": q = q.withDescendingTimestamps(); break;
            case "any": break;
            default: throw new Json.InputError("order", "any, ascending or descending");
        }
        final org.apache.kafka.streams.query.QueryResult<org.apache.kafka.streams.state.VersionedRecordIterator<byte[]>> r =
            v.query(q, org.apache.kafka.streams.query.PositionBound.unbounded(), new org.apache.kafka.streams.query.QueryConfig(false));
        if (!r.isSuccess()) {
            if (r.getFailureReason() == org.apache.kafka.streams.query.FailureReason.STORE_EXCEPTION) {
                // The store refused the query (a closed store: InvalidStateStoreException, caught by
                // StoreQueryUtils.handleBasicQueries); Kafka's own FailedQueryResult.getResult throws it as a refusal.
                r.getResult();
            }
            throw new IllegalStateException("MultiVersionedKeyQuery failed: " + r.getFailureReason() + " " + r.getFailureMessage());
        }
        final ArrayNode records = Json.arr();
        try (org.apache.kafka.streams.state.VersionedRecordIterator<byte[]> it = r.getResult()) {
            while (it.hasNext()) {
                records.add(versionedRecord(it.next()));
            }
        }
        return obj().set("records", records);
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
        if (type.equals("versioned_kv_with_headers") && java.util.Arrays.stream(org.apache.kafka.streams.state.Stores.class.getMethods())
                .noneMatch(m -> m.getName().startsWith("persistentVersionedKeyValueStoreWithHeaders"))) {
            // 4.3.1 and 4.4.0: the release, not the testee, lacks the type.
            throw new K.Unavailable("this Kafka release has no header-aware versioned store (its Stores has no "
                + "persistentVersionedKeyValueStoreWithHeaders)");
        }
        try {
            StoreTypes.family(type);
        } catch (StoreTypes.UnknownStoreTypeException e) {
            // No store type of the spec (OPS-2): bad input, refused by name; unsupported is for a type of the spec
            // the release under test does not build.
            throw new Json.InputError("store_type", "not a store type: " + type);
        }
        if (!hasType(type)) {
            throw new K.Unavailable("the kafka-jvm testee builds no " + type + " store on this release");
        }
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
            if (options.size() > 0 && KV_TYPES.contains(type)) {
                throw new Json.InputError("options." + options.fieldNames().next(), "a key-value store takes no options");
            }
        }
        if (VERSIONED_TYPES.contains(type)) {
            final JsonNode vopts = options == null || options.isNull() ? obj() : options;
            Json.onlyOptions(vopts, "a versioned store takes history_retention_ms and segment_interval_ms",
                "history_retention_ms", "segment_interval_ms");
            Json.lng(vopts, "history_retention_ms");
            Json.lng(vopts, "segment_interval_ms", 0);
            if (!backend.equals("rocksdb")) {
                throw new K.Unavailable("Kafka has no in-memory versioned store (Stores.persistentVersionedKeyValueStore only)");
            }
        }
        final JsonNode opts = options == null || options.isNull() ? obj() : options;
        if (isWindow(type)) {
            Json.onlyOptions(opts, "a window store takes retention_ms, window_size_ms, retain_duplicates and "
                + "segment_interval_ms", "retention_ms", "window_size_ms", "retain_duplicates", "segment_interval_ms");
            Json.lng(opts, "retention_ms");
            Json.lng(opts, "window_size_ms");
            Json.bool(opts, "retain_duplicates", false);
            Json.lng(opts, "segment_interval_ms", 0);
        }
        if (Sessions.TYPES.contains(type)) {
            Sessions.checkOptions(opts);
        }
        return opts;
    }

    /** Whether `type` is of the window family (the time-ordered store with headers included). */
    private static boolean isWindow(final String type) {
        return WINDOW_TYPES.contains(type) || type.equals(TIME_ORDERED_WITH_HEADERS);
    }

    /** The builder of Kafka's `type` store called `name` (on RocksDB when `rocks`, else in memory), before its
     * logging and caching layers are chosen. */
    @SuppressWarnings("rawtypes")
    private static StoreBuilder builder(final String type, final String name, final boolean rocks, final JsonNode opts)
            throws Exception {
        KeyValueBytesStoreSupplier supplier;
        StoreBuilder builder;
        if (isWindow(type)) {
            builder = windowBuilder(type, name, rocks, opts);
            supplier = null;
        } else if (Sessions.TYPES.contains(type)) {
            builder = Sessions.builder(type, name, rocks, opts);
            supplier = null;
        } else if (VERSIONED_TYPES.contains(type)) {
            final java.time.Duration history = java.time.Duration.ofMillis(Json.lng(opts, "history_retention_ms"));
            final org.apache.kafka.streams.state.VersionedBytesStoreSupplier versionedSupplier =
                opts.has("segment_interval_ms") && !opts.get("segment_interval_ms").isNull()
                    ? org.apache.kafka.streams.state.Stores.persistentVersionedKeyValueStore(name, history,
                        java.time.Duration.ofMillis(Json.lng(opts, "segment_interval_ms")))
                    : org.apache.kafka.streams.state.Stores.persistentVersionedKeyValueStore(name, history);
            builder = org.apache.kafka.streams.state.Stores.versionedKeyValueStoreBuilder(versionedSupplier, Serdes.Bytes(), Serdes.ByteArray());
            supplier = null;
        } else switch (type) {
            case StoreTypes.KEY_VALUE:
                supplier = rocks ? org.apache.kafka.streams.state.Stores.persistentKeyValueStore(name)
                    : org.apache.kafka.streams.state.Stores.inMemoryKeyValueStore(name);
                builder = org.apache.kafka.streams.state.Stores.keyValueStoreBuilder(supplier, Serdes.Bytes(), Serdes.ByteArray());
                break;
            case StoreTypes.TIMESTAMPED_KV:
                supplier = rocks ? org.apache.kafka.streams.state.Stores.persistentTimestampedKeyValueStore(name)
                    : org.apache.kafka.streams.state.Stores.inMemoryKeyValueStore(name);
                builder = org.apache.kafka.streams.state.Stores.timestampedKeyValueStoreBuilder(supplier, Serdes.Bytes(), Serdes.ByteArray());
                break;
            case StoreTypes.TIMESTAMPED_KV_WITH_HEADERS:
                supplier = rocks ? (KeyValueBytesStoreSupplier) K.invoke(K.method(org.apache.kafka.streams.state.Stores.class,
                    "persistentTimestampedKeyValueStoreWithHeaders", String.class), null, name)
                    : org.apache.kafka.streams.state.Stores.inMemoryKeyValueStore(name);
                builder = (StoreBuilder) K.invoke(K.method(org.apache.kafka.streams.state.Stores.class,
                    "timestampedKeyValueStoreWithHeadersBuilder", KeyValueBytesStoreSupplier.class,
                    org.apache.kafka.common.serialization.Serde.class, org.apache.kafka.common.serialization.Serde.class),
                    null, supplier, Serdes.Bytes(), Serdes.ByteArray());
                break;
            default:
                throw StoreTypes.unknown(type, "Stores.open: the key-value builders");
        }
        return builder;
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
    @SuppressWarnings({"unchecked", "rawtypes"})
    private static void bindLayers(final Handle h) throws ReflectiveOperationException {
        // The operations take and answer the stored bytes (a timestamped value is [timestamp][value]), which is
        // the interface of the layers under the metered (typed) store.
        if (VERSIONED_TYPES.contains(h.type)) {
            // The typed (metered) versioned store over Bytes and byte[]: its values are the user's bytes.
            h.versioned = (VersionedKeyValueStore<Bytes, byte[]>) h.root;
            // MeteredVersionedKeyValueStore.get rebuilds the record from a ValueAndTimestamp and drops validTo;
            // reads go to the innermost store (RocksDBVersionedStore), whose records carry it.
            StateStore inner = h.root;
            while (inner instanceof WrappedStateStore) {
                inner = ((WrappedStateStore<?, ?, ?>) inner).wrapped();
            }
            // Below the change-logging layer a VersionedKeyValueToBytesStoreAdapter holds the RocksDBVersionedStore.
            Object innermost = inner;
            if (!(innermost instanceof VersionedKeyValueStore)) {
                final java.lang.reflect.Field f = innermost.getClass().getDeclaredField("inner");
                f.setAccessible(true);
                innermost = f.get(innermost);
            }
            h.versionedInner = (VersionedKeyValueStore<Bytes, byte[]>) innermost;
        } else if (isWindow(h.type)) {
            h.window = (WindowStore<Bytes, byte[]>) ((WrappedStateStore) h.root).wrapped();
        } else if (Sessions.TYPES.contains(h.type)) {
            h.session = (org.apache.kafka.streams.state.SessionStore<Bytes, byte[]>) ((WrappedStateStore) h.root).wrapped();
        } else {
            h.bytes = (KeyValueStore<Bytes, byte[]>) ((WrappedStateStore) h.root).wrapped();
        }
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

    /** The key-value bytes store of a handle; an operation of one family sent to a store of another is refused (OPS-2). */
    private static KeyValueStore<Bytes, byte[]> kv(final Handle h) {
        if (h.bytes == null) {
            throw new Json.InputError("handle", "store " + h.name + " is a " + h.type + " store, not a key-value store");
        }
        return h.bytes;
    }

    private static VersionedKeyValueStore<Bytes, byte[]> versioned(final Handle h) {
        if (h.versioned == null) {
            throw new Json.InputError("handle", "store " + h.name + " is a " + h.type + " store, not a versioned store");
        }
        return h.versioned;
    }

    private static JsonNode versionedRecord(final VersionedRecord<byte[]> r) {
        if (r == null) {
            return NullNode.instance;
        }
        final ObjectNode out = obj();
        out.set("value", hexNode(r.value()));
        out.put("timestamp", r.timestamp());
        out.set("valid_to", r.validTo().isPresent() ? Json.F.numberNode(r.validTo().get()) : NullNode.instance);
        return out;
    }

    private static WindowStore<Bytes, byte[]> window(final Handle h) {
        if (h.window == null) {
            throw new Json.InputError("handle", "store " + h.name + " is a " + h.type + " store, not a window store");
        }
        return h.window;
    }

    /** Stores.persistent*WindowStore checks the parameters (and picks Kafka's default segment interval); a given
     *  segment interval is passed to the same supplier class through its constructor. */
    @SuppressWarnings("rawtypes")
    static StoreBuilder windowBuilder(final String type, final String name, final boolean rocks, final JsonNode opts) {
        final java.time.Duration retention = java.time.Duration.ofMillis(Json.lng(opts, "retention_ms"));
        final java.time.Duration size = java.time.Duration.ofMillis(Json.lng(opts, "window_size_ms"));
        final boolean duplicates = Json.bool(opts, "retain_duplicates", false);
        if (opts.has("segment_interval_ms") && !opts.get("segment_interval_ms").isNull()) {
            checkableSegmentInterval(Json.lng(opts, "segment_interval_ms"));
        }
        final String kind;
        switch (type) {
            case StoreTypes.WINDOW: kind = ""; break;
            case StoreTypes.TIMESTAMPED_WINDOW: kind = "Timestamped"; break;
            case StoreTypes.TIMESTAMPED_WINDOW_WITH_HEADERS: kind = "TimestampedWithHeaders"; break;
            case StoreTypes.TIME_ORDERED_WINDOW_WITH_HEADERS: return timeOrderedWithHeadersBuilder(name, rocks, opts, retention, size, duplicates);
            default: throw StoreTypes.unknown(type, "Stores.windowBuilder");
        }
        org.apache.kafka.streams.state.WindowBytesStoreSupplier supplier;
        if (rocks) {
            final String method = kind.equals("TimestampedWithHeaders") ? "persistentTimestampedWindowStoreWithHeaders"
                : "persistent" + kind + "WindowStore";
            supplier = (org.apache.kafka.streams.state.WindowBytesStoreSupplier) K.invoke(K.method(
                org.apache.kafka.streams.state.Stores.class, method, String.class, java.time.Duration.class,
                java.time.Duration.class, boolean.class), null, name, retention, size, duplicates);
            if (opts.has("segment_interval_ms") && !opts.get("segment_interval_ms").isNull() && kind.equals("TimestampedWithHeaders")) {
                // The header-aware window store has its own supplier class (the enum value is refused by the plain one).
                supplier = (org.apache.kafka.streams.state.WindowBytesStoreSupplier) K.construct("RocksDbWindowHeadersBytesStoreSupplier",
                    K.t(String.class, long.class, long.class, long.class, boolean.class), name, retention.toMillis(),
                    Json.lng(opts, "segment_interval_ms"), size.toMillis(), duplicates);
            } else if (opts.has("segment_interval_ms") && !opts.get("segment_interval_ms").isNull()) {
                final Class<?> types = K.cls("RocksDbWindowBytesStoreSupplier$WindowStoreTypes");
                final String constant = kind.isEmpty() ? "DEFAULT_WINDOW_STORE"
                    : kind.equals("Timestamped") ? "TIMESTAMPED_WINDOW_STORE" : "TIMESTAMPED_WINDOW_STORE_WITH_HEADERS";
                supplier = (org.apache.kafka.streams.state.WindowBytesStoreSupplier) K.construct("RocksDbWindowBytesStoreSupplier",
                    K.t(String.class, long.class, long.class, long.class, boolean.class, types), name, retention.toMillis(),
                    Json.lng(opts, "segment_interval_ms"), size.toMillis(), duplicates,
                    Enum.valueOf(types.asSubclass(Enum.class), constant));
            }
        } else {
            supplier = org.apache.kafka.streams.state.Stores.inMemoryWindowStore(name, retention, size, duplicates);
        }
        final String builder = kind.equals("TimestampedWithHeaders") ? "timestampedWindowStoreWithHeadersBuilder"
            : kind.equals("Timestamped") ? "timestampedWindowStoreBuilder" : "windowStoreBuilder";
        return (StoreBuilder) K.invoke(K.method(org.apache.kafka.streams.state.Stores.class, builder,
            org.apache.kafka.streams.state.WindowBytesStoreSupplier.class, org.apache.kafka.common.serialization.Serde.class,
            org.apache.kafka.common.serialization.Serde.class), null, supplier, Serdes.Bytes(), Serdes.ByteArray());
    }

    /** WS-2, WIN-16: Kafka's public Stores takes no segment interval for a window store; the internal supplier
     *  that does (RocksDbWindowBytesStoreSupplier's constructor, given Kafka's own default by Stores) checks none, so
     *  an interval below 1 has no Kafka refusal to reach: it is unsupported, never answered by what the unchecked
     *  supplier then does (a division by zero in the segments). In-memory window stores have no segments. */
    static void checkableSegmentInterval(final long interval) {
        if (interval < 1) {
            throw new K.Unavailable("Kafka's Stores takes no segment interval for a window store and the internal "
                + "RocksDbWindowBytesStoreSupplier that takes one checks none (Stores only ever gives it "
                + "max(retention / 2, 60000)): a segment interval of " + interval + " has no Kafka check to answer");
        }
    }

    /** The time-ordered header-aware window store as Kafka's emit-final windowed aggregation builds it
     *  (RocksDbIndexedTimeOrderedWindowBytesStoreWithHeadersSupplier.create, no index, under
     *  Stores.timestampedWindowStoreWithHeadersBuilder). Kafka has it on RocksDB only and picks its segment interval
     *  itself (create takes none): an in-memory store or a given interval is not expressible, so unsupported. */
    @SuppressWarnings("rawtypes")
    private static StoreBuilder timeOrderedWithHeadersBuilder(final String name, final boolean rocks, final JsonNode opts,
                                                              final java.time.Duration retention,
                                                              final java.time.Duration size, final boolean duplicates) {
        if (!rocks) {
            throw new K.Unavailable("Kafka has no in-memory time-ordered window store");
        }
        if (opts.has("segment_interval_ms") && !opts.get("segment_interval_ms").isNull()) {
            throw new K.Unavailable("RocksDbIndexedTimeOrderedWindowBytesStoreWithHeadersSupplier.create takes no segment interval");
        }
        final Object supplier = K.call("RocksDbIndexedTimeOrderedWindowBytesStoreWithHeadersSupplier", "create",
            K.t(String.class, java.time.Duration.class, java.time.Duration.class, boolean.class, boolean.class),
            name, retention, size, duplicates, false);
        return (StoreBuilder) K.invoke(K.method(org.apache.kafka.streams.state.Stores.class,
            "timestampedWindowStoreWithHeadersBuilder", org.apache.kafka.streams.state.WindowBytesStoreSupplier.class,
            org.apache.kafka.common.serialization.Serde.class, org.apache.kafka.common.serialization.Serde.class),
            null, supplier, Serdes.Bytes(), Serdes.ByteArray());
    }

    private static ObjectNode windowed(final KeyValueIterator<Windowed<Bytes>, byte[]> it) {
        final ArrayNode entries = Json.arr();
        try (it) {
            while (it.hasNext()) {
                final KeyValue<Windowed<Bytes>, byte[]> kv = it.next();
                entries.add(Json.arr().add(hexNode(kv.key.key().get())).add(kv.key.window().start()).add(hexNode(kv.value)));
            }
        }
        return obj().set("entries", entries);
    }

    private static Iter iterator(final JsonNode in) {
        final String id = Json.str(in, "iterator");
        final Iter it = ITERATORS.get(id);
        if (it == null) {
            throw new Json.InputError("iterator", "no open iterator " + id);
        }
        return it;
    }

    private static Bytes key(final JsonNode in, final String name) {
        final byte[] k = hexOrNull(in, name);
        return k == null ? null : Bytes.wrap(k);
    }

    private static Bytes optKey(final JsonNode in, final String name) {
        return in.has(name) ? key(in, name) : null;
    }

    private static ObjectNode drain(final KeyValueIterator<Bytes, byte[]> it) {
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
        final String family = family(type);
        switch (family) {
            case StoreTypes.FAMILY_WINDOW:
            case StoreTypes.FAMILY_SESSION:
                return true;
            case StoreTypes.FAMILY_KEY_VALUE:
            case StoreTypes.FAMILY_VERSIONED:
                return false;
            default:
                throw StoreTypes.unknown(family, "Stores.segmented");
        }
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
    private static ObjectNode getTyped(final JsonNode in) {
        final Handle h = handle(in);
        kv(h);  // a key-value operation: refused on a store of another family
        final Bytes key = key(in, "key");
        final Object typed = ((KeyValueStore<Bytes, Object>) h.root).get(key);
        final ObjectNode out = obj();
        out.put("found", typed != null);
        if (typed == null) {
            if (h.type.equals("kv")) {
                out.putNull("value");  // the plain facade answers the (null) stored bytes as they are
            }
            return out;
        }
        final Set<String> fields = new TreeSet<>();
        if (in.has("fields") && in.get("fields").isArray()) {
            in.get("fields").forEach(f -> fields.add(f.asText()));
        } else {
            fields.add("value");
            fields.add("timestamp");
            fields.add("headers");
        }
        if (typed instanceof byte[]) {
            if (fields.contains("value")) {
                out.set("value", hexNode((byte[]) typed));
            }
        } else if (typed instanceof ValueAndTimestamp) {
            final ValueAndTimestamp<byte[]> v = (ValueAndTimestamp<byte[]>) typed;
            if (fields.contains("value")) {
                out.set("value", hexNode(v.value()));
            }
            if (fields.contains("timestamp")) {
                out.put("timestamp", v.timestamp());
            }
        } else {
            final org.apache.kafka.streams.state.ValueTimestampHeaders<byte[]> v =
                (org.apache.kafka.streams.state.ValueTimestampHeaders<byte[]>) typed;
            if (fields.contains("value")) {
                out.set("value", hexNode(v.value()));
            }
            if (fields.contains("timestamp")) {
                out.put("timestamp", v.timestamp());
            }
            if (fields.contains("headers")) {
                out.set("headers", Json.headersJson(v.headers()));
            }
        }
        return out;
    }

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
