package kstate.kafkajvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import kstate.storetypes.StoreTypes;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.Window;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.processor.internals.InternalTopicConfig;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.SessionBytesStoreSupplier;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.internals.WrappedStateStore;

import java.lang.reflect.Constructor;
import java.time.Duration;
import java.util.List;

import static kstate.kafkajvm.Json.hex;
import static kstate.kafkajvm.Json.hexNode;
import static kstate.kafkajvm.Json.hexOrNull;
import static kstate.kafkajvm.Json.lng;
import static kstate.kafkajvm.Json.obj;
import static kstate.kafkajvm.K.t;
import static kstate.kafkajvm.KeySchemas.TOPIC;
import static kstate.kafkajvm.Main.capture;
import static kstate.kafkajvm.Main.register;

/** Session stores (spec/session-store.md, SS-*): {@code session} and {@code session_with_headers}, built by Kafka's
 *  Stores.persistentSessionStore / persistentSessionStoreWithHeaders / inMemorySessionStore suppliers and its
 *  sessionStoreBuilder / sessionStoreWithHeadersBuilder, the {@code session_store.*} operations, each calling the
 *  bytes-level store under the metered layer (change-logging, caching, then Kafka's RocksDB or in-memory store), and
 *  the session key schemas (SESS-*): SessionKeySchema and the prefixed ones. */
final class SessionFamily extends StoreFamily {
    private SessionFamily() {
        super(StoreTypes.FAMILY_SESSION, TYPES);
    }

    private static final List<String> TYPES = List.of(StoreTypes.SESSION, StoreTypes.SESSION_WITH_HEADERS);

    private static final KeySchemas.Schema[] SCHEMAS = {
        new KeySchemas.Schema("session", "key_schema", "SessionKeySchema", false),
        new KeySchemas.Schema("session", "time_first", "PrefixedSessionKeySchemas$TimeFirstSessionKeySchema", true),
        new KeySchemas.Schema("session", "key_first", "PrefixedSessionKeySchemas$KeyFirstSessionKeySchema", true),
    };

    /** Whether this release offers the type: the header-aware supplier and builder came with KIP-1271. */
    @Override
    boolean offers(final String type) {
        if (type.equals(StoreTypes.SESSION_WITH_HEADERS)) {
            return releaseHasHeaderStores("persistentSessionStoreWithHeaders", t(String.class, Duration.class),
                "sessionStoreWithHeadersBuilder", SessionBytesStoreSupplier.class);
        }
        return super.offers(type);
    }

    /** The options a session store takes (SS-11): retention_ms (required) and segment_interval_ms (RocksDB). */
    @Override
    JsonNode openOptions(final JsonNode options, final String type, final String backend) {
        final JsonNode opts = options == null ? obj() : options;
        Json.onlyOptions(opts, "a session store takes retention_ms and segment_interval_ms", "retention_ms",
            "segment_interval_ms");
        Json.lng(opts, "retention_ms");
        Json.lng(opts, "segment_interval_ms", 0);
        return opts;
    }

