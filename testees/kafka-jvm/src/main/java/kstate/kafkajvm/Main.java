package kstate.kafkajvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
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

    private Main() { }

    public static void main(final String[] args) throws Exception {
        // Standard output carries nothing but responses (TP-1): anything Kafka or RocksDB prints goes to stderr.
        final PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        Codecs.registerAll();
        KeySchemas.registerAll();
        Stores.registerAll();
        Sessions.registerAll();
        Suppliers.registerAll();
        // Benchmarks only (benchmarks/test_kafka_side_bench.py): outside the neutral vocabulary.
        Bench.registerAll();
        // Operations added beside the original classes: the offsets column family and KIP-1271 formats.
        OffsetsFamily.registerAll();
        HeaderFormats.registerAll();
        HeaderSemantics.registerAll();
        Changelog.registerAll();
        Dump.registerAll();
        Layout.registerAll();
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            final ObjectNode response = Json.obj();
            boolean stop = false;
            JsonNode id = NullNode.instance;
            try {
                final JsonNode request = Json.MAPPER.readTree(line);
                if (request == null || !request.isObject()) {
                    throw new IllegalArgumentException("a request must be a JSON object");
                }
                id = request.has("id") ? request.get("id") : NullNode.instance;
                final String op = request.path("op").asText("");
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
            } catch (Exception | LinkageError e) {
                response.removeAll();
                response.set("id", id);
                response.set("internal_error", Json.obj().put("message", describe(e)));
                e.printStackTrace(System.err);
            }
            out.println(Json.MAPPER.writeValueAsString(response));
            out.flush();
            if (stop) {
                break;
            }
        }
        Stores.closeAll();
        out.flush();
        System.exit(0);
    }

    private static void hello(final JsonNode input, final ObjectNode response) {
        if (input.path("protocol").asInt(-1) != 1) {
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
        err.put("message", String.valueOf(e.getMessage()));
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
