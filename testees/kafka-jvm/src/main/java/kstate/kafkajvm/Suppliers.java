package kstate.kafkajvm;

import java.time.Duration;
import kstate.storetypes.StoreTypes;

import static kstate.kafkajvm.Json.obj;
import static kstate.kafkajvm.Main.register;

/** The segment intervals Kafka's store suppliers choose (WIN-16, SESS-11, VER-23): each operation asks the supplier
 *  Kafka's Stores.* method builds (or, for the versioned default, the supplier's own function) and answers its
 *  segmentIntervalMs(); the suppliers' checks are the refusals. */
final class Suppliers {
    private Suppliers() { }

    static void registerAll() {
        register("window.segment_interval", in -> {
            final Duration retention = Duration.ofMillis(Json.lng(in, "retention"));
            final Duration size = Duration.ofMillis(Json.lng(in, "window_size"));
            // Stores checks the retention and the window size and picks the default interval (WIN-16).
            final org.apache.kafka.streams.state.WindowBytesStoreSupplier supplier =
                org.apache.kafka.streams.state.Stores.persistentWindowStore("store", retention, size, false);
            if (in.has("segment_interval") && !in.get("segment_interval").isNull()) {
                // A given interval is the internal supplier's (the one store.open builds for segment_interval_ms):
                // its segmentIntervalMs() is what the segments use. Below 1 Kafka has no check (unsupported).
                final long interval = Json.lng(in, "segment_interval");
                Stores.checkableSegmentInterval(interval);
                final Class<?> types = K.cls("RocksDbWindowBytesStoreSupplier$WindowStoreTypes");
                final org.apache.kafka.streams.state.WindowBytesStoreSupplier given =
                    (org.apache.kafka.streams.state.WindowBytesStoreSupplier) K.construct("RocksDbWindowBytesStoreSupplier",
                        K.t(String.class, long.class, long.class, long.class, boolean.class, types), "store",
                        retention.toMillis(), interval, size.toMillis(), false,
                        Enum.valueOf(types.asSubclass(Enum.class), "DEFAULT_WINDOW_STORE"));
                return obj().put("segment_interval", given.segmentIntervalMs());
            }
            return obj().put("segment_interval", supplier.segmentIntervalMs());
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