    /** Kafka's supplier checks the retention and picks the default segment interval max(retention / 2, 60000)
     *  (SS-11). Kafka has no public segment interval for session stores: a given one is handed to the classes
     *  the supplier's get() builds (RocksDBSegmentedBytesStore or SessionRocksDBSegmentedBytesStoreWithHeaders under
     *  RocksDBSessionStore or RocksDBSessionStoreWithHeaders), which do not check it: an interval of 0 is refused
     *  only because the segments divide by it when the store opens (ArithmeticException), not by a check (SS-11).
     *  The in-memory store has no segments and ignores it, as the reference does. */
    @Override
    @SuppressWarnings("rawtypes")
    StoreBuilder builder(final String type, final String name, final boolean rocks, final JsonNode opts) {
        final Duration retention = Duration.ofMillis(Json.lng(opts, "retention_ms"));
        final boolean headers = type.equals(StoreTypes.SESSION_WITH_HEADERS);
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

    @Override
    void bind(final Stores.Handle h) {
        h.layer = ((WrappedStateStore<?, ?, ?>) h.root).wrapped();
    }

    @Override
    ObjectNode retentionOptions(final long retentionMs) {
        return obj().put("retention_ms", retentionMs);
    }

    @Override
    List<String> loggedWrites() {
        return List.of("put", "remove");
    }

    @Override
    void logWrite(final Stores.Handle h, final String operation, final ObjectNode write, final JsonNode in,
                  final ObjectNode out) throws Exception {
        write.put("start", Json.lng(in, "start"));
        write.put("end", Json.lng(in, "end"));
        if (operation.equals("remove")) {
            write.remove("value");
        }
        Main.OPS.get("session_store." + operation).apply(write);
    }

    /** WindowedChangelogTopicConfig with the retention, as for a window store: the builder is consulted for its
     *  logConfig only, which does not depend on the retention. */
    @Override
    @SuppressWarnings("rawtypes")
    InternalTopicConfig topicConfig(final String type, final String name, final String topic, final JsonNode in) {
        final long retention = Json.lng(in, "retention_ms");
        final StoreBuilder builder = builder(type, name, false, obj().put("retention_ms", 0L));
        return Changelog.windowedTopicConfig(topic, Changelog.withLogConfig(builder, in), retention);
    }

    @Override
    void writeAtZero(final ObjectNode put) throws Exception {
        Main.OPS.get("session_store.put").apply(put.put("start", 0L).put("end", 0L));
    }

    @Override
    void registerOps() {
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
        registerKeySchemas();
        register("session.segment_interval", in -> obj().put("segment_interval",
            org.apache.kafka.streams.state.Stores.persistentSessionStore("store", Duration.ofMillis(Json.lng(in, "retention")))
                .segmentIntervalMs()));
    }

    /** The session key schemas' codec operations (SESS-*). */
    private static void registerKeySchemas() {
        for (final KeySchemas.Schema s : SCHEMAS) {
            schema(s);
            KeySchemas.ranges(s);
            KeySchemas.segmentId(s);
        }
        register("session.time_first.extract_window_bytes_from_non_prefix_session_key", in -> obj().set("bytes", hexNode((byte[]) K.call(
            SCHEMAS[1].cls(), "extractWindowBytesFromNonPrefixSessionKey", t(byte[].class), (Object) hex(in, "bytes")))));
        register("session.key_first.prefix_non_prefix_session_key", in -> obj().set("bytes", hexNode((byte[]) K.call(
            SCHEMAS[2].cls(), "prefixNonPrefixSessionKey", t(byte[].class), (Object) hex(in, "bytes")))));
        register("session.to_binary_windowed", in -> {
            // SessionWindow's constructor refuses an invalid window, which refuses all three (SESS-10).
            final Windowed<byte[]> key = new Windowed<>(hexOrNull(in, "key"), new SessionWindow(lng(in, "start"), lng(in, "end")));
            final ObjectNode out = obj();
            for (final KeySchemas.Schema s : SCHEMAS) {
                final ObjectNode r = capture(() -> obj().set("bytes", hexNode((byte[]) K.call(s.cls(), "toBinary",
                    t(Windowed.class, Serializer.class, Headers.class, String.class), key, new ByteArraySerializer(), new RecordHeaders(), TOPIC))));
                out.set(s.prefixed() ? s.name() : "session_key_schema", r.has("error") ? r : r.get("bytes"));
            }
            return out;
        });
    }

    private static void schema(final KeySchemas.Schema s) {
        final String p = s.prefix();
        register(p + "to_binary", in -> obj().set("bytes", hexNode(((Bytes) K.call(s.cls(), "toBinary",
            t(Bytes.class, long.class, long.class), KeySchemas.wrap(hexOrNull(in, "key")), lng(in, "start"), lng(in, "end"))).get())));
        register(p + "extract", in -> {
            final byte[] data = hex(in, "bytes");
            final ObjectNode out = obj();
            out.set("key", hexNode((byte[]) K.call(s.cls(), "extractKeyBytes", t(byte[].class), (Object) data)));
            out.put("start", (long) K.call(s.cls(), "extractStartTimestamp", t(byte[].class), (Object) data));
            out.put("end", (long) K.call(s.cls(), "extractEndTimestamp", t(byte[].class), (Object) data));
            out.set("window", capture(() -> {
                final Window w = (Window) K.call(s.cls(), "extractWindow", t(byte[].class), (Object) data);
                return obj().put("start", w.start()).put("end", w.end());
            }));
            return out;
        });
    }

    /** The session bytes store of a handle, null for a store of another family. */
    @SuppressWarnings("unchecked")
    static SessionStore<Bytes, byte[]> orNull(final Stores.Handle h) {
        return h.family instanceof SessionFamily ? (SessionStore<Bytes, byte[]>) h.layer : null;
    }

    private static SessionStore<Bytes, byte[]> store(final JsonNode in) {
        final Stores.Handle h = Stores.handle(in);
        final SessionStore<Bytes, byte[]> s = orNull(h);
        if (s == null) {
            throw notOf(h, "session");
        }
        return s;
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
