package kstate.kafkajvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.VersionedKeyValueStore;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.internals.WrappedStateStore;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;
import java.util.function.IntPredicate;

import static kstate.kafkajvm.Json.obj;
import static kstate.kafkajvm.Main.register;

/** {@code bench.run}: N store operations of one kind timed inside the JVM (benchmarks/test_kafka_side_bench.py), so
 *  that a benchmark measures Kafka's store, not the pipe's round trips. Outside the neutral vocabulary (spec/ops.md):
 *  the conformance harness never sends it. The store is one opened by {@code store.open}, called at the layer the
 *  store.* operations call (the bytes store under the metered layer; the versioned store's innermost store). */
final class Bench {
    private Bench() { }

    /** One timed round: the operations of a kind over the inputs, answering how many entries they read. */
    @FunctionalInterface
    interface Round {
        long run(int round);
    }

    static void registerAll() {
        register("bench.run", Bench::run);
    }

    /** Input: handle, kind, keys (hex), and per kind values, timestamps (window start, session start, as-of time),
     *  to_keys, to_times (session end, fetch end), commit (each round ends with a commit, KV-50), round_shift_ms
     *  (added per round to put timestamps), backward (the backward fetch, fetchAll or findSessions), first_round
     *  (the first round's number); warmup rounds (untimed: the JIT
     *  compiles the loop) and rounds. Output: each timed round's nanoseconds and the entries read. */
    static ObjectNode run(final JsonNode in) {
        final Stores.Handle h = Stores.handle(in);
        final String kind = Json.str(in, "kind");
        final int warmup = (int) Json.lng(in, "warmup", 20);
        final int rounds = (int) Json.lng(in, "rounds", 30);
        // A series cut into blocks (alternating with the other side's) numbers its rounds on from the last block.
        final int first = (int) Json.lng(in, "first_round", 0);
        if (warmup < 0 || rounds < 1 || first < 0) {
            throw new Json.InputError("rounds", "warmup >= 0, rounds >= 1 and first_round >= 0");
        }
        final List<Bytes> keys = bytesList(in, "keys", true);
        final int n = keys.size();
        final List<Bytes> toKeys = bytesList(in, "to_keys", false);
        final List<Bytes> values = bytesList(in, "values", false);
        final long[] times = longs(in, "timestamps");
        final long[] toTimes = longs(in, "to_times");
        for (final Object[] list : new Object[][] {{"to_keys", toKeys == null ? n : toKeys.size()},
                {"values", values == null ? n : values.size()}, {"timestamps", times == null ? n : times.length},
                {"to_times", toTimes == null ? n : toTimes.length}}) {
            if ((int) list[1] != n) {
                throw new Json.InputError((String) list[0], "as many entries as keys (" + n + ")");
            }
        }
        // Puts with timestamps continue round after round where the last stopped, so they stay in order.
        final long shift = Json.lng(in, "round_shift_ms", 0);
        final Map<TopicPartition, Long> offsets = Map.of(new TopicPartition("bench-changelog", 0), 1L);
        final boolean commit = Json.bool(in, "commit", false);
        // window_fetch, window_fetch_all and find_sessions: Kafka's backward variant (backwardFetch, ...).
        final boolean backward = Json.bool(in, "backward", false);
        final StateStore bytesLayer = ((WrappedStateStore<?, ?, ?>) h.root).wrapped();
        final Round round;
        switch (kind) {
            case "put": {
                final KeyValueStore<Bytes, byte[]> kv = KeyValueFamily.orNull(h);
                need(kv != null && values != null, h, kind);
                round = writes(n, (r, i) -> kv.put(keys.get(i), values.get(i).get()));
                break;
            }
            case "get": {
                final KeyValueStore<Bytes, byte[]> kv = KeyValueFamily.orNull(h);
                need(kv != null, h, kind);
                round = reads(n, i -> kv.get(keys.get(i)) != null);
                break;
            }
            case "range": {
                final KeyValueStore<Bytes, byte[]> kv = KeyValueFamily.orNull(h);
                need(kv != null && toKeys != null, h, kind);
                round = scans(n, i -> kv.range(keys.get(i), toKeys.get(i)));
                break;
            }
            case "prefix_scan": {
                // keys are the prefixes.
                final KeyValueStore<Bytes, byte[]> kv = KeyValueFamily.orNull(h);
                need(kv != null, h, kind);
                final ByteArraySerializer serializer = new ByteArraySerializer();
                round = scans(n, i -> kv.prefixScan(keys.get(i).get(), serializer));
                break;
            }
            case "all": {
                // One all() per key given (the keys themselves unused).
                final KeyValueStore<Bytes, byte[]> kv = KeyValueFamily.orNull(h);
                need(kv != null, h, kind);
                round = scans(n, i -> kv.all());
                break;
            }
            case "window_fetch_all": {
                // One fetchAll(timestamps[i], to_times[i]) per key given (the keys themselves unused).
                final WindowStore<Bytes, byte[]> w = WindowFamily.orNull(h);
                need(w != null && times != null && toTimes != null, h, kind);
                round = scans(n, i -> backward ? w.backwardFetchAll(times[i], toTimes[i]) : w.fetchAll(times[i], toTimes[i]));
                break;
            }
            case "window_put": {
                final WindowStore<Bytes, byte[]> w = WindowFamily.orNull(h);
                need(w != null && values != null && times != null, h, kind);
                round = writes(n, (r, i) -> w.put(keys.get(i), values.get(i).get(), times[i] + r * shift));
                break;
            }
            case "window_fetch": {
                final WindowStore<Bytes, byte[]> w = WindowFamily.orNull(h);
                need(w != null && times != null && toTimes != null, h, kind);
                round = scans(n, i -> backward ? w.backwardFetch(keys.get(i), times[i], toTimes[i])
                    : w.fetch(keys.get(i), times[i], toTimes[i]));
                break;
            }
            case "session_put": {
                need(bytesLayer instanceof SessionStore && values != null && times != null && toTimes != null, h, kind);
                @SuppressWarnings("unchecked")
                final SessionStore<Bytes, byte[]> s = (SessionStore<Bytes, byte[]>) bytesLayer;
                round = writes(n, (r, i) -> s.put(new Windowed<>(keys.get(i), new SessionWindow(times[i], toTimes[i])),
                    values.get(i).get()));
                break;
            }
            case "find_sessions": {
                // Any session store store.open builds: its bytes layer is a SessionStore over Bytes and byte[].
                need(bytesLayer instanceof SessionStore && times != null && toTimes != null, h, kind);
                @SuppressWarnings("unchecked")
                final SessionStore<Bytes, byte[]> s = (SessionStore<Bytes, byte[]>) bytesLayer;
                round = scans(n, i -> backward ? s.backwardFindSessions(keys.get(i), times[i], toTimes[i])
                    : s.findSessions(keys.get(i), times[i], toTimes[i]));
                break;
            }
            case "versioned_put": {
                final VersionedKeyValueStore<Bytes, byte[]> v = VersionedFamily.innerOrNull(h);
                need(v != null && values != null && times != null, h, kind);
                round = writes(n, (r, i) -> v.put(keys.get(i), values.get(i).get(), times[i] + r * shift));
                break;
            }
            case "versioned_get": {
                final VersionedKeyValueStore<Bytes, byte[]> v = VersionedFamily.innerOrNull(h);
                need(v != null, h, kind);
                round = reads(n, i -> (times == null ? v.get(keys.get(i)) : v.get(keys.get(i), times[i])) != null);
                break;
            }
            default:
                throw new Json.InputError("kind", "put, get, range, prefix_scan, all, window_put, window_fetch, "
                    + "window_fetch_all, session_put, find_sessions, versioned_put or versioned_get");
        }
        final Round timed = commit ? r -> {
            final long found = round.run(r);
            Stores.commit(h, offsets);
            return found;
        } : round;
        long found = 0;
        for (int r = first; r < first + warmup; r++) {
            timed.run(r);
        }
        final ArrayNode nanos = Json.arr();
        for (int r = first + warmup; r < first + warmup + rounds; r++) {
            final long start = System.nanoTime();
            found = timed.run(r);
            nanos.add(System.nanoTime() - start);
        }
        final ObjectNode out = obj();
        out.set("nanos", nanos);
        out.put("found", found);
        return out;
    }

