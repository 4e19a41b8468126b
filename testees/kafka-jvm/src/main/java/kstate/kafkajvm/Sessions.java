package kstate.kafkajvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.SessionBytesStoreSupplier;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.StoreBuilder;

import java.lang.reflect.Constructor;
import java.time.Duration;
import java.util.List;

import static kstate.kafkajvm.Json.hexNode;
import static kstate.kafkajvm.Json.hexOrNull;
import static kstate.kafkajvm.Json.obj;
import static kstate.kafkajvm.Main.register;

/** Session stores (spec/session-store.md, SS-*): {@code session} and {@code session_with_headers}, built by Kafka's
 *  Stores.persistentSessionStore / persistentSessionStoreWithHeaders / inMemorySessionStore suppliers and its
 *  sessionStoreBuilder / sessionStoreWithHeadersBuilder, and the {@code session_store.*} operations, each calling the
 *  bytes-level store under the metered layer (change-logging, caching, then Kafka's RocksDB or in-memory store). */
final class Sessions {
    private Sessions() { }

    static final List<String> TYPES = List.of("session", "session_with_headers");

    /** Whether this release offers the type: the header-aware supplier and builder came with KIP-1271. */
    static boolean hasType(final String type) {
        if (type.equals("session_with_headers")) {
            try {
                org.apache.kafka.streams.state.Stores.class.getMethod("persistentSessionStoreWithHeaders", String.class, Duration.class);
                org.apache.kafka.streams.state.Stores.class.getMethod("sessionStoreWithHeadersBuilder",
                    SessionBytesStoreSupplier.class, org.apache.kafka.common.serialization.Serde.class,
                    org.apache.kafka.common.serialization.Serde.class);
            } catch (NoSuchMethodException e) {
                return false;
            }
        }
        return TYPES.contains(type);
    }

    /** The options a session store takes (SS-11): retention_ms (required) and segment_interval_ms (RocksDB). */
    static void checkOptions(final JsonNode opts) {
        Json.onlyOptions(opts, "a session store takes retention_ms and segment_interval_ms", "retention_ms",
            "segment_interval_ms");
        Json.lng(opts, "retention_ms");
        Json.lng(opts, "segment_interval_ms", 0);
    }

    /** Kafka's supplier checks the retention and picks the default segment interval max(retention / 2, 60000)
     *  (SS-11). Kafka has no public segment interval for session stores: a given one is handed to the classes
     *  the supplier's get() builds (RocksDBSegmentedBytesStore or SessionRocksDBSegmentedBytesStoreWithHeaders under
     *  RocksDBSessionStore or RocksDBSessionStoreWithHeaders), which do not check it: an interval of 0 is refused
     *  only because the segments divide by it when the store opens (ArithmeticException), not by a check (SS-11).
     *  The in-memory store has no segments and ignores it, as the reference does. */
    @SuppressWarnings("rawtypes")
    static StoreBuilder builder(final String type, final String name, final boolean rocks, final JsonNode opts) {
        final Duration retention = Duration.ofMillis(Json.lng(opts, "retention_ms"));
        final boolean headers = type.equals("session_with_headers");
        SessionBytesStoreSupplier supplier;
        if (rocks) {
            supplier = (SessionBytesStoreSupplier) K.invoke(K.method(org.apache.kafka.streams.state.Stores.class,
                headers ? "persistentSessionStoreWithHeaders" : "persistentSessionStore", String.class, Duration.class),
                null, name, retention);
            if (opts.has("segment_interval_ms") && !opts.get("segment_interval_ms").isNull()) {
                supplier = new IntervalSupplier(supplier, Json.lng(opts, "segment_interval_ms"), headers);
            }
        } else {
            supplier = org.apache.kafka.streams.state.Stores.inMemorySessionStore(name, retention);
        }
        return (StoreBuilder) K.invoke(K.method(org.apache.kafka.streams.state.Stores.class,
            headers ? "sessionStoreWithHeadersBuilder" : "sessionStoreBuilder", SessionBytesStoreSupplier.class,
            org.apache.kafka.common.serialization.Serde.class, org.apache.kafka.common.serialization.Serde.class),
            null, supplier, Serdes.Bytes(), Serdes.ByteArray());
    }

    /** Kafka's persistent supplier with another segment interval: name, retention and metrics scope are the
     *  supplier's own; get() builds what Kafka's get() builds, with the interval given. */
    private static final class IntervalSupplier implements SessionBytesStoreSupplier {
        private final SessionBytesStoreSupplier kafka;
        private final long segmentInterval;
        private final boolean headers;

        IntervalSupplier(final SessionBytesStoreSupplier kafka, final long segmentInterval, final boolean headers) {
            this.kafka = kafka;
            this.segmentInterval = segmentInterval;
            this.headers = headers;
        }

        @Override
        public String name() {
            return kafka.name();
        }

