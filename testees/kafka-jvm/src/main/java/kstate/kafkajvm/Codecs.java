package kstate.kafkajvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.IntegerSerializer;
import org.apache.kafka.common.serialization.LongSerializer;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.query.Position;
import org.apache.kafka.streams.state.HeadersBytesStore;
import org.apache.kafka.streams.state.TimestampedBytesStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.internals.OffsetCheckpoint;
import org.apache.kafka.streams.state.internals.RecordConverters;
import org.apache.kafka.streams.state.internals.ValueAndTimestampSerializer;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.File;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static kstate.kafkajvm.Json.hex;
import static kstate.kafkajvm.Json.hexNode;
import static kstate.kafkajvm.Json.hexOrNull;
import static kstate.kafkajvm.Json.integer;
import static kstate.kafkajvm.Json.lng;
import static kstate.kafkajvm.Json.obj;
import static kstate.kafkajvm.K.t;
import static kstate.kafkajvm.Main.capture;
import static kstate.kafkajvm.Main.register;

/** The codec operations (spec/ops-index.md), each answered by the Kafka class its row names. */
final class Codecs {
    private static final String TOPIC = "topic";
    private static final String BYTE_UTILS = "org.apache.kafka.common.utils.ByteUtils";
    private static final String DEFAULT_RECORD = "org.apache.kafka.common.record.DefaultRecord";
    /** RecordBatch.NO_SEQUENCE: the base sequence of a record read outside a batch. */
    private static final int NO_SEQUENCE = -1;

    private Codecs() { }

    static void registerAll() {
        varints();
        primitives();
        timestamped();
        headerValues();
        recordV2();
        checkpoint();
        versioned();
        position();
    }

    // --- ByteUtils varints (PRIM-5..7) -----------------------------------------------------------------

    private static ObjectNode written(final ByteBuffer buffer, final int size) {
        final byte[] out = new byte[buffer.position()];
        buffer.flip();
        buffer.get(out);
        return obj().put("bytes", hexNode(out).asText()).put("size", size);
    }

    private static ObjectNode read(final ByteBuffer buffer, final long value) {
        return obj().put("value", value).put("bytes_consumed", buffer.position());
    }

    /** The four varint codecs: op suffix and Kafka's ByteUtils name, whose write, sizeOf and read methods the ops
     *  call; the ...varint ones take an int, the ...varlong ones a long. */
    private static final String[][] VARINTS = {
        {"varint", "Varint"}, {"unsigned_varint", "UnsignedVarint"}, {"varlong", "Varlong"},
        {"unsigned_varlong", "UnsignedVarlong"},
    };

    private static void varints() {
        for (final String[] codec : VARINTS) {
            final String kafka = codec[1];
            final Class<?> type = kafka.endsWith("Varint") ? int.class : long.class;
            register("varint.write_" + codec[0], in -> {
                final Object v = type == int.class ? (Object) integer(in, "value") : (Object) lng(in, "value");
                final ByteBuffer b = ByteBuffer.allocate(16);
                K.call(BYTE_UTILS, "write" + kafka, t(type, ByteBuffer.class), v, b);
                return written(b, (int) K.call(BYTE_UTILS, "sizeOf" + kafka, t(type), v));
            });
        }
        for (final String[] codec : VARINTS) {
            register("varint.read_" + codec[0], in -> {
                final ByteBuffer b = ByteBuffer.wrap(hex(in, "bytes"));
                return read(b, ((Number) K.call(BYTE_UTILS, "read" + codec[1], t(ByteBuffer.class), b)).longValue());
            });
        }
    }

    // --- primitives (PRIM-1..4) --------------------------------------------------------------------------

