package kstate.kafkajvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.query.Position;
import org.rocksdb.ColumnFamilyHandle;

import java.lang.reflect.Field;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static kstate.kafkajvm.Json.hex;
import static kstate.kafkajvm.Json.hexNode;
import static kstate.kafkajvm.Json.obj;
import static kstate.kafkajvm.K.t;
import static kstate.kafkajvm.Main.register;

/** KIP-1035's offsets column family (OFF-1..3, OFF-9, OFF-10): entries as RocksDBStore's column family accessor
 *  writes them. The accessor runs against a {@code DBAccessor} that records its puts and deletes instead of a
 *  database, so the keys, the status and offset values and the position bytes are Kafka's own. 4.3 commits
 *  offsets and position in two calls, 4.4 in one; both are reached. */
final class OffsetsFamily {
    private static final String ACCESSOR = "RocksDBStore$SingleColumnFamilyAccessor";
    private static final String DB_ACCESSOR = "RocksDBStore$DBAccessor";

    private OffsetsFamily() { }

    static void registerAll() {
        register("offsets.encode_entry", OffsetsFamily::encodeEntry);
        register("offsets.decode_entry", OffsetsFamily::decodeEntry);
    }

    /** One recorded write of the accessor: a put (value) or a delete (value null). */
    private static final class Write {
        final byte[] key;
        final byte[] value;

        Write(final byte[] key, final byte[] value) {
            this.key = key;
            this.value = value;
        }
    }

    /** A {@code DBAccessor} whose writes are recorded and whose reads find nothing (an empty offsets family). */
    private static Object recordingDb(final List<Write> writes) {
        final Class<?> type = K.cls(DB_ACCESSOR);
        final InvocationHandler handler = (proxy, method, args) -> {
            switch (method.getName()) {
                case "put":
                    writes.add(new Write((byte[]) args[1], (byte[]) args[2]));
                    return null;
                case "delete":
                    writes.add(new Write((byte[]) args[1], null));
                    return null;
                case "get":
                    return null;
                case "mergeUncommittedPositionInto":
                case "commitStagedWrites":
                case "rollbackStagedWrites":
                case "updatePosition":
                case "reset":
                case "close":
                case "flush":
                    return null;
                default:
                    throw new UnsupportedOperationException("the recording DBAccessor has no " + method.getName());
            }
        };
        return Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, handler);
    }

    private static Object accessor() {
        final Object store = K.construct("RocksDBStore", t(String.class, String.class), "store", "rocksdb");
        return K.construct(ACCESSOR, t(K.cls("RocksDBStore"), ColumnFamilyHandle.class, ColumnFamilyHandle.class),
            store, null, null);
    }

    private static Object field(final Object accessor, final String name) {
        Class<?> c = accessor.getClass();
        while (c != null) {
            try {
                final Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(accessor);
            } catch (NoSuchFieldException e) {
                c = c.getSuperclass();
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
        }
        throw new K.Unavailable("this Kafka release's column family accessor has no field " + name);
    }

    /** Commit through the accessor: 4.4's {@code commit(db, position, offsets)}, else 4.3's two commits. */
    private static void commit(final Object accessor, final Object db, final Position position,
                               final Map<TopicPartition, Long> offsets) {
        final Class<?> dbType = K.cls(DB_ACCESSOR);
        try {
            K.callOn(accessor, "commit", t(dbType, Position.class, Map.class), db, position, offsets);
        } catch (K.Unavailable e) {
            K.callOn(accessor, "commit", t(dbType, Map.class), db, offsets);
            K.callOn(accessor, "commit", t(dbType, Position.class), db, position);
        }
    }

    private static ObjectNode entry(final Write write) {
        return obj().<ObjectNode>set("key", hexNode(write.key)).set("value", hexNode(write.value));
    }

    private static ObjectNode encodeEntry(final JsonNode in) throws Exception {
        final Object accessor = accessor();
        final List<Write> writes = new ArrayList<>();
        final Object db = recordingDb(writes);
        final byte[] positionKey = (byte[]) field(accessor, "positionKey");
        if (in.has("status")) {
            final String status = Json.str(in, "status");
            if (status.equals("open")) {
                // open() on an empty family writes the open status before it reads the position.
                K.callOn(accessor, "open", t(K.cls(DB_ACCESSOR), boolean.class), db, false);
                return entry(writes.get(0));
            }
            if (status.equals("closed")) {
                // close() writes the closed status and then closes the family's handle, which the recording
                // accessor has none of: the bytes it writes are its statusKey and closedState.
                return entry(new Write((byte[]) field(accessor, "statusKey"), (byte[]) field(accessor, "closedState")));
            }
            throw new Json.InputError("status", "'open' or 'closed'");
        }
        if (in.has("position")) {
            final ObjectNode serialized = Main.OPS.get("position.serialize").apply(obj().set("position", in.get("position")));
            final Position position = (Position) K.call("PositionSerde", "deserialize", t(ByteBuffer.class),
                ByteBuffer.wrap(hex(serialized, "bytes")));
            commit(accessor, db, position, Map.of(new TopicPartition("unused", 0), 0L));
            return entry(writes.stream().filter(w -> Arrays.equals(w.key, positionKey)).reduce((a, b) -> b)
                .orElseThrow(() -> new IllegalStateException("commit wrote no position")));
        }
        final long partition = Json.lng(in, "partition");
        if (partition < Integer.MIN_VALUE || partition > Integer.MAX_VALUE) {
            throw new Json.InputError("partition", "outside the Java int range");
        }
        final JsonNode offset = Json.field(in, "offset");
        final Map<TopicPartition, Long> offsets = new HashMap<>();
        offsets.put(new TopicPartition(Json.str(in, "topic"), (int) partition),
            offset.isNull() ? null : Json.asLong(offset, "offset"));
        commit(accessor, db, Position.emptyPosition(), offsets);
        return entry(writes.stream().filter(w -> !Arrays.equals(w.key, positionKey)).findFirst()
            .orElseThrow(() -> new IllegalStateException("commit wrote no offset")));
    }

    private static ObjectNode decodeEntry(final JsonNode in) throws Exception {
        final Object accessor = accessor();
        final byte[] key = hex(in, "key");
        final byte[] value = hex(in, "value");
        final Serdes.LongSerde longSerde = (Serdes.LongSerde) field(accessor, "longSerde");
        if (Arrays.equals(key, (byte[]) field(accessor, "statusKey"))) {
            final long decoded = longSerde.deserializer().deserialize(null, value);
            final String status = Arrays.equals(value, (byte[]) field(accessor, "openState")) ? "open"
                : Arrays.equals(value, (byte[]) field(accessor, "closedState")) ? "closed" : "unknown";
            return obj().put("kind", "status").put("status", status).put("value", decoded);
        }
        if (Arrays.equals(key, (byte[]) field(accessor, "positionKey"))) {
            // As open() reads it: PositionSerde.deserialize over the stored bytes.
            final ObjectNode position = Main.OPS.get("position.deserialize").apply(obj().set("bytes", hexNode(value)));
            return obj().put("kind", "position").<ObjectNode>set("position", position.get("position"))
                .set("bytes_consumed", position.get("bytes_consumed"));
        }
        // As getCommittedOffset reads it: the key is TopicPartition.toString() in UTF-8, the value a long.
        final long offset = longSerde.deserializer().deserialize(null, value);
        final String topicPartition = new org.apache.kafka.common.serialization.StringDeserializer().deserialize(null, key);
        return obj().put("kind", "offset").put("topic_partition", topicPartition).put("offset", offset);
    }
}
