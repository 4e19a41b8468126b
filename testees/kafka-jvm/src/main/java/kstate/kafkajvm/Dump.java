package kstate.kafkajvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.state.internals.WrappedStateStore;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.DBOptions;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;

import java.io.File;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static kstate.kafkajvm.Json.hexNode;
import static kstate.kafkajvm.Json.obj;

/** {@code store.dump} (KV-20, RST-5, LAY-3): every column family's raw entries. An open store is read through its
 *  own RocksDB handle and the column family handles its ColumnFamilyAccessor holds (Kafka writes with the WAL off,
 *  so a second, read-only open would miss what is still in the memtable); a closed store, or one named by
 *  location, is opened read-only with rocksdbjni (RocksDB.openReadOnly, its info log kept out of the store
 *  directory). The fields reached are internal to Kafka (RocksDBStore.db, .cfAccessor, AbstractSegments.segments,
 *  LogicalKeyValueSegments.physicalStore): reflection, since Kafka publishes no way to read them. */
final class Dump {
    private Dump() { }

    static {
        RocksDB.loadLibrary();
    }

    static void registerAll() {
        Main.register("store.dump", Dump::dump);
    }

    static ObjectNode dump(final JsonNode in) throws Exception {
        final String type;
        final Path path;
        if (in.has("handle") && !in.get("handle").isNull()) {
            final Stores.Handle h = Stores.handleOrCrashed(in);
            if (!h.backend.equals("rocksdb")) {
                throw new Json.InputError("handle", "an in-memory store has no column families");
            }
            type = h.type;
            if (!h.closed && h.root.isOpen()) {
                return dumpOpen(innermost(h));
            }
            path = storePath(h.context.taskDir.toPath(), h.name, type);
        } else {
            type = in.has("store_type") && !in.get("store_type").isNull() ? Json.str(in, "store_type") : "kv";
            path = storePath(Stores.taskDir(in), Json.str(in, "name"), type);
        }
        if (Stores.segmented(type)) {
            if (!Files.isDirectory(path)) {
                throw new Json.InputError("name", "no segmented store at " + path);
            }
            final Map<String, Path> segments = new TreeMap<>();
            try (var list = Files.list(path)) {
                list.filter(p -> Files.isDirectory(p) && Files.exists(p.resolve("CURRENT")))
                    .forEach(p -> segments.put(p.getFileName().toString(), p));
            }
            final ObjectNode out = obj();
            for (final Map.Entry<String, Path> e : segments.entrySet()) {
                out.set(e.getKey(), readClosed(e.getValue()));
            }
            return obj().set("segments", out);
        }
        if (!Files.exists(path.resolve("CURRENT"))) {
            throw new Json.InputError("name", "no RocksDB store at " + path);
        }
        return obj().set("column_families", readClosed(path));
    }

    /** {@code <task dir>/rocksdb/<store>} for a one-database store, {@code <task dir>/<store>} (the segments'
     *  parent) for a segmented one, as RocksDBStore (DB_FILE_DIR) and AbstractSegments name them. */
    static Path storePath(final Path taskDir, final String name, final String type) {
        return Stores.segmented(type) ? taskDir.resolve(name) : taskDir.resolve("rocksdb").resolve(name);
    }

    /** The store under every wrapping layer (metered, caching, logging), and under the versioned adapter the
     *  versioned store itself: what store.dump and layout.* read. */
    static Object innermost(final Stores.Handle h) throws ReflectiveOperationException {
        StateStore s = h.root;
        while (s instanceof WrappedStateStore) {
            s = ((WrappedStateStore<?, ?, ?>) s).wrapped();
        }
        Object inner = s;
        if (inner.getClass().getSimpleName().startsWith("VersionedKeyValueToBytesStoreAdapter")) {
            inner = Changelog.field(inner.getClass(), "inner").get(inner);
        }
        return inner;
    }

    private static ObjectNode dumpOpen(final Object store) throws ReflectiveOperationException, RocksDBException {
        final Class<?> rocks = K.cls("RocksDBStore");
        if (rocks.isInstance(store)) {
            return obj().set("column_families", readOpen(store));
        }
        if (K.cls("RocksDBVersionedStore").isInstance(store)) {
            final Object segments = Changelog.field(store.getClass(), "segmentStores").get(store);
            final Object physical = Changelog.field(segments.getClass(), "physicalStore").get(segments);
            return obj().set("column_families", readOpen(physical));
        }
        if (K.cls("AbstractRocksDBSegmentedBytesStore").isInstance(store)) {
            final Object segments = Changelog.field(store.getClass(), "segments").get(store);
            final Map<?, ?> map = (Map<?, ?>) Changelog.field(segments.getClass(), "segments").get(segments);
            final Map<String, ObjectNode> bySegment = new TreeMap<>();
            for (final Object segment : map.values()) {
                bySegment.put((String) Changelog.field(rocks, "name").get(segment), readOpen(segment));
            }
            final ObjectNode out = obj();
            bySegment.forEach(out::set);
            return obj().set("segments", out);
        }
        throw new K.Unavailable("no RocksDB database found under " + store.getClass().getName());
    }