    private static void primitives() {
        register("primitives.compare", in -> obj().put("result",
            Integer.signum(Bytes.BYTES_LEXICO_COMPARATOR.compare(hex(in, "a"), hex(in, "b")))));
        register("primitives.increment", in -> obj().set("bytes", hexNode(Bytes.increment(Bytes.wrap(hex(in, "bytes"))).get())));
        register("primitives.encode_int32", in -> {
            try (IntegerSerializer s = new IntegerSerializer()) {
                return obj().set("bytes", hexNode(s.serialize(TOPIC, integer(in, "value"))));
            }
        });
        register("primitives.encode_int64", in -> {
            try (LongSerializer s = new LongSerializer()) {
                return obj().set("bytes", hexNode(s.serialize(TOPIC, lng(in, "value"))));
            }
        });
        // Kafka's store code reads a big-endian long with ByteBuffer.getLong (e.g. the versioned formatter, the
        // key schemas); its IndexOutOfBoundsException past the end is the refusal.
        register("primitives.read_int64", in -> {
            final byte[] data = hex(in, "bytes");
            final int offset = in.has("offset") ? integer(in, "offset") : 0;
            try {
                return obj().put("value", ByteBuffer.wrap(data).getLong(offset));
            } catch (IndexOutOfBoundsException e) {
                throw new Json.InputError("offset", "no 8 bytes at offset " + offset + " of " + data.length);
            }
        });
        register("primitives.segment_id", in -> {
            final long interval = lng(in, "segment_interval");
            final Object segments = K.construct("KeyValueSegments", t(String.class, String.class, long.class, long.class),
                "store", "scope", Long.MAX_VALUE, interval);
            return obj().put("segment_id", (long) K.callOn(segments, "segmentId", t(long.class), lng(in, "timestamp")));
        });
    }

    // --- timestamped values (TSKV-*) ----------------------------------------------------------------------

    private static void timestamped() {
        register("timestamped.serialize", in -> {
            @SuppressWarnings("unchecked")
            final Serializer<Object> s = (Serializer<Object>) K.construct("ValueAndTimestampSerializer",
                t(Serializer.class), new ByteArraySerializer());
            return obj().set("bytes", hexNode(s.serialize(TOPIC, ValueAndTimestamp.make(hexOrNull(in, "value"), lng(in, "timestamp")))));
        });
        register("timestamped.deserialize", in -> {
            @SuppressWarnings("unchecked")
            final org.apache.kafka.common.serialization.Deserializer<ValueAndTimestamp<byte[]>> d =
                (org.apache.kafka.common.serialization.Deserializer<ValueAndTimestamp<byte[]>>) K.construct(
                    "ValueAndTimestampDeserializer", t(org.apache.kafka.common.serialization.Deserializer.class), new ByteArrayDeserializer());
            final ValueAndTimestamp<byte[]> r = d.deserialize(TOPIC, hexOrNull(in, "bytes"));
            return obj().set("result", r == null ? NullNode.instance
                : obj().put("timestamp", r.timestamp()).set("value", hexNode(r.value())));
        });
        register("timestamped.raw_value", in -> obj().set("value",
            hexNode((byte[]) K.call("ValueAndTimestampDeserializer", "rawValue", t(byte[].class), (Object) hex(in, "bytes")))));
        register("timestamped.timestamp", in -> obj().put("timestamp",
            (long) K.call("ValueAndTimestampDeserializer", "timestamp", t(byte[].class), (Object) hex(in, "bytes"))));
        register("timestamped.convert_to_timestamped_format", in -> obj().set("bytes",
            hexNode(TimestampedBytesStore.convertToTimestampedFormat(hexOrNull(in, "plain_value")))));
        register("timestamped.raw_value_to_timestamped_value", in -> {
            final ConsumerRecord<byte[], byte[]> converted = RecordConverters.rawValueToTimestampedValue()
                .convert(record(null, hexOrNull(in, "record_value"), lng(in, "record_timestamp"), new RecordHeaders()));
            return obj().put("timestamp", converted.timestamp()).set("value", hexNode(converted.value()));
        });
        register("timestamped.values_are_same_and_time_is_increasing", in -> {
            final byte[] old = hexOrNull(in, "old");
            final byte[] parsed = hexOrNull(in, "new");
            // Two distinct arrays unless the input says one array was passed twice (the parser may share one
            // empty array, which Java's == would take for the same reference).
            final byte[] neu = Json.bool(in, "same_reference", false) ? old
                : parsed == null ? null : java.util.Arrays.copyOf(parsed, parsed.length);
            return obj().put("result", ValueAndTimestampSerializer.valuesAreSameAndTimeIsIncreasing(old, neu));
        });
    }

