package kstate.kafkajvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

/** The JSON conventions of spec/ops.md OPS-2: hex bytes, null apart from "", 64-bit integers, ordered header lists.
 *  Input that breaks them is an {@link InputError}, which the loop answers as a refusal (OPS-3), never as an
 *  internal error. */
final class Json {
    static final ObjectMapper MAPPER = new ObjectMapper();
    static final JsonNodeFactory F = JsonNodeFactory.instance;
    private static final HexFormat HEX = HexFormat.of();

    private Json() { }

    /** Bad input: refused as OPS-3 says, naming the field. */
    static final class InputError extends RuntimeException {
        final String field;
        InputError(final String field, final String message) {
            super(field + ": " + message);
            this.field = field;
        }
    }

    static ObjectNode obj() {
        return F.objectNode();
    }

    static ArrayNode arr() {
        return F.arrayNode();
    }

    static JsonNode field(final JsonNode in, final String name) {
        if (!in.has(name)) {
            throw new InputError(name, "missing");
        }
        return in.get(name);
    }

    static byte[] hexOrNull(final JsonNode in, final String name) {
        return parseHex(field(in, name), name, true);
    }

    static byte[] hex(final JsonNode in, final String name) {
        return parseHex(field(in, name), name, false);
    }

    static byte[] parseHex(final JsonNode node, final String name, final boolean nullable) {
        if (node == null || node.isNull()) {
            if (nullable) {
                return null;
            }
            throw new InputError(name, "null where bytes are required");
        }
        if (!node.isTextual()) {
            throw new InputError(name, "not a hex string");
        }
        final String text = node.asText();
        if (text.length() % 2 != 0 || !text.equals(text.toLowerCase())) {
            throw new InputError(name, "not lowercase hex of whole bytes");
        }
        try {
            return HEX.parseHex(text);
        } catch (IllegalArgumentException e) {
            throw new InputError(name, "not hex");
        }
    }

    static long lng(final JsonNode in, final String name) {
        return asLong(field(in, name), name);
    }

    static long lng(final JsonNode in, final String name, final long dflt) {
        return in.has(name) && !in.get(name).isNull() ? asLong(in.get(name), name) : dflt;
    }

    /** The partition of a {@code [topic, partition, offset]} triple at {@code where}; {@code triple} is the refusal
     *  naming the triple the caller takes (its offset is the caller's to read). */
    static TopicPartition triplePartition(final JsonNode e, final String where, final String triple) {
        if (!e.isArray() || e.size() != 3 || !e.get(0).isTextual()) {
            throw new InputError(where, triple);
        }
        final long partition = asLong(e.get(1), where);
        if (partition < Integer.MIN_VALUE || partition > Integer.MAX_VALUE) {
            throw new InputError(where, "partition outside the Java int range");
        }
        return new TopicPartition(e.get(0).textValue(), (int) partition);
    }

    /** Refuses a store option not in {@code allowed}, naming it ({@code options.<name>}), with {@code takes}:
     *  what the store takes (SS-11 and the store.open options of spec/ops.md). */
    static void onlyOptions(final JsonNode opts, final String takes, final String... allowed) {
        final java.util.List<String> known = java.util.List.of(allowed);
        for (final java.util.Iterator<String> it = opts.fieldNames(); it.hasNext();) {
            final String option = it.next();
            if (!known.contains(option)) {
                throw new InputError("options." + option, takes);
            }
        }
    }

    static long asLong(final JsonNode node, final String name) {
        if (node == null || !node.isIntegralNumber() || !node.canConvertToLong()) {
            throw new InputError(name, "not a signed 64-bit integer");
        }
        return node.longValue();
    }

    static int integer(final JsonNode in, final String name) {
        final long v = lng(in, name);
        if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
            throw new InputError(name, "outside the Java int range");
        }
        return (int) v;
    }

    static boolean bool(final JsonNode in, final String name, final boolean dflt) {
        if (!in.has(name) || in.get(name).isNull()) {
            return dflt;
        }
        if (!in.get(name).isBoolean()) {
            throw new InputError(name, "not a boolean");
        }
        return in.get(name).booleanValue();
    }

    static String str(final JsonNode in, final String name) {
        final JsonNode node = field(in, name);
        if (!node.isTextual()) {
            throw new InputError(name, "not a string");
        }
        return node.textValue();
    }

    static JsonNode hexNode(final byte[] bytes) {
        return bytes == null ? NullNode.instance : F.textNode(HEX.formatHex(bytes));
    }

    static JsonNode hexNode(final ByteBuffer buffer) {
        if (buffer == null) {
            return NullNode.instance;
        }
        final ByteBuffer b = buffer.duplicate();
        final byte[] out = new byte[b.remaining()];
        b.get(out);
        return hexNode(out);
    }

    /** Headers as Kafka's RecordHeaders, built header by header so that Kafka's own checks (a null key) refuse. */
    static Headers headers(final JsonNode in, final String name) {
        final JsonNode node = field(in, name);
        if (node.isNull()) {
            return null;
        }
        if (!node.isArray()) {
            throw new InputError(name, "headers must be a list of [key, value] pairs");
        }
        final RecordHeaders headers = new RecordHeaders();
        int i = 0;
        for (final JsonNode pair : node) {
            final String where = name + "[" + i++ + "]";
            if (!pair.isArray() || pair.size() != 2) {
                throw new InputError(where, "a header must be a [key, value] pair");
            }
            final JsonNode key = pair.get(0);
            if (!key.isNull() && !key.isTextual()) {
                throw new InputError(where, "a header key must be a string or null");
            }
            headers.add(new RecordHeader(key.isNull() ? null : key.textValue(), parseHex(pair.get(1), where, true)));
        }
        return headers;
    }

    static ArrayNode headersJson(final Iterable<Header> headers) {
        final ArrayNode out = arr();
        for (final Header h : headers) {
            out.add(arr().add(h.key()).add(hexNode(h.value())));
        }
        return out;
    }

    static ArrayNode headersJson(final Header[] headers) {
        final ArrayNode out = arr();
        for (final Header h : headers) {
            out.add(arr().add(h.key()).add(hexNode(h.value())));
        }
        return out;
    }

    static String utf8(final byte[] bytes) {
        return new String(bytes, StandardCharsets.UTF_8);
    }
}