    /** One write per input: {@code write(round, i)}; a write round reads no entries. */
    @FunctionalInterface
    interface Write {
        void at(int round, int i);
    }

    private static Round writes(final int n, final Write write) {
        return r -> {
            for (int i = 0; i < n; i++) {
                write.at(r, i);
            }
            return 0;
        };
    }

    /** One point read per input: the entries read are the reads that found a value. */
    private static Round reads(final int n, final IntPredicate found) {
        return r -> {
            long count = 0;
            for (int i = 0; i < n; i++) {
                count += found.test(i) ? 1 : 0;
            }
            return count;
        };
    }

    /** One scan per input, each iterator read to its end and closed: the entries read are those it returned. */
    private static Round scans(final int n, final IntFunction<KeyValueIterator<?, ?>> scan) {
        return r -> {
            long found = 0;
            for (int i = 0; i < n; i++) {
                try (KeyValueIterator<?, ?> it = scan.apply(i)) {
                    while (it.hasNext()) {
                        it.next();
                        found++;
                    }
                }
            }
            return found;
        };
    }

    private static void need(final boolean present, final Stores.Handle h, final String kind) {
        if (!present) {
            throw new Json.InputError("kind", kind + " does not apply to the " + h.type + " store " + h.name
                + " with the inputs given");
        }
    }

    private static List<Bytes> bytesList(final JsonNode in, final String name, final boolean required) {
        if (!in.has(name) || in.get(name).isNull()) {
            if (required) {
                throw new Json.InputError(name, "a list of hex strings");
            }
            return null;
        }
        final JsonNode list = in.get(name);
        if (!list.isArray()) {
            throw new Json.InputError(name, "a list of hex strings");
        }
        final List<Bytes> out = new ArrayList<>(list.size());
        for (int i = 0; i < list.size(); i++) {
            out.add(Bytes.wrap(Json.parseHex(list.get(i), name + "[" + i + "]", false)));
        }
        return out;
    }

    private static long[] longs(final JsonNode in, final String name) {
        if (!in.has(name) || in.get(name).isNull()) {
            return null;
        }
        final JsonNode list = in.get(name);
        if (!list.isArray()) {
            throw new Json.InputError(name, "a list of integers");
        }
        final long[] out = new long[list.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = Json.asLong(list.get(i), name + "[" + i + "]");
        }
        return out;
    }
}