    static ConsumerRecord<byte[], byte[]> record(final byte[] key, final byte[] value, final long timestamp, final Headers headers) {
        return new ConsumerRecord<>("changelog", 0, 0L, timestamp, TimestampType.CREATE_TIME,
            key == null ? -1 : key.length, value == null ? -1 : value.length, key, value, headers, Optional.empty());
    }

    // --- KIP-1271 header-aware values (HV-*) ------------------------------------------------------------------

    private static ObjectNode vthJson(final Object vth) {
        if (vth == null) {
            return null;
        }
        final org.apache.kafka.streams.state.ValueTimestampHeaders<?> v = (org.apache.kafka.streams.state.ValueTimestampHeaders<?>) vth;
        final ObjectNode out = obj();
        out.set("value", hexNode((byte[]) v.value()));
        out.put("timestamp", v.timestamp());
        out.set("headers", v.headers() == null ? NullNode.instance : Json.headersJson(v.headers()));
        return out;
    }

    @SuppressWarnings("unchecked")
    private static org.apache.kafka.common.serialization.Deserializer<Object> vthDeserializer() {
        return (org.apache.kafka.common.serialization.Deserializer<Object>) K.construct("ValueTimestampHeadersDeserializer",
            t(org.apache.kafka.common.serialization.Deserializer.class), new ByteArrayDeserializer());
    }

    private static void headerValues() {
        register("header_values.serialize_headers", in -> obj().set("bytes",
            hexNode((byte[]) K.call("HeadersSerializer", "serialize", t(Headers.class), Json.headers(in, "headers")))));
        register("header_values.deserialize_headers", in -> {
            final Headers h = (Headers) K.call("HeadersDeserializer", "deserialize", t(byte[].class), (Object) hexOrNull(in, "bytes"));
            return obj().set("headers", Json.headersJson(h));
        });
        register("header_values.serialize", in -> {
            @SuppressWarnings("unchecked")
            final Serializer<Object> s = (Serializer<Object>) K.construct("ValueTimestampHeadersSerializer",
                t(Serializer.class), new ByteArraySerializer());
            final Object vth = org.apache.kafka.streams.state.ValueTimestampHeaders.make(hexOrNull(in, "value"), lng(in, "timestamp"),
                Json.headers(in, "headers"));
            return obj().set("bytes", hexNode(s.serialize(TOPIC, vth)));
        });
        register("header_values.deserialize", in -> {
            final byte[] data = hexOrNull(in, "bytes");
            final ObjectNode out = obj();
            out.set("deserialize", capture(() -> obj().set("result", nullable(vthJson(vthDeserializer().deserialize(TOPIC, data))))));
            // 4.3's static ValueTimestampHeadersDeserializer.value(raw, deserializer) is Utils.rawPlainValue(raw) handed to the
            // deserializer (identity for bytes); 4.4 dropped that wrapper and keeps Utils.rawPlainValue, called here for both.
            out.set("static_value", capture(() -> obj().set("value", hexNode((byte[]) K.call("Utils", "rawPlainValue",
                t(byte[].class), (Object) data)))));
            out.set("static_timestamp", capture(() -> obj().put("timestamp", (long) K.call("Utils", "timestamp", t(byte[].class), (Object) data))));
            out.set("static_headers", capture(() -> {
                final Headers h = (Headers) K.call("Utils", "headers", t(byte[].class), (Object) data);
                return obj().set("headers", h == null ? NullNode.instance : Json.headersJson(h));
            }));
            return out;
        });
        register("header_values.convert_to_header_format", in -> {
            final byte[] data = HeadersBytesStore.convertToHeaderFormat(hexOrNull(in, "value_and_timestamp"));
            final ObjectNode out = obj().set("bytes", hexNode(data));
            if (data != null) {
                final ObjectNode decoded = capture(() -> obj().set("v", nullable(vthJson(vthDeserializer().deserialize(TOPIC, data)))));
                if (!decoded.has("error")) {
                    out.set("deserialized", decoded.get("v"));
                }
            }
            return out;
        });
    }

    private static JsonNode nullable(final JsonNode node) {
        return node == null ? NullNode.instance : node;
    }