    /** The open database of a RocksDBStore, read through the column family handles its accessor holds (a family
     *  Kafka opened and let go, as RocksDBTimestampedStore closes an empty default family in regular mode, is not
     *  among them: RocksDB.getDefaultColumnFamily may answer that closed handle, so it is not asked). */
    private static ObjectNode readOpen(final Object rocksStore) throws ReflectiveOperationException, RocksDBException {
        final Class<?> rocks = K.cls("RocksDBStore");
        final RocksDB db = (RocksDB) Changelog.field(rocks, "db").get(rocksStore);
        final Object accessor = Changelog.field(rocks, "cfAccessor").get(rocksStore);
        final List<ColumnFamilyHandle> handles = new ArrayList<>();
        for (Class<?> c = accessor.getClass(); c != null; c = c.getSuperclass()) {
            for (final Field f : c.getDeclaredFields()) {
                if (ColumnFamilyHandle.class.isAssignableFrom(f.getType())) {
                    f.setAccessible(true);
                    final ColumnFamilyHandle handle = (ColumnFamilyHandle) f.get(accessor);
                    // A handle Kafka has closed (the column family it dropped or let go) is not read: its native
                    // object is gone, and a call on it would crash the JVM.
                    if (handle != null && handle.isOwningHandle()) {
                        handles.add(handle);
                    }
                }
            }
        }
        final Map<String, ArrayNode> families = new TreeMap<>();
        for (final ColumnFamilyHandle handle : handles) {
            families.putIfAbsent(new String(handle.getName(), StandardCharsets.UTF_8), rows(db, handle));
        }
        // A family on disk that Kafka holds no handle for (the empty default family a store in regular or
        // upgrade mode let go) is never written while the store is open, so what is on disk is all of it: read it
        // from a read-only open of the same directory (which takes no lock).
        final File dir = (File) Changelog.field(rocks, "dbDir").get(rocksStore);
        final List<byte[]> onDisk;
        try (Options options = new Options()) {
            onDisk = RocksDB.listColumnFamilies(options, dir.toString());
        }
        final List<String> missing = new ArrayList<>();
        for (final byte[] name : onDisk) {
            final String n = new String(name, StandardCharsets.UTF_8);
            if (!families.containsKey(n)) {
                missing.add(n);
            }
        }
        if (!missing.isEmpty()) {
            final ObjectNode closed;
            try {
                closed = readClosed(dir.toPath());
            } catch (java.io.IOException e) {
                throw new IllegalStateException(e);
            }
            for (final String n : missing) {
                families.put(n, (ArrayNode) closed.get(n));
            }
        }
        final ObjectNode out = obj();
        families.forEach(out::set);
        return out;
    }

    /** A closed database opened read-only: every column family the directory lists, nothing written into it. */
    private static ObjectNode readClosed(final Path dir) throws RocksDBException, java.io.IOException {
        final List<byte[]> names;
        try (Options options = new Options()) {
            names = RocksDB.listColumnFamilies(options, dir.toString());
        }
        final List<ColumnFamilyDescriptor> descriptors = new ArrayList<>();
        for (final byte[] name : names) {
            descriptors.add(new ColumnFamilyDescriptor(name));
        }
        final List<ColumnFamilyHandle> handles = new ArrayList<>();
        final Path logDir = Files.createTempDirectory("kstate-dump-log");
        final Map<String, ArrayNode> families = new LinkedHashMap<>();
        try (DBOptions options = new DBOptions().setDbLogDir(logDir.toString());
             RocksDB db = RocksDB.openReadOnly(options, dir.toString(), descriptors, handles)) {
            try {
                for (final ColumnFamilyHandle handle : handles) {
                    families.put(new String(handle.getName(), StandardCharsets.UTF_8), rows(db, handle));
                }
            } finally {
                handles.forEach(ColumnFamilyHandle::close);
            }
        } finally {
            Changelog.deleteTree(logDir);
        }
        final ObjectNode out = obj();
        new TreeMap<>(families).forEach(out::set);
        return out;
    }

    private static ArrayNode rows(final RocksDB db, final ColumnFamilyHandle handle) {
        final ArrayNode rows = Json.arr();
        try (RocksIterator it = db.newIterator(handle)) {
            for (it.seekToFirst(); it.isValid(); it.next()) {
                rows.add(Json.arr().add(hexNode(it.key())).add(hexNode(it.value())));
            }
        }
        return rows;
    }
}