        @Override
        @SuppressWarnings("unchecked")
        public SessionStore<Bytes, byte[]> get() {
            final Object schema = K.construct("SessionKeySchema", K.t());
            final Object segmented = K.construct(headers ? "SessionRocksDBSegmentedBytesStoreWithHeaders" : "RocksDBSegmentedBytesStore",
                K.t(String.class, String.class, long.class, long.class, K.cls("SegmentedBytesStore$KeySchema")),
                kafka.name(), kafka.metricsScope(), kafka.retentionPeriod(), segmentInterval, schema);
            return (SessionStore<Bytes, byte[]>) constructWith(headers ? "RocksDBSessionStoreWithHeaders" : "RocksDBSessionStore", segmented);
        }

        @Override
        public String metricsScope() {
            return kafka.metricsScope();
        }

        @Override
        public long segmentIntervalMs() {
            return segmentInterval;
        }

        @Override
        public long retentionPeriod() {
            return kafka.retentionPeriod();
        }
    }

    /** The one-argument constructor of an internal class taking {@code arg} (its parameter type differs between
     *  releases: SegmentedBytesStore in 4.3, AbstractRocksDBSegmentedBytesStore in 4.4). */
    private static Object constructWith(final String simpleName, final Object arg) {
        for (final Constructor<?> c : K.cls(simpleName).getDeclaredConstructors()) {
            if (c.getParameterCount() == 1 && c.getParameterTypes()[0].isInstance(arg)) {
                c.setAccessible(true);
                try {
                    return c.newInstance(arg);
                } catch (java.lang.reflect.InvocationTargetException e) {
                    throw K.sneaky(e.getCause());
                } catch (ReflectiveOperationException e) {
                    throw new IllegalStateException(e);
                }
            }
        }
        throw new IllegalStateException("no constructor of " + simpleName + " takes a " + arg.getClass().getName());
    }

    static void registerAll() {
        register("session_store.put", in -> {
            store(in).put(windowed(in, "key"), hexOrNull(in, "value"));
            return obj();
        });
        register("session_store.remove", in -> {
            store(in).remove(windowed(in, "key"));
            return obj();
        });
        register("session_store.fetch_session", in -> obj().set("value",
            hexNode(store(in).fetchSession(key(in, "key"), Json.lng(in, "start"), Json.lng(in, "end")))));
        register("session_store.find_sessions", in -> {
            final SessionStore<Bytes, byte[]> s = store(in);
            final long earliest = Json.lng(in, "earliest_end");
            final long latest = Json.lng(in, "latest_start");
            final boolean backward = Json.bool(in, "backward", false);
            final Bytes from = key(in, "key_from");
            if (!in.has("key_to") || in.get("key_to").isNull()) {
                return entries(backward ? s.backwardFindSessions(from, earliest, latest) : s.findSessions(from, earliest, latest));
            }
            final Bytes to = key(in, "key_to");
            return entries(backward ? s.backwardFindSessions(from, to, earliest, latest) : s.findSessions(from, to, earliest, latest));
        });
        register("session_store.fetch", in -> {
            final SessionStore<Bytes, byte[]> s = store(in);
            final boolean backward = Json.bool(in, "backward", false);
            final Bytes from = key(in, "key_from");
            if (!in.has("key_to") || in.get("key_to").isNull()) {
                return entries(backward ? s.backwardFetch(from) : s.fetch(from));
            }
            final Bytes to = key(in, "key_to");
            return entries(backward ? s.backwardFetch(from, to) : s.fetch(from, to));
        });
    }

    private static SessionStore<Bytes, byte[]> store(final JsonNode in) {
        final Stores.Handle h = Stores.handle(in);
        if (h.session == null) {
            throw new Json.InputError("handle", "store " + h.name + " is a " + h.type + " store, not a session store");
        }
        return h.session;
    }

    private static Bytes key(final JsonNode in, final String name) {
        final byte[] k = hexOrNull(in, name);
        return k == null ? null : Bytes.wrap(k);
    }

    /** {@code Windowed(key, SessionWindow(start, end))}: Kafka's SessionWindow checks the times (SS-3). */
    private static Windowed<Bytes> windowed(final JsonNode in, final String name) {
        return new Windowed<>(key(in, name), new SessionWindow(Json.lng(in, "start"), Json.lng(in, "end")));
    }

    private static ObjectNode entries(final KeyValueIterator<Windowed<Bytes>, byte[]> it) {
        final ArrayNode entries = Json.arr();
        try (it) {
            while (it.hasNext()) {
                final KeyValue<Windowed<Bytes>, byte[]> kv = it.next();
                entries.add(Json.arr().add(hexNode(kv.key.key().get())).add(kv.key.window().start())
                    .add(kv.key.window().end()).add(hexNode(kv.value)));
            }
        }
        return obj().set("entries", entries);
    }
}
