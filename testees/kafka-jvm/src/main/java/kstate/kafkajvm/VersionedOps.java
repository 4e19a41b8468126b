package kstate.kafkajvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.state.VersionedBytesStoreSupplier;
import org.apache.kafka.streams.state.VersionedKeyValueStore;
import org.apache.kafka.streams.state.VersionedRecord;

import java.time.Duration;
import java.util.List;

import static kstate.kafkajvm.Json.hexNode;
import static kstate.kafkajvm.Json.lng;
import static kstate.kafkajvm.Json.obj;
import static kstate.kafkajvm.K.t;
import static kstate.kafkajvm.Main.register;
import static kstate.kafkajvm.Main.registerUnsupported;

/** The KIP-889 versioned store's keys, names, configuration and per-key procedure (VER-1, VER-2, VER-22..33,
 *  VS-5, VS-13, VS-14), each answered by Kafka's RocksDBVersionedStore and its LogicalKeyValueSegments (package
 *  private: reflection, as K does). The ops with no Kafka code behind them answer unsupported, saying why. */
final class VersionedOps {
    private static final String STORE = "RocksDBVersionedStore";

    private VersionedOps() { }

    static void registerAll() {
        // LogicalKeyValueSegment's key prefix: PrefixKeyFormatter over serializeLongToBytes(segment id).
        register("versioned.segment_key", in -> {
            final Class<?> segment = K.cls("LogicalKeyValueSegment");
            final byte[] prefix = (byte[]) K.invoke(K.method(segment, "serializeLongToBytes", long.class), null, lng(in, "segment_id"));
            final Object formatter = K.construct("LogicalKeyValueSegment$PrefixKeyFormatter", t(byte[].class), (Object) prefix);
            return obj().set("bytes", hexNode((byte[]) K.callOn(formatter, "addPrefix", t(byte[].class), (Object) Json.hex(in, "key"))));
        });
        registerUnsupported("versioned.split_segment_key", "kit-only: Kafka never splits a physical key into a segment id and a key (its "
                + "LogicalKeyValueSegment only adds and strips its own known prefix)");
        registerUnsupported("versioned.version_segment", "kit-only: Kafka has no function for a version's segment; RocksDBVersionedStore's "
                + "put places versions inline (reached through versioned.key_scenario)");
        registerUnsupported("versioned.segment_versions", "kit-only: Kafka's SegmentValue has no checked read of every version, tombstones "
                + "included (findAll skips tombstones; reached through versioned.segment_scenario)");
        // The names the store Kafka's public Stores builds gives its reserved latest-value segment and its regular
        // segments (LogicalKeyValueSegments.segmentName; it refuses a negative id other than the reserved one).
        register("versioned.segment_name", in -> {
            final long interval = lng(in, "segment_interval");
            final Object store = storeOf(supplier(Json.str(in, "store"), interval, interval));
            final long id = lng(in, "segment_id");
            if (id == -1L) {
                return obj().put("name", (String) K.callOn(field(store, "latestValueStore"), "name", t()));
            }
            return obj().put("name", (String) K.callOn(field(store, "segmentStores"), "segmentName", t(long.class), id));
        });
        // Stores.persistentVersionedKeyValueStore checks the retention and the interval (and picks the default);
        // the grace period is the one the store it builds keeps.
        register("versioned.store_config", in -> {
            final VersionedBytesStoreSupplier s = supplier("store", lng(in, "history_retention"),
                in.has("segment_interval") && !in.get("segment_interval").isNull() ? lng(in, "segment_interval") : null);
            final Object store = storeOf(s);
            return obj().put("history_retention", s.historyRetentionMs()).put("segment_interval", (long) K.callOn(s, "segmentIntervalMs", t()))
                .put("grace_period", (long) field(store, "gracePeriod"));
        });
        register("versioned.key_scenario", VersionedOps::keyScenario);
        // The store's own state, read where RocksDBVersionedStore keeps it (neither is a Kafka method, VS-5/VS-13).
        register("versioned_store.stream_time", in ->
            obj().put("stream_time", (long) field(rocks(Stores.handle(in)), "observedStreamTime")));
        register("versioned_store.segments", in -> {
            final Object segments = field(rocks(Stores.handle(in)), "segmentStores");
            final ArrayNode ids = Json.arr();
            for (final Object segment : (List<?>) K.callOn(segments, "allSegments", t(boolean.class), true)) {
                ids.add((long) K.callOn(segment, "id", t()));
            }
            return obj().set("segments", ids);
        });
    }

    private static VersionedBytesStoreSupplier supplier(final String name, final long history, final Long interval) {
        return interval == null
            ? org.apache.kafka.streams.state.Stores.persistentVersionedKeyValueStore(name, Duration.ofMillis(history))
            : org.apache.kafka.streams.state.Stores.persistentVersionedKeyValueStore(name, Duration.ofMillis(history),
                Duration.ofMillis(interval));
    }

