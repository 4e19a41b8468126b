package kstate.kafkajvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.streams.state.AggregationWithHeaders;
import org.apache.kafka.streams.state.HeadersBytesStore;
import org.apache.kafka.streams.state.ValueTimestampHeaders;

import static kstate.kafkajvm.Json.hexNode;
import static kstate.kafkajvm.Json.hexOrNull;
import static kstate.kafkajvm.Json.lng;
import static kstate.kafkajvm.Json.obj;
import static kstate.kafkajvm.K.t;
import static kstate.kafkajvm.Main.capture;
import static kstate.kafkajvm.Main.register;

/** KIP-1271's header-aware formats beyond the value codec (HV-8, HV-11, HV-12): the session stores' aggregation
 *  with headers and its raw slice, the plain-to-headers upgrade and the restore converters, each answered by Kafka's class. */
final class HeaderFormats {
    private static final String TOPIC = "topic";

    private HeaderFormats() { }

    static void registerAll() {
        register("header_values.serialize_aggregation", in -> {
            @SuppressWarnings("unchecked")
            final Serializer<Object> s = (Serializer<Object>) K.construct("AggregationWithHeadersSerializer",
                t(Serializer.class), new ByteArraySerializer());
            return obj().set("bytes", hexNode(s.serialize(TOPIC,
                AggregationWithHeaders.make(hexOrNull(in, "aggregation"), Json.headers(in, "headers")))));
        });
        register("header_values.deserialize_aggregation", in -> {
            @SuppressWarnings("unchecked")
            final Deserializer<Object> d = (Deserializer<Object>) K.construct("AggregationWithHeadersDeserializer",
                t(Deserializer.class), new ByteArrayDeserializer());
            final AggregationWithHeaders<?> a = (AggregationWithHeaders<?>) d.deserialize(TOPIC, hexOrNull(in, "bytes"));
            if (a == null) {
                return obj().set("result", NullNode.instance);
            }
            final ObjectNode result = obj().set("aggregation", hexNode((byte[]) a.aggregation()));
            result.set("headers", Json.headersJson(a.headers()));
            return obj().set("result", result);
        });
        // Utils.rawAggregation (4.3.1 and 4.4.0): the aggregation after the header bytes, sliced past them unparsed
        // (HV-11, HV-14); it moves the position by headersSize unchecked, so a negative one moves backwards.
        register("header_values.raw_aggregation", in -> obj().set("aggregation",
            hexNode((byte[]) K.call("Utils", "rawAggregation", t(byte[].class), (Object) hexOrNull(in, "bytes")))));
        register("header_values.convert_from_plain_to_header_format", in -> {
            final byte[] data = HeadersBytesStore.convertFromPlainToHeaderFormat(hexOrNull(in, "plain_value"));
            final ObjectNode out = obj().set("bytes", hexNode(data));
            if (data != null) {
                final ObjectNode decoded = capture(() -> {
                    @SuppressWarnings("unchecked")
                    final Deserializer<Object> d = (Deserializer<Object>) K.construct("ValueTimestampHeadersDeserializer",
                        t(Deserializer.class), new ByteArrayDeserializer());
                    final ValueTimestampHeaders<?> v = (ValueTimestampHeaders<?>) d.deserialize(TOPIC, data);
                    final ObjectNode vth = obj().set("value", hexNode((byte[]) v.value()));
                    vth.put("timestamp", v.timestamp());
                    vth.set("headers", Json.headersJson(v.headers()));
                    return obj().set("v", vth);
                });
                if (!decoded.has("error")) {
                    out.set("deserialized", decoded.get("v"));
                }
            }
            return out;
        });
        register("header_values.raw_value_to_headers_value", in -> {
            final ConsumerRecord<byte[], byte[]> r = restored("rawValueToHeadersValue", in);
            final ObjectNode out = obj().set("value", hexNode(r.value()));
            out.put("timestamp", r.timestamp());
            return out.set("headers", Json.headersJson(r.headers()));
        });
        register("header_values.raw_value_to_session_headers_value", in -> {
            final ConsumerRecord<byte[], byte[]> r = restored("rawValueToSessionHeadersValue", in);
            return obj().<ObjectNode>set("value", hexNode(r.value())).set("headers", Json.headersJson(r.headers()));
        });
    }

    /** A changelog record through one of RecordConverters' restore converters. */
    @SuppressWarnings("unchecked")
    private static ConsumerRecord<byte[], byte[]> restored(final String converter, final JsonNode in) {
        final Object c = K.call("RecordConverters", converter, t());
        final Headers headers = Json.headers(in, "record_headers");
        final ConsumerRecord<byte[], byte[]> record = Codecs.record(new byte[] {1}, hexOrNull(in, "record_value"),
            lng(in, "record_timestamp", 0L), headers == null ? new RecordHeaders() : headers);
        return (ConsumerRecord<byte[], byte[]>) K.callOn(c, "convert", t(ConsumerRecord.class), record);
    }
}
