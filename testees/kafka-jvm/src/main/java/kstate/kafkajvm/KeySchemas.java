package kstate.kafkajvm;

import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.utils.Bytes;

import java.util.function.Supplier;

import static kstate.kafkajvm.Json.hex;
import static kstate.kafkajvm.Json.hexNode;
import static kstate.kafkajvm.Json.hexOrNull;
import static kstate.kafkajvm.Json.lng;
import static kstate.kafkajvm.Json.obj;
import static kstate.kafkajvm.K.t;
import static kstate.kafkajvm.Main.capture;
import static kstate.kafkajvm.Main.register;

/** The key schemas' codec operations every segmented family's schemas have (WIN-*, SESS-*): the ranges and the
 *  segment id of a Kafka schema class, registered by each family's class for its own schemas. */
final class KeySchemas {
    /** The topic the schemas' serde calls name. */
    static final String TOPIC = "topic";

    private KeySchemas() { }

    /** One Kafka schema class under its operation prefix ({@code <family>.<name>.}). */
    record Schema(String family, String name, String cls, boolean prefixed) {
        String prefix() {
            return family + "." + name + ".";
        }
    }

    static Bytes wrap(final byte[] b) {
        return b == null ? null : Bytes.wrap(b);
    }

    /** {@code <schema>.ranges}: the schema's lower and upper ranges of a key at a time, fixed-size or not. */
    static void ranges(final Schema s) {
        register(s.prefix() + "ranges", in -> {
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
    static void segmentId(final Schema s) {
        register(s.prefix() + "segment_id", in -> {
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