    // --- record v2 (HDR-*) ------------------------------------------------------------------------------------

    private static Header[] headerArray(final JsonNode in, final String name) {
        final Headers h = Json.headers(in, name);
        return h == null ? null : h.toArray();
    }

    private static ObjectNode decoded(final Object r, final long baseOffset, final long baseTimestamp) {
        final ObjectNode out = obj();
        out.put("base_offset", baseOffset);
        out.put("base_timestamp", baseTimestamp);
        out.put("offset", (long) K.callOn(r, "offset", t()));
        out.put("timestamp", (long) K.callOn(r, "timestamp", t()));
        out.set("key", (boolean) K.callOn(r, "hasKey", t()) ? hexNode((ByteBuffer) K.callOn(r, "key", t())) : NullNode.instance);
        out.set("value", (boolean) K.callOn(r, "hasValue", t()) ? hexNode((ByteBuffer) K.callOn(r, "value", t())) : NullNode.instance);
        out.set("headers", Json.headersJson((Header[]) K.callOn(r, "headers", t())));
        return out;
    }

    private static ByteBuffer wrapOrNull(final byte[] bytes) {
        return bytes == null ? null : ByteBuffer.wrap(bytes);
    }

    private static Object readRecord(final ByteBuffer buffer, final long baseOffset, final long baseTimestamp) {
        return K.call(DEFAULT_RECORD, "readFrom", t(ByteBuffer.class, long.class, long.class, int.class, Long.class),
            buffer, baseOffset, baseTimestamp, NO_SEQUENCE, null);
    }

    private static int bodySize(final int offsetDelta, final long timestampDelta, final int keySize, final int valueSize,
                                final Header[] headers) {
        return (int) K.call(DEFAULT_RECORD, "sizeOfBodyInBytes", t(int.class, long.class, int.class, int.class, Header[].class),
            offsetDelta, timestampDelta, keySize, valueSize, headers);
    }

    private static void recordV2() {
        register("record_v2.write", in -> {
            final int offsetDelta = integer(in, "offset_delta");
            final long timestampDelta = lng(in, "timestamp_delta");
            final byte[] key = hexOrNull(in, "key");
            final byte[] value = hexOrNull(in, "value");
            final Header[] headers = headerArray(in, "headers");
            final ByteArrayOutputStream buffer = new ByteArrayOutputStream();
            final int size = (int) K.call(DEFAULT_RECORD, "writeTo",
                t(DataOutputStream.class, int.class, long.class, ByteBuffer.class, ByteBuffer.class, Header[].class),
                new DataOutputStream(buffer), offsetDelta, timestampDelta, wrapOrNull(key), wrapOrNull(value), headers);
            final byte[] record = buffer.toByteArray();
            // The header section is the end of the body; its length is Kafka's body size with these headers less
            // the body size with none, plus the one byte of a zero count.
            final int keySize = key == null ? -1 : key.length;
            final int valueSize = value == null ? -1 : value.length;
            final int sectionLength = bodySize(offsetDelta, timestampDelta, keySize, valueSize, headers)
                - bodySize(offsetDelta, timestampDelta, keySize, valueSize, new Header[0]) + 1;
            final byte[] section = java.util.Arrays.copyOfRange(record, record.length - sectionLength, record.length);
            final ObjectNode out = obj();
            out.set("record", hexNode(record));
            out.put("size_in_bytes", size);
            out.set("headers_section", hexNode(section));
            out.set("decoded", capture(() -> decoded(readRecord(ByteBuffer.wrap(record), 1000L, 5000L), 1000L, 5000L)));
            return out;
        });
        register("record_v2.read", in -> {
            final ByteBuffer buffer = ByteBuffer.wrap(hex(in, "bytes"));
            final long baseOffset = lng(in, "base_offset");
            final long baseTimestamp = lng(in, "base_timestamp");
            final Object r = readRecord(buffer, baseOffset, baseTimestamp);
            final ObjectNode out = decoded(r, baseOffset, baseTimestamp);
            // The attributes byte as the unsigned value the vocabulary reports.
            out.put("attributes", Byte.toUnsignedInt((byte) K.callOn(r, "attributes", t())));
            out.put("size_in_bytes", (int) K.callOn(r, "sizeInBytes", t()));
            out.put("bytes_consumed", buffer.position());
            return out;
        });
        register("record_v2.size", in -> {
            final int offsetDelta = integer(in, "offset_delta");
            final long timestampDelta = lng(in, "timestamp_delta");
            final int keySize = integer(in, "key_size");
            final int valueSize = integer(in, "value_size");
            final Header[] headers = headerArray(in, "headers");
            final ObjectNode out = obj();
            out.put("size_in_bytes", (int) K.call(DEFAULT_RECORD, "sizeInBytes", t(int.class, long.class, int.class, int.class, Header[].class),
                offsetDelta, timestampDelta, keySize, valueSize, headers));
            out.put("size_of_body_in_bytes", bodySize(offsetDelta, timestampDelta, keySize, valueSize, headers));
            return out;
        });
    }

