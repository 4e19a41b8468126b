package kstate.kafkajvm;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;

/** The kstate-kit testee over Apache Kafka Streams (spec/testee-protocol.md): JSON lines on stdin/stdout. */
public final class Main {
    /** One operation of the neutral vocabulary (spec/ops.md): input object to output object. */
    @FunctionalInterface
    interface Op {
        ObjectNode apply(JsonNode input) throws Exception;
    }

    static final Map<String, Op> OPS = new LinkedHashMap<>();

    static void register(final String name, final Op op) {
        if (OPS.put(name, op) != null) {
            throw new IllegalStateException("operation registered twice: " + name);
        }
    }

    /** An operation of the vocabulary this Kafka release has no code for: every call answers unsupported
     *  (TP-5) with {@code reason}, which names what Kafka has instead. */
    static void registerUnsupported(final String name, final String reason) {
        register(name, in -> {
            throw new K.Unavailable(reason);
        });
    }

    private Main() { }

    public static void main(final String[] args) throws Exception {
        // Standard output carries nothing but responses (TP-1): anything Kafka or RocksDB prints goes to stderr.
        final PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        Codecs.registerAll();
        Stores.registerAll();
        // Each store family's own operations: its stores', its key schemas', its suppliers' (StoreFamily).
        for (final StoreFamily family : StoreFamily.all()) {
            family.registerOps();
        }
        // Benchmarks only (benchmarks/test_kafka_side_bench.py): outside the neutral vocabulary.
        Bench.registerAll();
        // Operations added beside the original classes: the offsets column family and KIP-1271 formats.
        OffsetsFamily.registerAll();
        HeaderFormats.registerAll();
        HeaderSemantics.registerAll();
        Changelog.registerAll();
        Dump.registerAll();
        Layout.registerAll();
        LayoutOps.registerAll();
        Tasks.registerAll();
        OffsetImage.registerAll();
        VersionedOps.registerAll();
        ChangelogOps.registerAll();
        final InputStream in = new BufferedInputStream(System.in, 1 << 16);
        while (true) {
            final ObjectNode response = Json.obj();
            boolean stop = false;
            final String line;
            try {
                line = readLine(in);
            } catch (final WireError e) {
                out.println(Json.MAPPER.writeValueAsString(wireError(NullNode.instance, e)));
                out.flush();
                continue;
            }
            if (line == null) {
                break;
            }
            if (line.isBlank()) {
                continue;
            }
            JsonNode id = NullNode.instance;
            try {
                final JsonNode request;
                try {
                    request = decodeTexts(READER.readTree(line));
                } catch (final WireError e) {
                    throw e;
                } catch (final IOException | RuntimeException e) {
                    final String message = String.valueOf(e.getMessage());
                    throw new WireError(message.contains("nesting depth") ? "NestingTooDeep" : "NotJson",
                        "the line is not a JSON request: " + message.split("\n", 2)[0]);
                }
                if (request == null || !request.isObject()) {
                    throw new WireError("NotARequest", "not a request: expected an object with id, op and input");
                }
                final JsonNode requestId = request.path("id");
                if (!requestId.isIntegralNumber() || requestId.bigIntegerValue().signum() < 0) {
                    throw new WireError("BadId", "the request id is not a non-negative integer");
                }
                id = requestId;
                if (!request.path("op").isTextual()) {
                    throw new WireError("BadOp", "the op must be a string");
                }
                final String op = request.get("op").asText();
                final JsonNode input = request.has("input") ? request.get("input") : Json.obj();
                response.set("id", id);
                if (op.equals("hello")) {
                    hello(input, response);
                } else if (op.equals("shutdown")) {
                    Stores.closeAll();
                    response.set("output", Json.obj());
                    stop = true;
                } else {
                    answer(op, input, response);
                }
            } catch (final WireError e) {
                response.removeAll();
                response.setAll(wireError(id, e));
            } catch (Exception | LinkageError e) {
                response.removeAll();
                response.set("id", id);
                response.set("internal_error", Json.obj().put("type", e.getClass().getSimpleName())
                    .put("message", describe(e)));
                e.printStackTrace(System.err);
            }
            out.println(Json.MAPPER.writeValueAsString(encodeTexts(response)));
            out.flush();
            if (stop) {
                break;
            }
        }
        Stores.closeAll();
        out.flush();
        System.exit(0);
    }

    // --- TP-11: bounded, typed reading of hostile lines; TP-12: texts that are not valid Unicode ----------------

