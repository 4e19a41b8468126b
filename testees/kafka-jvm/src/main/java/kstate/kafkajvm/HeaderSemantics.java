package kstate.kafkajvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;

import java.util.List;

import static kstate.kafkajvm.Json.hexNode;
import static kstate.kafkajvm.Json.obj;
import static kstate.kafkajvm.Main.capture;
import static kstate.kafkajvm.Main.register;

/** {@code headers.semantics} (HDR-1..HDR-6): the steps run on one fresh {@link RecordHeaders}, each answering its
 *  result or Kafka's refusal and the headers after it (RecordHeaders.toArray). */
final class HeaderSemantics {
    private static final List<String> STEPS = List.of("add", "remove", "last_header", "headers", "set_read_only", "to_list", "equals");
    private static final List<String> KEYED = List.of("add", "remove", "last_header", "headers");

    private HeaderSemantics() { }

    static void registerAll() {
        register("headers.semantics", in -> {
            final JsonNode steps = Json.field(in, "steps");
            if (!steps.isArray()) {
                throw new Json.InputError("steps", "a list of steps");
            }
            // A malformed step is the caller's fault: the whole operation is refused before any step runs.
            int i = 0;
            for (final JsonNode step : steps) {
                final String where = "steps[" + i++ + "]";
                if (!step.isObject() || !step.path("op").isTextual() || !STEPS.contains(step.get("op").textValue())) {
                    throw new Json.InputError(where, "an object whose op is one of " + STEPS);
                }
                if (KEYED.contains(step.get("op").textValue())) {
                    if (!step.has("key")) {
                        throw new Json.InputError(where + ".key", "this step needs a key (null allowed)");
                    }
                    if (!step.get("key").isNull() && !step.get("key").isTextual()) {
                        throw new Json.InputError(where + ".key", "a string or null");
                    }
                }
            }
            final RecordHeaders headers = new RecordHeaders();
            final ArrayNode results = Json.arr();
            for (final JsonNode step : steps) {
                final ObjectNode outcome = capture(() -> run(headers, step));
                outcome.set("headers", Json.headersJson(headers.toArray()));
                results.add(outcome);
            }
            return obj().set("steps", results);
        });
    }

    private static ObjectNode run(final RecordHeaders headers, final JsonNode step) {
        final String key = step.has("key") && !step.get("key").isNull() ? step.get("key").textValue() : null;
        switch (step.get("op").textValue()) {
            case "add":
                headers.add(key, step.has("value") ? Json.hexOrNull(step, "value") : null);
                return obj();
            case "remove":
                headers.remove(key);
                return obj();
            case "last_header":
                return obj().set("result", header(headers.lastHeader(key)));
            case "headers": {
                final ArrayNode list = Json.arr();
                for (final Header h : headers.headers(key)) {
                    list.add(header(h));
                }
                return obj().set("result", list);
            }
            case "set_read_only":
                headers.setReadOnly();
                return obj();
            case "to_list":
                return obj().set("result", Json.headersJson(headers.toArray()));
            default: {
                final Headers other = step.has("other") ? Json.headers(step, "other") : null;
                return obj().put("result", headers.equals(other == null ? new RecordHeaders() : other));
            }
        }
    }

    private static JsonNode header(final Header h) {
        return h == null ? NullNode.instance : Json.arr().add(h.key()).add(hexNode(h.value()));
    }
}