    // --- .checkpoint (OFF-13..17, OFF-21) ---------------------------------------------------------------------

    static ArrayNode entriesJson(final Map<TopicPartition, Long> map) {
        final List<Map.Entry<TopicPartition, Long>> entries = new ArrayList<>(map.entrySet());
        entries.sort(Comparator.comparing((Map.Entry<TopicPartition, Long> e) -> e.getKey().topic())
            .thenComparingInt(e -> e.getKey().partition()));
        final ArrayNode out = Json.arr();
        for (final Map.Entry<TopicPartition, Long> e : entries) {
            out.add(Json.arr().add(e.getKey().topic()).add(e.getKey().partition()).add(e.getValue()));
        }
        return out;
    }

    private static Map<TopicPartition, Long> entriesMap(final JsonNode in, final String name) {
        final JsonNode list = Json.field(in, name);
        if (!list.isArray()) {
            throw new Json.InputError(name, "a list of [topic, partition, offset]");
        }
        final Map<TopicPartition, Long> map = new LinkedHashMap<>();
        int i = 0;
        for (final JsonNode e : list) {
            final String where = name + "[" + i++ + "]";
            final TopicPartition tp = Json.triplePartition(e, where, "not a [topic, partition, offset] triple");
            // The input stands for a Java Map: a partition twice cannot be one, so the input is refused.
            if (map.put(tp, Json.asLong(e.get(2), where)) != null) {
                throw new Json.InputError(where, "a partition appears twice");
            }
        }
        return map;
    }

    private static void checkpoint() {
        register("checkpoint.write", in -> {
            final Map<TopicPartition, Long> map;
            try {
                map = entriesMap(in, "entries_in_map_order");
            } catch (Json.InputError e) {
                // A refused write leaves no file; the operation always says whether one exists.
                return obj().<ObjectNode>set("error", Main.error(e)).put("file_exists", false);
            }
            final Path dir = Files.createTempDirectory("kstate-checkpoint");
            try {
                final File file = dir.resolve(".checkpoint").toFile();
                final OffsetCheckpoint checkpoint = new OffsetCheckpoint(file);
                try {
                    checkpoint.write(map);
                } catch (Exception e) {
                    if (!Main.isRefusal(e)) {
                        throw e;
                    }
                    final ObjectNode out = obj();
                    out.set("error", Main.error(e));
                    out.put("file_exists", file.exists());
                    return out;
                }
                final ObjectNode out = obj();
                out.put("file_exists", file.exists());
                if (file.exists()) {
                    final byte[] data = Files.readAllBytes(file.toPath());
                    out.set("file", hexNode(data));
                    out.put("file_text", Json.utf8(data));
                }
                out.set("read_back", capture(() -> {
                    try {
                        return obj().set("entries", entriesJson(checkpoint.read()));
                    } catch (java.io.IOException e) {
                        throw K.sneaky(e);
                    }
                }));
                return out;
            } finally {
                deleteTree(dir);
            }
        });
        register("checkpoint.read", in -> {
            final byte[] data = hexOrNull(in, "file");
            final Path dir = Files.createTempDirectory("kstate-checkpoint");
            try {
                final File file = dir.resolve(".checkpoint").toFile();
                if (data != null) {
                    Files.write(file.toPath(), data);
                }
                return obj().set("entries", entriesJson(new OffsetCheckpoint(file).read()));
            } finally {
                deleteTree(dir);
            }
        });
    }

