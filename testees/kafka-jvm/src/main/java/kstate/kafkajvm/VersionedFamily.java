package kstate.kafkajvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import kstate.storetypes.StoreTypes;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.internals.InternalTopicConfig;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.VersionedKeyValueStore;
import org.apache.kafka.streams.state.VersionedRecord;
import org.apache.kafka.streams.state.internals.WrappedStateStore;

import java.util.List;
import java.util.Map;

import static kstate.kafkajvm.Json.hexNode;
import static kstate.kafkajvm.Json.hexOrNull;
import static kstate.kafkajvm.Json.obj;
import static kstate.kafkajvm.Main.register;
import static kstate.kafkajvm.Stores.key;

/** Versioned key-value stores (spec/versioned-store.md, VS-*): {@code versioned_kv}, built by Kafka's
 *  Stores.persistentVersionedKeyValueStore (RocksDB only) and versionedKeyValueStoreBuilder, and the
 *  {@code versioned_store.*} operations. Writes go through the metered store (its values are the user's bytes),
 *  reads to the innermost RocksDBVersionedStore, whose records carry validTo. */
final class VersionedFamily extends StoreFamily {
    private VersionedFamily() {
        super(StoreTypes.FAMILY_VERSIONED, TYPES);
    }

    private static final List<String> TYPES = List.of(StoreTypes.VERSIONED_KV);

    @Override
    void requireOffered(final String type) {
        if (type.equals(StoreTypes.VERSIONED_KV_WITH_HEADERS) && java.util.Arrays.stream(org.apache.kafka.streams.state.Stores.class.getMethods())
                .noneMatch(m -> m.getName().startsWith("persistentVersionedKeyValueStoreWithHeaders"))) {
            // 4.3.1 and 4.4.0: the release, not the testee, lacks the type.
            throw new K.Unavailable("this Kafka release has no header-aware versioned store (its Stores has no "
                + "persistentVersionedKeyValueStoreWithHeaders)");
        }
        super.requireOffered(type);
    }

    /** Kafka's Stores builds a versioned store on RocksDB only (persistentVersionedKeyValueStore): the in-memory
     *  versioned store is a store type Kafka lacks, not an operation the testee leaves out (OPS-1). */
    @Override
    List<String> onlyBackends() {
        return List.of("rocksdb");
    }

    @Override
    JsonNode openOptions(final JsonNode options, final String type, final String backend) {
        final JsonNode vopts = options == null ? obj() : options;
        Json.onlyOptions(vopts, "a versioned store takes history_retention_ms and segment_interval_ms",
            "history_retention_ms", "segment_interval_ms");
        Json.lng(vopts, "history_retention_ms");
        Json.lng(vopts, "segment_interval_ms", 0);
        if (!backend.equals("rocksdb")) {
            throw new K.Unavailable("Kafka has no in-memory versioned store (Stores.persistentVersionedKeyValueStore only)");
        }
        return vopts;
    }

    @Override
    @SuppressWarnings("rawtypes")
    StoreBuilder builder(final String type, final String name, final boolean rocks, final JsonNode opts) {
        final java.time.Duration history = java.time.Duration.ofMillis(Json.lng(opts, "history_retention_ms"));
        final org.apache.kafka.streams.state.VersionedBytesStoreSupplier versionedSupplier =
            opts.has("segment_interval_ms") && !opts.get("segment_interval_ms").isNull()
                ? org.apache.kafka.streams.state.Stores.persistentVersionedKeyValueStore(name, history,
                    java.time.Duration.ofMillis(Json.lng(opts, "segment_interval_ms")))
                : org.apache.kafka.streams.state.Stores.persistentVersionedKeyValueStore(name, history);
        return org.apache.kafka.streams.state.Stores.versionedKeyValueStoreBuilder(versionedSupplier, Serdes.Bytes(), Serdes.ByteArray());
    }

    /** The typed (metered) versioned store over Bytes and byte[] is the handle's root; the layer is the innermost
     *  RocksDBVersionedStore: MeteredVersionedKeyValueStore.get rebuilds the record from a ValueAndTimestamp and
     *  drops validTo. */
    @Override
    void bind(final Stores.Handle h) throws ReflectiveOperationException {
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
        h.layer = innermost;
    }

    @Override
    ObjectNode retentionOptions(final long retentionMs) {
        return obj().put("history_retention_ms", retentionMs);
    }

    @Override
    List<String> loggedWrites() {
        return List.of("put", "delete");
    }

    /** Kafka's only versioned store is on RocksDB. */
    @Override
    String loggingBackend() {
        return "rocksdb";
    }

