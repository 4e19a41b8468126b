package kstate.kafkajvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.streams.query.Position;
import org.apache.kafka.streams.processor.StateStore;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

import static kstate.kafkajvm.Json.hexNode;
import static kstate.kafkajvm.Json.obj;
import static kstate.kafkajvm.K.t;
import static kstate.kafkajvm.Main.register;

/** Restoring changelog records and the IQ consistency headers (CL-9..CL-13, CL-18, VS-27), and the header section
 *  of a v2 record (HDR-1, HDR-3, HDR-11..13), each through Kafka's class: StateManagerUtil.converterForStore on the
 *  store Kafka's builder makes, ChangelogRecordDeserializationHelper, DefaultRecord. */
final class ChangelogOps {
    private static final String HELPER = "org.apache.kafka.streams.processor.internals.ChangelogRecordDeserializationHelper";
    private static final String DEFAULT_RECORD = "org.apache.kafka.common.record.DefaultRecord";

    private ChangelogOps() { }

    static void registerAll() {
        register("changelog.restore_value", ChangelogOps::restoreValue);
        register("changelog.apply_consistency", in -> {
            final Position position = position(in.get("position"));
            final Headers headers = in.has("headers") && !in.get("headers").isNull() ? Json.headers(in, "headers") : new RecordHeaders();
            final ConsumerRecord<byte[], byte[]> record = Codecs.record(new byte[] {1}, null, 0L, headers);
            K.call(HELPER, "applyChecksAndUpdatePosition", t(ConsumerRecord.class, boolean.class, Position.class),
                record, Json.bool(in, "enabled", true), position);
            return obj().set("position", positionJson(position));
        });
        register("changelog.consistency_headers", in -> {
            // ProcessorContextImpl.logChange adds them (its private addVectorClockToHeaders): Kafka's version header
            // constant, then "c" with PositionSerde's bytes of the position.
            final Headers headers = new RecordHeaders();
            headers.add((Header) K.cls(HELPER).getField("CHANGELOG_VERSION_HEADER_RECORD_CONSISTENCY").get(null));
            headers.add((String) K.cls(HELPER).getField("CHANGELOG_POSITION_HEADER_KEY").get(null),
                ((ByteBuffer) K.call("PositionSerde", "serialize", t(Position.class), position(in.get("position")))).array());
            return obj().set("headers", Json.headersJson(headers));
        });
        // DefaultRecord writes the header section as the end of a record (writeTo) and reads it in readFrom
        // (the count, then its private readHeaders): the section is cut from a record with no key or value.
        register("record_v2.write_headers", in -> {
            final Headers h = Json.headers(in, "headers");
            final Header[] headers = h == null ? null : h.toArray();
            final ByteArrayOutputStream buffer = new ByteArrayOutputStream();
            K.call(DEFAULT_RECORD, "writeTo", t(DataOutputStream.class, int.class, long.class, ByteBuffer.class, ByteBuffer.class,
                Header[].class), new DataOutputStream(buffer), 0, 0L, null, null, headers);
            final byte[] record = buffer.toByteArray();
            final int body = (int) K.call(DEFAULT_RECORD, "sizeOfBodyInBytes", t(int.class, long.class, int.class, int.class,
                Header[].class), 0, 0L, -1, -1, headers);
            final int empty = (int) K.call(DEFAULT_RECORD, "sizeOfBodyInBytes", t(int.class, long.class, int.class, int.class,
                Header[].class), 0, 0L, -1, -1, new Header[0]);
            final int section = body - empty + 1;
            return obj().set("bytes", hexNode(Arrays.copyOfRange(record, record.length - section, record.length)));
        });
        register("record_v2.read_headers", in -> {
            final ByteBuffer buffer = ByteBuffer.wrap(Json.hex(in, "bytes"));
            final int count = (int) K.call("org.apache.kafka.common.utils.ByteUtils", "readVarint", t(ByteBuffer.class), buffer);
            if (count < 0) {
                // DefaultRecord.readFrom's own check of the count, before readHeaders.
                throw (RuntimeException) K.construct("org.apache.kafka.common.InvalidRecordException", t(String.class),
                    "Found invalid number of record headers " + count);
            }
            final Header[] headers = (Header[]) K.call(DEFAULT_RECORD, "readHeaders", t(ByteBuffer.class, int.class), buffer, count);
            return obj().<ObjectNode>set("headers", Json.headersJson(headers)).put("bytes_consumed", buffer.position());
        });
    }

    private static Position position(final JsonNode list) throws Exception {
        final ObjectNode in = obj();
        in.set("position", list == null ? Json.arr() : list);
        final byte[] bytes = Json.hex(Main.OPS.get("position.serialize").apply(in), "bytes");
        return (Position) K.call("PositionSerde", "deserialize", t(ByteBuffer.class), ByteBuffer.wrap(bytes));
    }

    private static JsonNode positionJson(final Position p) throws Exception {
        final ByteBuffer b = (ByteBuffer) K.call("PositionSerde", "serialize", t(Position.class), p);
        return Main.OPS.get("position.deserialize").apply(obj().set("bytes", hexNode(b.array()))).get("position");
    }

    /** The store type's store as Kafka's builder makes it (no logging, no cache), opened in the testee's task context;
     *  StateManagerUtil.converterForStore picks the converter the task's state manager registers for it. */
    @SuppressWarnings("unchecked")
    private static ObjectNode restoreValue(final JsonNode in) throws Exception {
        final String type = Json.str(in, "store_type");
        final JsonNode r = Json.field(in, "record");
        if (!r.isObject()) {
            throw new Json.InputError("record", "an object with key, value, timestamp and headers");
        }
        final byte[] key = Json.hex(r, "key");
        final Headers headers = r.has("headers") && !r.get("headers").isNull() ? Json.headers(r, "headers") : new RecordHeaders();
        final ConsumerRecord<byte[], byte[]> record = Codecs.record(key, Json.hexOrNull(r, "value"), Json.lng(r, "timestamp"), headers);
        final ObjectNode open = obj().put("store_type", type).put("backend", "rocksdb").put("logging", false)
            .put("caching", false).put("name", "store");
        final Path stateDir = Files.createTempDirectory("kstate-kafka-jvm-restore");
        open.put("state_dir", stateDir.toString());
        final StoreFamily family = StoreFamily.of(type);
        open.set("options", family.retentionOptions(60_000L));
        final String handle = Main.OPS.get("store.open").apply(open).get("handle").textValue();
        try {
            final StateStore root = Stores.handle(obj().put("handle", handle)).root;
            final Object converter = K.call("org.apache.kafka.streams.processor.internals.StateManagerUtil", "converterForStore",
                t(StateStore.class), root);
            final ConsumerRecord<byte[], byte[]> restored = (ConsumerRecord<byte[], byte[]>) K.callOn(converter, "convert",
                t(ConsumerRecord.class), record);
            final ObjectNode out = obj().set("key", hexNode(restored.key()));
            out.set("value", hexNode(restored.value()));
            if (family.restoreKeepsTimestamp()) {
                out.put("timestamp", restored.timestamp());
            }
            return out;
        } finally {
            Main.OPS.get("store.close").apply(obj().put("handle", handle));
            Changelog.deleteTree(stateDir);
        }
    }
}
