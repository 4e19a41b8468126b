package kstate.kafkajvm;

import java.time.Duration;

import static kstate.kafkajvm.Json.obj;
import static kstate.kafkajvm.Main.register;

/** The segment intervals Kafka's store suppliers choose (WIN-16, SESS-11, VER-23): each operation asks the supplier
 *  Kafka's Stores.* method builds (or, for the versioned default, the supplier's own function) and answers its
 *  segmentIntervalMs(); the suppliers' checks are the refusals. */
final class Suppliers {
    private Suppliers() { }

    static void registerAll() {
        register("window.segment_interval", in -> {
            if (in.has("segment_interval") && !in.get("segment_interval").isNull()) {
                throw new K.Unavailable("Kafka has no public segment interval for window stores (Stores.persistentWindowStore "
                    + "picks its default; the internal supplier that takes one does not check it)");
            }
            final Duration retention = Duration.ofMillis(Json.lng(in, "retention"));
            final Duration size = Duration.ofMillis(Json.lng(in, "window_size"));
            return obj().put("segment_interval",
                org.apache.kafka.streams.state.Stores.persistentWindowStore("store", retention, size, false).segmentIntervalMs());
        });
        register("session.segment_interval", in -> obj().put("segment_interval",
            org.apache.kafka.streams.state.Stores.persistentSessionStore("store", Duration.ofMillis(Json.lng(in, "retention")))
                .segmentIntervalMs()));
        // RocksDbVersionedKeyValueBytesStoreSupplier.defaultSegmentInterval is the function itself: Stores refuses a
        // negative history retention before it, the operation (VER-23) asks for the function's answer.
        register("versioned.default_segment_interval", in -> obj().put("segment_interval", (long) K.invoke(
            K.method(K.cls("RocksDbVersionedKeyValueBytesStoreSupplier"), "defaultSegmentInterval", long.class),
            null, Json.lng(in, "history_retention"))));
    }
}