    static final int MAX_LINE_BYTES = 16 * 1024 * 1024;
    static final int MAX_DEPTH = 64;
    private static final ObjectMapper READER = new ObjectMapper(JsonFactory.builder()
        .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(MAX_DEPTH).build()).build());

    /** A line the protocol refuses; {@code kind} is the internal error's type (spec/testee-protocol.md TP-11). */
    static final class WireError extends Exception {
        final String kind;

        WireError(final String kind, final String message) {
            super(message);
            this.kind = kind;
        }
    }

    private static ObjectNode wireError(final JsonNode id, final WireError e) {
        final ObjectNode response = Json.obj();
        response.set("id", id);
        response.set("internal_error", Json.obj().put("type", e.kind).put("message", e.getMessage()));
        return response;
    }

    /** The next line as strict UTF-8, null at end of input; a longer line is read to its end and refused. */
    private static String readLine(final InputStream in) throws IOException, WireError {
        final ByteArrayOutputStream line = new ByteArrayOutputStream();
        boolean tooLong = false;
        int b;
        while ((b = in.read()) != -1 && b != '\n') {
            if (line.size() >= MAX_LINE_BYTES) {
                tooLong = true;
            } else {
                line.write(b);
            }
        }
        if (b == -1 && line.size() == 0 && !tooLong) {
            return null;
        }
        if (tooLong) {
            throw new WireError("LineTooLong", "a line longer than " + MAX_LINE_BYTES + " bytes");
        }
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(line.toByteArray())).toString();
        } catch (final CharacterCodingException e) {
            throw new WireError("NotJson", "the line is not UTF-8");
        }
    }

    /** Every {"encoding": "utf-16be", "hex": H} becomes the Java String of those code units (TP-12). */
    static JsonNode decodeTexts(final JsonNode node) throws WireError {
        if (node instanceof ObjectNode object) {
            if (object.size() == 2 && "utf-16be".equals(object.path("encoding").textValue()) && object.path("hex").isTextual()) {
                final String units = object.get("hex").textValue();
                if (units.length() % 4 != 0 || !units.matches("[0-9a-f]*")) {
                    throw new WireError("BadText", "an encoded text is not whole UTF-16 code units");
                }
                final byte[] raw = HexFormat.of().parseHex(units);
                final char[] chars = new char[raw.length / 2];
                for (int i = 0; i < chars.length; i++) {
                    chars[i] = (char) (((raw[2 * i] & 0xff) << 8) | (raw[2 * i + 1] & 0xff));
                }
                return TextNode.valueOf(new String(chars));
            }
        }
        return eachChild(node, Main::decodeTexts);
    }

    /** Every String holding a surrogate that is not half of a pair goes out as its UTF-16 hex form (TP-12). */
    static JsonNode encodeTexts(final JsonNode node) {
        if (node != null && node.isTextual() && !wellFormed(node.textValue())) {
            final StringBuilder units = new StringBuilder();
            for (final char c : node.textValue().toCharArray()) {
                units.append(String.format("%04x", (int) c));
            }
            return Json.obj().put("encoding", "utf-16be").put("hex", units.toString());
        }
        return eachChild(node, Main::encodeTexts);
    }

    /** A rewrite of one JSON value, which may refuse it. */
    @FunctionalInterface
    interface Rewrite<E extends Exception> {
        JsonNode apply(JsonNode node) throws E;
    }

    /** {@code node} with each field value of an object, or each element of an array, replaced in place by its
     *  rewrite; any other node as it is. */
    private static <E extends Exception> JsonNode eachChild(final JsonNode node, final Rewrite<E> rewrite) throws E {
        if (node instanceof ObjectNode object) {
            final Iterator<Map.Entry<String, JsonNode>> fields = object.fields();
            while (fields.hasNext()) {
                final Map.Entry<String, JsonNode> field = fields.next();
                field.setValue(rewrite.apply(field.getValue()));
            }
        } else if (node instanceof ArrayNode array) {
            for (int i = 0; i < array.size(); i++) {
                array.set(i, rewrite.apply(array.get(i)));
            }
        }
        return node;
    }

    private static boolean wellFormed(final String text) {
        for (int i = 0; i < text.length(); i++) {
            final char c = text.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                return false;
            }
        }
        return true;
    }

    private static void hello(final JsonNode input, final ObjectNode response) {
        if (!input.path("protocol").isIntegralNumber() || input.path("protocol").asLong(-1) != 1) {
            response.set("error", Json.obj().put("type", "ProtocolError").put("message", "this testee speaks protocol 1 only"));
            return;
        }
        final ObjectNode output = Json.obj();
        output.put("protocol", 1);
        output.put("implementation", "apache-kafka-streams");
        output.put("version", (String) K.call("org.apache.kafka.common.utils.AppInfoParser", "getVersion", K.t()));
        output.set("capabilities", Json.MAPPER.valueToTree(new ArrayList<>(OPS.keySet())));
        response.set("output", output);
    }

    private static void answer(final String name, final JsonNode input, final ObjectNode response) {
        if (PreReader.routes(name, input)) {
            // UPG-1, UPG-2, UPG-4: the older reader is Kafka PreReader.RELEASE's own store, in a child JVM.
            try {
                response.setAll(PreReader.answer(name, input));
            } catch (K.Unavailable e) {
                response.put("unsupported", true);
                response.put("reason", e.getMessage());
            } catch (Throwable e) {
                response.set(isRefusal(e) ? "error" : "internal_error", error(e));
            }
            return;
        }
        final Op op = OPS.get(name);
        if (op == null) {
            response.put("unsupported", true);
            response.put("reason", "not implemented by the kafka-jvm testee");
            return;
        }
        if (!input.isObject()) {
            response.set("error", error(new Json.InputError("input", "not a JSON object")));
            return;
        }
        try {
            response.set("output", op.apply(input));
        } catch (K.Unavailable e) {
            response.put("unsupported", true);
            response.put("reason", e.getMessage());
        } catch (Throwable e) {
            if (isRefusal(e)) {
                response.set("error", error(e));
            } else {
                response.set("internal_error", Json.obj().put("message", describe(e)));
                e.printStackTrace(System.err);
            }
        }
    }

    /** A refusal (OPS-3) is bad input or an exception thrown inside Kafka (or the JDK code Kafka called);
     *  an exception raised by the testee's own glue is an internal error (TP-7), so a glue bug never passes. */
    static boolean isRefusal(final Throwable e) {
        if (e instanceof Json.InputError) {
            return true;
        }
        if (e instanceof K.Unavailable) {
            return false;
        }
        // HotSpot fills in the stack of only its first few OutOfMemoryErrors; later ones come preallocated and
        // empty. An empty one is an array a length field asked for, as the first ones (with Kafka's frames) show.
        if (e instanceof OutOfMemoryError && e.getStackTrace().length == 0) {
            return true;
        }
        // Kafka's ApiException subclasses (InvalidRecordException, ...) carry no stack trace: their class says it.
        if (e.getClass().getName().startsWith("org.apache.kafka.")) {
            return true;
        }
        for (final StackTraceElement frame : e.getStackTrace()) {
            final String cls = frame.getClassName();
            if (cls.startsWith("org.apache.kafka.") || cls.startsWith("org.rocksdb.")) {
                // Thrown by Kafka (or by the JDK inside a Kafka call): Kafka's refusal, an Error included
                // (a length field asking for an array beyond the VM's limit is answered, not fatal).
                return true;
            }
            if (cls.startsWith("kstate.kafkajvm.")) {
                return false;
            }
        }
        return false;
    }

    static ObjectNode error(final Throwable e) {
        final ObjectNode err = Json.obj();
        err.put("type", e instanceof Json.InputError ? "InputError" : e.getClass().getSimpleName());
        err.put("kafka_exception", e.getClass().getName());
        // Kafka often names the cause only in the wrapped exception (RocksDBStore.openRocksDB's "Error opening
        // store" over RocksDB's "Column families not opened: offsets", UPG-1): the chain is part of its answer.
        final StringBuilder message = new StringBuilder(String.valueOf(e.getMessage()));
        for (Throwable cause = e.getCause(); cause != null && cause != cause.getCause(); cause = cause.getCause()) {
            if (cause.getMessage() != null && !message.toString().contains(cause.getMessage())) {
                message.append(" (caused by ").append(cause.getClass().getName()).append(": ").append(cause.getMessage()).append(')');
            }
        }
        err.put("message", message.toString());
        if (e instanceof Json.InputError) {
            err.put("field", ((Json.InputError) e).field);
        }
        return err;
    }

    static String describe(final Throwable e) {
        final StackTraceElement[] st = e.getStackTrace();
        return e.getClass().getName() + ": " + e.getMessage() + (st.length > 0 ? " at " + st[0] : "");
    }

    /** A sub-output of a composite operation: the output, or {"error": ...} where Kafka refused (TP-6). */
    static ObjectNode capture(final Supplier<ObjectNode> compute) {
        try {
            return compute.get();
        } catch (Throwable e) {
            if (e instanceof K.Unavailable || !isRefusal(e)) {
                throw K.sneaky(e);
            }
            return Json.obj().set("error", error(e));
        }
    }
}