    @Override
    void logWrite(final Stores.Handle h, final String operation, final ObjectNode write, final JsonNode in,
                  final ObjectNode out) throws Exception {
        write.put("timestamp", Json.lng(in, "timestamp"));
        Main.OPS.get("versioned_store." + operation).apply(write);
    }

    /** VersionedChangelogTopicConfig with the history retention (CL-15). */
    @Override
    @SuppressWarnings({"unchecked", "rawtypes"})
    InternalTopicConfig topicConfig(final String type, final String name, final String topic, final JsonNode in) {
        if (type.endsWith("with_headers")) {
            throw new K.Unavailable("this Kafka release has no header-aware versioned store");
        }
        final long history = Json.lng(in, "history_retention_ms");
        StoreBuilder builder = org.apache.kafka.streams.state.Stores.versionedKeyValueStoreBuilder(
            org.apache.kafka.streams.state.Stores.persistentVersionedKeyValueStore(name, java.time.Duration.ofMillis(history)),
            Serdes.Bytes(), Serdes.ByteArray());
        builder = Changelog.withLogConfig(builder, in);
        return (InternalTopicConfig) K.construct("org.apache.kafka.streams.processor.internals.VersionedChangelogTopicConfig",
            K.t(String.class, Map.class, long.class), topic, builder.logConfig(), history);
    }

    /** RocksDBVersionedStore.restoreBatch puts each record at its own timestamp. */
    @Override
    boolean restoreKeepsTimestamp() {
        return true;
    }

    /** The typed (metered) versioned store of a handle; refused on a store of another family (OPS-2). */
    @SuppressWarnings("unchecked")
    static VersionedKeyValueStore<Bytes, byte[]> store(final Stores.Handle h) {
        if (!(h.family instanceof VersionedFamily)) {
            throw notOf(h, "versioned");
        }
        return (VersionedKeyValueStore<Bytes, byte[]>) h.root;
    }

    /** The innermost store (Kafka's RocksDBVersionedStore) of a handle, null for a store of another family. */
    @SuppressWarnings("unchecked")
    static VersionedKeyValueStore<Bytes, byte[]> innerOrNull(final Stores.Handle h) {
        return h.family instanceof VersionedFamily ? (VersionedKeyValueStore<Bytes, byte[]>) h.layer : null;
    }

    @Override
    void registerOps() {
        register("versioned_store.put", in -> {
            final VersionedKeyValueStore<Bytes, byte[]> v = store(Stores.handle(in));
            if (in.has("headers") && !in.get("headers").isNull() && in.get("headers").size() > 0) {
                throw new Json.InputError("headers", "a versioned_kv store takes no headers");
            }
            return obj().put("valid_to", v.put(key(in, "key"), hexOrNull(in, "value"), Json.lng(in, "timestamp")));
        });
        register("versioned_store.get", in -> {
            final Stores.Handle vh = Stores.handle(in);
            store(vh);
            final VersionedKeyValueStore<Bytes, byte[]> v = innerOrNull(vh);
            final boolean asOf = in.has("as_of") && !in.get("as_of").isNull();
            return obj().set("record", record(asOf ? v.get(key(in, "key"), Json.lng(in, "as_of")) : v.get(key(in, "key"))));
        });
        register("versioned_store.delete", in -> {
            final VersionedKeyValueStore<Bytes, byte[]> v = store(Stores.handle(in));
            return obj().set("record", record(v.delete(key(in, "key"), Json.lng(in, "timestamp"))));
        });
        register("versioned_store.get_versions", VersionedFamily::getVersions);
        // RocksDbVersionedKeyValueBytesStoreSupplier.defaultSegmentInterval is the function itself: Stores refuses a
        // negative history retention before it, the operation (VER-23) asks for the function's answer.
        register("versioned.default_segment_interval", in -> obj().put("segment_interval", (long) K.invoke(
            K.method(K.cls("RocksDbVersionedKeyValueBytesStoreSupplier"), "defaultSegmentInterval", long.class),
            null, Json.lng(in, "history_retention"))));
    }

    /** versioned_store.get_versions: a key's versions through IQv2's MultiVersionedKeyQuery. */
    private static ObjectNode getVersions(final JsonNode in) {
        final VersionedKeyValueStore<Bytes, byte[]> v = store(Stores.handle(in));
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
                records.add(record(it.next()));
            }
        }
        return obj().set("records", records);
    }

    private static JsonNode record(final VersionedRecord<byte[]> r) {
        if (r == null) {
            return NullNode.instance;
        }
        final ObjectNode out = obj();
        out.set("value", hexNode(r.value()));
        out.put("timestamp", r.timestamp());
        out.set("valid_to", r.validTo().isPresent() ? Json.F.numberNode(r.validTo().get()) : NullNode.instance);
        return out;
    }
}
