package kstate.kafkajvm;

import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.kstream.Window;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.kstream.internals.TimeWindow;

import java.util.function.Supplier;

import static kstate.kafkajvm.Json.hex;
import static kstate.kafkajvm.Json.hexNode;
import static kstate.kafkajvm.Json.hexOrNull;
import static kstate.kafkajvm.Json.integer;
import static kstate.kafkajvm.Json.lng;
import static kstate.kafkajvm.Json.obj;
import static kstate.kafkajvm.K.t;
import static kstate.kafkajvm.Main.capture;
import static kstate.kafkajvm.Main.register;

/** Window and session key schemas (WIN-*, SESS-*): WindowKeySchema, SessionKeySchema and the prefixed schemas. */
final class KeySchemas {
    private static final String TOPIC = "topic";

    private KeySchemas() { }

    /** One Kafka schema class under its operation prefix. */
    private record Schema(String family, String name, String cls, boolean prefixed) { }

    private static final Schema[] WINDOW = {
        new Schema("window", "key_schema", "WindowKeySchema", false),
        new Schema("window", "time_first", "PrefixedWindowKeySchemas$TimeFirstWindowKeySchema", true),
        new Schema("window", "key_first", "PrefixedWindowKeySchemas$KeyFirstWindowKeySchema", true),
    };
    private static final Schema[] SESSION = {
        new Schema("session", "key_schema", "SessionKeySchema", false),
        new Schema("session", "time_first", "PrefixedSessionKeySchemas$TimeFirstSessionKeySchema", true),
        new Schema("session", "key_first", "PrefixedSessionKeySchemas$KeyFirstSessionKeySchema", true),
    };

    static void registerAll() {
        for (final Schema s : WINDOW) {
            window(s);
            ranges(s);
            segmentId(s);
        }
        for (final Schema s : SESSION) {
            session(s);
            ranges(s);
            segmentId(s);
        }
        register("window.time_first.from_non_prefix_window_key", in -> obj().set("bytes", hexNode((byte[]) K.call(
            WINDOW[1].cls, "fromNonPrefixWindowKey", t(byte[].class), (Object) hex(in, "bytes")))));
        register("window.key_first.from_non_prefix_window_key", in -> obj().set("bytes", hexNode((byte[]) K.call(
            WINDOW[2].cls, "fromNonPrefixWindowKey", t(byte[].class), (Object) hex(in, "bytes")))));
        register("window.is_time_first_schema_key", in -> obj().put("result", (boolean) K.call(
            "PrefixedWindowKeySchemas", "isTimeFirstSchemaKey", t(byte[].class), (Object) hex(in, "bytes"))));
        register("window.key_schema.to_binary", in -> {
            final Windowed<byte[]> key = new Windowed<>(hexOrNull(in, "key"),
                new TimeWindow(lng(in, "window_start"), lng(in, "window_end")));
            return obj().set("bytes", hexNode((byte[]) K.call("WindowKeySchema", "toBinary",
                t(Windowed.class, Serializer.class, Headers.class, String.class), key, new ByteArraySerializer(), new RecordHeaders(), TOPIC)));
        });
        register("window.key_schema.from_binary", in -> {
            final Windowed<?> w = (Windowed<?>) K.call("WindowKeySchema", "from", t(byte[].class, long.class, Deserializer.class, Headers.class, String.class),
                hex(in, "bytes"), lng(in, "window_size"), new ByteArrayDeserializer(), new RecordHeaders(), TOPIC);
            return obj().put("start", w.window().start()).put("end", w.window().end()).set("key", hexNode((byte[]) w.key()));
        });
        register("session.time_first.extract_window_bytes_from_non_prefix_session_key", in -> obj().set("bytes", hexNode((byte[]) K.call(
            SESSION[1].cls, "extractWindowBytesFromNonPrefixSessionKey", t(byte[].class), (Object) hex(in, "bytes")))));
        register("session.key_first.prefix_non_prefix_session_key", in -> obj().set("bytes", hexNode((byte[]) K.call(
            SESSION[2].cls, "prefixNonPrefixSessionKey", t(byte[].class), (Object) hex(in, "bytes")))));
        register("session.to_binary_windowed", in -> {
            // SessionWindow's constructor refuses an invalid window, which refuses all three (SESS-10).
            final Windowed<byte[]> key = new Windowed<>(hexOrNull(in, "key"), new SessionWindow(lng(in, "start"), lng(in, "end")));
            final ObjectNode out = obj();
            for (final Schema s : SESSION) {
                final ObjectNode r = capture(() -> obj().set("bytes", hexNode((byte[]) K.call(s.cls, "toBinary",
                    t(Windowed.class, Serializer.class, Headers.class, String.class), key, new ByteArraySerializer(), new RecordHeaders(), TOPIC))));
                out.set(s.prefixed ? s.name : "session_key_schema", r.has("error") ? r : r.get("bytes"));
            }
            return out;
        });
    }