    static void deleteTree(final Path dir) {
        try (var walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (java.io.IOException e) {
            // a temporary directory left behind is harmless
        }
    }

    // --- versioned formats (VER-3..21) ---------------------------------------------------------------------

    private static final String FORMATTER = "RocksDBVersionedStoreSegmentValueFormatter";
    private static final String LATEST = "RocksDBVersionedStore$LatestValueFormatter";

    private static void versioned() {
        register("versioned.latest_from", in -> obj().set("bytes",
            hexNode((byte[]) K.call(LATEST, "from", t(byte[].class, long.class), hexOrNull(in, "value"), lng(in, "timestamp")))));
        register("versioned.latest_decode", in -> {
            final byte[] data = hex(in, "bytes");
            final ObjectNode out = obj();
            out.set("value", hexNode((byte[]) K.call(LATEST, "value", t(byte[].class), (Object) data)));
            out.put("timestamp", (long) K.call(LATEST, "timestamp", t(byte[].class), (Object) data));
            return out;
        });
        register("versioned.segment_scenario", in -> {
            final JsonNode steps = Json.field(in, "steps");
            if (!steps.isArray()) {
                throw new Json.InputError("steps", "not a list");
            }
            final Object[] state = {null};
            final ArrayNode results = Json.arr();
            for (final JsonNode step : steps) {
                if (!step.isObject()) {
                    throw new Json.InputError("steps", "a step must be an object");
                }
                final ObjectNode fields = Main.capture(() -> segmentStep(state, step));
                if (state[0] == null) {
                    fields.putNull("bytes");
                    fields.putNull("next_timestamp");
                    fields.putNull("min_timestamp");
                } else {
                    final byte[] row = (byte[]) K.callOn(state[0], "serialize", t());
                    fields.set("bytes", hexNode(row));
                    fields.put("next_timestamp", (long) K.call(FORMATTER, "nextTimestamp", t(byte[].class), (Object) row));
                    fields.put("min_timestamp", (long) K.call(FORMATTER, "minTimestamp", t(byte[].class), (Object) row));
                }
                results.add(fields);
            }
            return obj().set("steps", results);
        });
    }

    private static ObjectNode searchResult(final Object r, final boolean withValue) {
        final ObjectNode out = obj();
        out.put("index", (int) K.callOn(r, "index", t()));
        out.put("valid_from", (long) K.callOn(r, "validFrom", t()));
        out.put("valid_to", (long) K.callOn(r, "validTo", t()));
        if (withValue) {
            out.set("value", hexNode((byte[]) K.callOn(r, "value", t())));
        }
        return out;
    }

    private static ObjectNode segmentStep(final Object[] state, final JsonNode step) {
        final String kind = step.path("op").asText("");
        switch (kind) {
            case "new":
                state[0] = K.call(FORMATTER, "newSegmentValueWithRecord", t(byte[].class, long.class, long.class),
                    hexOrNull(step, "value"), lng(step, "valid_from"), lng(step, "valid_to"));
                return obj();
            case "deserialize":
                state[0] = K.call(FORMATTER, "deserialize", t(byte[].class), (Object) hex(step, "bytes"));
                return obj();
            default:
                break;
        }
        if (state[0] == null) {
            throw new Json.InputError("op", "step " + kind + " needs a segment value; start with new or deserialize");
        }
        final Object sv = state[0];
        switch (kind) {
            case "reload":
                state[0] = K.call(FORMATTER, "deserialize", t(byte[].class), K.callOn(sv, "serialize", t()));
                return obj();
            case "insert_as_latest":
                K.callOn(sv, "insertAsLatest", t(long.class, long.class, byte[].class), lng(step, "valid_from"), lng(step, "valid_to"),
                    hexOrNull(step, "value"));
                return obj();
            case "insert_as_earliest":
                K.callOn(sv, "insertAsEarliest", t(long.class, byte[].class), lng(step, "timestamp"), hexOrNull(step, "value"));
                return obj();
            case "insert":
                K.callOn(sv, "insert", t(long.class, byte[].class, int.class), lng(step, "timestamp"), hexOrNull(step, "value"),
                    integer(step, "index"));
                return obj();
            case "update_record":
                K.callOn(sv, "updateRecord", t(long.class, byte[].class, int.class), lng(step, "timestamp"), hexOrNull(step, "value"),
                    integer(step, "index"));
                return obj();
            case "find": {
                final boolean includeValue = Json.bool(step, "include_value", false);
                final Object r = K.callOn(sv, "find", t(long.class, boolean.class), lng(step, "timestamp"), includeValue);
                return obj().set("result", searchResult(r, includeValue));
            }
            case "find_all": {
                final List<?> rs = (List<?>) K.callOn(sv, "findAll", t(long.class, long.class), lng(step, "from"), lng(step, "to"));
                final ArrayNode out = Json.arr();
                for (final Object r : rs) {
                    out.add(searchResult(r, true));
                }
                return obj().set("results", out);
            }
            default:
                throw new Json.InputError("op", "unknown step " + kind);
        }
    }

    // --- PositionSerde (OFF-8..12) ------------------------------------------------------------------------------

    private static void position() {
        register("position.serialize", in -> {
            final ByteBuffer b = (ByteBuffer) K.call("PositionSerde", "serialize", t(Position.class), positionIn(in, "position"));
            return obj().set("bytes", hexNode(b.array()));
        });
        register("position.deserialize", in -> {
            final ByteBuffer b = ByteBuffer.wrap(hex(in, "bytes"));
            final Position p = (Position) K.call("PositionSerde", "deserialize", t(ByteBuffer.class), b);
            return obj().put("bytes_consumed", b.position()).set("position", positionJson(p));
        });
    }

    /** The position of field {@code name}: a list of {@code [topic, [[partition, offset], ...]]} standing for
     *  Position's Map<String, Map<Integer, Long>> (Position.fromMap); a topic or partition twice is refused. */
    static Position positionIn(final JsonNode in, final String name) {
        final JsonNode list = Json.field(in, name);
        if (!list.isArray()) {
            throw new Json.InputError(name, "a list of [topic, [[partition, offset], ...]]");
        }
        final Map<String, Map<Integer, Long>> map = new LinkedHashMap<>();
        for (final JsonNode topic : list) {
            if (!topic.isArray() || topic.size() != 2 || !topic.get(0).isTextual() || !topic.get(1).isArray()) {
                throw new Json.InputError(name, "a list of [topic, [[partition, offset], ...]]");
            }
            final Map<Integer, Long> partitions = new LinkedHashMap<>();
            if (map.put(topic.get(0).textValue(), partitions) != null) {
                throw new Json.InputError(name, "a topic appears twice");
            }
            for (final JsonNode po : topic.get(1)) {
                if (!po.isArray() || po.size() != 2) {
                    throw new Json.InputError(name, "a [partition, offset] pair");
                }
                final long partition = Json.asLong(po.get(0), name);
                if (partition < Integer.MIN_VALUE || partition > Integer.MAX_VALUE) {
                    throw new Json.InputError(name, "partition outside the Java int range");
                }
                if (partitions.put((int) partition, Json.asLong(po.get(1), name)) != null) {
                    throw new Json.InputError(name, "a partition appears twice");
                }
            }
        }
        return Position.fromMap(map);
    }

    /** A position in canonical order (topics in Java String order, partitions ascending), as JSON. */
    static ArrayNode positionJson(final Position p) {
        final ArrayNode out = Json.arr();
        final List<String> topics = new ArrayList<>(p.getTopics());
        topics.sort(null);
        for (final String topic : topics) {
            final ArrayNode parts = Json.arr();
            final List<Map.Entry<Integer, Long>> entries = new ArrayList<>(p.getPartitionPositions(topic).entrySet());
            entries.sort(Map.Entry.comparingByKey());
            for (final Map.Entry<Integer, Long> e : entries) {
                parts.add(Json.arr().add(e.getKey()).add(e.getValue()));
            }
            out.add(Json.arr().add(topic).add(parts));
        }
        return out;
    }
}