    /** The RocksDBVersionedStore the supplier's get() builds (inside its VersionedKeyValueToBytesStoreAdapter). */
    private static Object storeOf(final VersionedBytesStoreSupplier supplier) throws IllegalAccessException {
        return field(supplier.get(), "inner");
    }

    static Object field(final Object target, final String name) throws IllegalAccessException {
        return Changelog.field(target.getClass(), name).get(target);
    }

    private static Object rocks(final Stores.Handle h) {
        final Object inner = VersionedFamily.innerOrNull(h);
        if (inner == null || !K.cls(STORE).isInstance(inner)) {
            throw new Json.InputError("handle", "store " + h.name + " is a " + h.type + " store, not a versioned store");
        }
        return inner;
    }

    /** versioned.key_scenario: one key of a running RocksDBVersionedStore (Kafka's public Stores, the given retention
     *  and interval, no logging or cache), each step on the store itself; after each step the observed stream time
     *  and the key's rows as the physical store holds them, in its order. */
    private static ObjectNode keyScenario(final JsonNode in) throws Exception {
        final JsonNode steps = Json.field(in, "steps");
        if (!steps.isArray()) {
            throw new Json.InputError("steps", "a list");
        }
        final byte[] key = Json.hex(in, "key");
        final ObjectNode options = obj().put("history_retention_ms", lng(in, "history_retention"));
        if (in.has("segment_interval") && !in.get("segment_interval").isNull()) {
            options.put("segment_interval_ms", lng(in, "segment_interval"));
        }
        final ObjectNode open = obj().put("store_type", "versioned_kv").put("backend", "rocksdb").put("logging", false)
            .put("caching", false).put("name", "store");
        open.set("options", options);
        final String handle = Main.OPS.get("store.open").apply(open).get("handle").textValue();
        try {
            final Stores.Handle h = Stores.handle(obj().put("handle", handle));
            @SuppressWarnings("unchecked")
            final VersionedKeyValueStore<Bytes, byte[]> store = (VersionedKeyValueStore<Bytes, byte[]>) rocks(h);
            final ArrayNode results = Json.arr();
            for (final JsonNode step : steps) {
                if (!step.isObject()) {
                    throw new Json.InputError("steps", "a step must be an object");
                }
                final ObjectNode fields = Main.capture(() -> keyStep(store, Bytes.wrap(key), step));
                fields.put("observed_stream_time", (long) field(store, "observedStreamTime"));
                fields.set("rows", rows(store, key));
                results.add(fields);
            }
            return obj().set("steps", results);
        } finally {
            Main.OPS.get("store.close").apply(obj().put("handle", handle));
        }
    }

    private static ObjectNode keyStep(final VersionedKeyValueStore<Bytes, byte[]> store, final Bytes key, final JsonNode step) {
        final String kind = step.path("op").asText("");
        switch (kind) {
            case "put":
                return obj().put("result", store.put(key, Json.hexOrNull(step, "value"), lng(step, "timestamp")));
            case "delete":
                return obj().set("result", record(store.delete(key, lng(step, "timestamp"))));
            case "get":
                return obj().set("result", record(store.get(key)));
            case "get_as_of":
                return obj().set("result", record(store.get(key, lng(step, "timestamp"))));
            default:
                throw new Json.InputError("op", "unknown store step " + kind);
        }
    }

    private static JsonNode record(final VersionedRecord<byte[]> r) {
        if (r == null) {
            return NullNode.instance;
        }
        final ObjectNode out = obj().set("value", hexNode(r.value()));
        out.put("timestamp", r.timestamp());
        out.set("valid_to", r.validTo().isPresent() ? Json.F.numberNode(r.validTo().get()) : NullNode.instance);
        return out;
    }

    /** The key's physical rows [segment id int64][key] -> row, in the physical store's order: each regular segment
     *  ascending (LogicalKeyValueSegments.allSegments), then the reserved latest-value segment -1 (0xff.. sorts last);
     *  each key as the segment's PrefixKeyFormatter makes it, each row as the segment's get answers it. */
    private static ArrayNode rows(final Object store, final byte[] key) throws IllegalAccessException {
        final ArrayNode rows = Json.arr();
        final List<Object> segments = new java.util.ArrayList<>(
            (List<?>) K.callOn(field(store, "segmentStores"), "allSegments", t(boolean.class), true));
        segments.add(field(store, "latestValueStore"));
        for (final Object segment : segments) {
            final byte[] row = (byte[]) K.callOn(segment, "get", t(Bytes.class), Bytes.wrap(key));
            if (row != null) {
                final byte[] physicalKey = (byte[]) K.callOn(field(segment, "prefixKeyFormatter"), "addPrefix", t(byte[].class), (Object) key);
                rows.add(Json.arr().add(hexNode(physicalKey)).add(hexNode(row)));
            }
        }
        return rows;
    }
}