    private static Bytes wrap(final byte[] b) {
        return b == null ? null : Bytes.wrap(b);
    }

    private static void window(final Schema s) {
        final String p = s.family + "." + s.name + ".";
        register(p + "to_store_key_binary", in -> obj().set("bytes", hexNode(((Bytes) K.call(s.cls, "toStoreKeyBinary",
            t(Bytes.class, long.class, int.class), wrap(hexOrNull(in, "key")), lng(in, "timestamp"), integer(in, "seqnum"))).get())));
        register(p + "extract_store_key", in -> {
            final byte[] data = hex(in, "bytes");
            final ObjectNode out = obj();
            out.set("key", hexNode((byte[]) K.call(s.cls, "extractStoreKeyBytes", t(byte[].class), (Object) data)));
            out.put("timestamp", (long) K.call(s.cls, "extractStoreTimestamp", t(byte[].class), (Object) data));
            out.put("seqnum", (int) K.call(s.cls, "extractStoreSequence", t(byte[].class), (Object) data));
            if (s.prefixed) {
                out.put("is_time_first", (boolean) K.call("PrefixedWindowKeySchemas", "isTimeFirstSchemaKey", t(byte[].class), (Object) data));
            }
            return out;
        });
        register(p + "extract_store_window", in -> {
            final Window w = (Window) K.call(s.cls, "extractStoreWindow", t(byte[].class, long.class), hex(in, "bytes"), lng(in, "window_size"));
            return obj().put("start", w.start()).put("end", w.end());
        });
    }

    private static void session(final Schema s) {
        final String p = s.family + "." + s.name + ".";
        register(p + "to_binary", in -> obj().set("bytes", hexNode(((Bytes) K.call(s.cls, "toBinary",
            t(Bytes.class, long.class, long.class), wrap(hexOrNull(in, "key")), lng(in, "start"), lng(in, "end"))).get())));
        register(p + "extract", in -> {
            final byte[] data = hex(in, "bytes");
            final ObjectNode out = obj();
            out.set("key", hexNode((byte[]) K.call(s.cls, "extractKeyBytes", t(byte[].class), (Object) data)));
            out.put("start", (long) K.call(s.cls, "extractStartTimestamp", t(byte[].class), (Object) data));
            out.put("end", (long) K.call(s.cls, "extractEndTimestamp", t(byte[].class), (Object) data));
            out.set("window", capture(() -> {
                final Window w = (Window) K.call(s.cls, "extractWindow", t(byte[].class), (Object) data);
                return obj().put("start", w.start()).put("end", w.end());
            }));
            return out;
        });
    }

    private static void ranges(final Schema s) {
        register(s.family + "." + s.name + ".ranges", in -> {
            final Bytes key = wrap(hexOrNull(in, "key"));
            final long time = lng(in, "time");
            final Object schema = K.construct(s.cls, t());
            final ObjectNode out = obj();
            out.set("lower_range", bound(() -> K.callOn(schema, "lowerRange", t(Bytes.class, long.class), key, time)));
            out.set("upper_range", bound(() -> K.callOn(schema, "upperRange", t(Bytes.class, long.class), key, time)));
            out.set("lower_range_fixed_size", bound(() -> K.callOn(schema, "lowerRangeFixedSize", t(Bytes.class, long.class), key, time)));
            out.set("upper_range_fixed_size", bound(() -> K.callOn(schema, "upperRangeFixedSize", t(Bytes.class, long.class), key, time)));
            return out;
        });
    }

    /** {@code <schema>.segment_id}: the schema's own segmentTimestamp (SegmentedBytesStore.KeySchema: the window
     *  start, or a session's end) and the segment id AbstractSegments.segmentId gives it (timestamp / interval), on a
     *  KeyValueSegments built with the given interval, as a segmented store builds its segments (WIN-15, SESS-11). */
    private static void segmentId(final Schema s) {
        register(s.family + "." + s.name + ".segment_id", in -> {
            final Bytes key = Bytes.wrap(hex(in, "bytes"));
            final long interval = lng(in, "segment_interval");
            final Object schema = K.construct(s.cls, t());
            final long timestamp = (long) K.callOn(schema, "segmentTimestamp", t(Bytes.class), key);
            // Retention does not enter segmentId; the store's name and metrics scope are only labels here.
            final Object segments = K.construct("KeyValueSegments", t(String.class, String.class, long.class, long.class),
                "segment-id", "testee", Long.MAX_VALUE, interval);
            final long id = (long) K.callOn(segments, "segmentId", t(long.class), timestamp);
            return obj().put("segment_timestamp", timestamp).put("segment_id", id);
        });
    }

    private static ObjectNode bound(final Supplier<Object> compute) {
        return capture(() -> {
            final Bytes b = (Bytes) compute.get();
            return obj().set("bytes", b == null ? NullNode.instance : hexNode(b.get()));
        });
    }
}
