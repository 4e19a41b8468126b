package kstate.kafkajvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.query.Position;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.DBOptions;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

import static kstate.kafkajvm.Json.obj;
import static kstate.kafkajvm.Main.register;
import static kstate.kafkajvm.Main.registerUnsupported;

/** The layout and small-codec operations answered through Kafka's own code (issue 31 item 4):
 *  <ul>
 *  <li>{@code layout.column_families} (LAY-5..8): the families a RocksDB holds are planted with rocksdbjni, the store is
 *      opened over them through Kafka's Stores supplier (store.open), and the answer is what Kafka did: the
 *      accessor RocksDBStore.openRocksDB chose (SingleColumnFamilyAccessor, or DualColumnFamilyAccessor with its old
 *      and new family and value converter), then, after Kafka's close, RocksDB.listColumnFamilies of the directory;</li>
 *  <li>{@code store.table_options} (KV-21, LAY-9): the newest OPTIONS file RocksDB wrote for the store Kafka
 *      configured (OptionsUtil.getLatestOptionsFileName picks it);</li>
 *  <li>{@code position.merge}, {@code position.to_checkpoint}, {@code position.from_checkpoint} (OFF-11, OFF-18):
 *      Position.merge, StoreQueryUtils.checkpointPosition / readPositionFromCheckpoint over an OffsetCheckpoint;</li>
 *  <li>{@code window.next_seqnum} (WIN-6): RocksDBWindowStore.maybeUpdateSeqnumForDups on the store
 *      Stores.persistentWindowStore builds.</li>
 *  </ul>
 *  {@code layout.classify_store_file} and {@code layout.options_format_versions} are the kit's own tools with no
 *  Kafka code behind them: answered unsupported, with the reason. Private fields and methods: reflection. */
final class LayoutOps {
    private LayoutOps() { }

    static {
        RocksDB.loadLibrary();
    }

    static void registerAll() {
        register("position.merge", in -> {
            final Position base = Codecs.positionIn(in, "base");
            final Position other = Codecs.positionIn(in, "other");
            return obj().set("position", Codecs.positionJson(base.merge(other)));
        });
        register("position.to_checkpoint", LayoutOps::positionToCheckpoint);
        register("position.from_checkpoint", LayoutOps::positionFromCheckpoint);
        register("window.next_seqnum", LayoutOps::nextSeqnum);
        register("store.table_options", LayoutOps::tableOptions);
        register("layout.column_families", LayoutOps::columnFamilies);
        register("layout.store_paths", LayoutOps::storePaths);
        registerUnsupported("layout.classify_store_file", "a kit tool with no Kafka code behind it: Kafka never classifies the files of a store "
                + "directory (RocksDB owns them; the rocksdict sidecar is a Python binding's)");
        registerUnsupported("layout.options_format_versions", "a kit tool with no Kafka code behind it: Kafka never reads an OPTIONS text; what "
                + "Kafka's RocksDB writes is answered by store.table_options");
    }

    // --- Position and its checkpoint file (OFF-11, OFF-18) ----------------------------------------------------

    private static Object checkpoint(final File file) {
        return K.construct("OffsetCheckpoint", K.t(File.class), file);
    }

    /** StoreQueryUtils.checkpointPosition into a fresh OffsetCheckpoint; OffsetCheckpoint.write writes no file for
     *  an empty map. */
    private static ObjectNode positionToCheckpoint(final JsonNode in) throws Exception {
        final Position position = Codecs.positionIn(in, "position");
        final Path dir = Files.createTempDirectory("kstate-position");
        try {
            final File file = dir.resolve("store.position").toFile();
            K.call("StoreQueryUtils", "checkpointPosition", K.t(K.cls("OffsetCheckpoint"), Position.class), checkpoint(file), position);
            return obj().set("file", file.exists() ? Json.hexNode(Files.readAllBytes(file.toPath())) : NullNode.instance);
        } finally {
            Changelog.deleteTree(dir);
        }
    }

    /** StoreQueryUtils.readPositionFromCheckpoint of the file (null: none, which OffsetCheckpoint.read reads as empty). */
    private static ObjectNode positionFromCheckpoint(final JsonNode in) throws Exception {
        final byte[] data = Json.hexOrNull(in, "file");
        final Path dir = Files.createTempDirectory("kstate-position");
        try {
            final File file = dir.resolve("store.position").toFile();
            if (data != null) {
                Files.write(file.toPath(), data);
            }
            final Position p = (Position) K.call("StoreQueryUtils", "readPositionFromCheckpoint", K.t(K.cls("OffsetCheckpoint")),
                checkpoint(file));
            return obj().set("position", Codecs.positionJson(p));
        } finally {
            Changelog.deleteTree(dir);
        }
    }

    // --- window seqnum (WIN-6) --------------------------------------------------------------------------------

    /** The RocksDBWindowStore Stores.persistentWindowStore builds (not initialised: the update touches no database),
     *  its private seqnum set to the input, then its maybeUpdateSeqnumForDups. */
    private static ObjectNode nextSeqnum(final JsonNode in) {
        final long seqnum = Json.lng(in, "seqnum");
        if (seqnum < Integer.MIN_VALUE || seqnum > Integer.MAX_VALUE) {
            throw new Json.InputError("seqnum", "Kafka's window store keeps its seqnum in a Java int");
        }
        final boolean retainDuplicates = Json.bool(in, "retain_duplicates", false);
        if (!in.has("retain_duplicates") || !in.get("retain_duplicates").isBoolean()) {
            throw new Json.InputError("retain_duplicates", "a boolean");
        }
        final Object store = org.apache.kafka.streams.state.Stores.persistentWindowStore("store", Duration.ofMinutes(1),
            Duration.ofMillis(1), retainDuplicates).get();
        try {
            final java.lang.reflect.Field field = Changelog.field(store.getClass(), "seqnum");
            field.setInt(store, (int) seqnum);
            K.callOn(store, "maybeUpdateSeqnumForDups", K.t());
            return obj().put("seqnum", field.getInt(store));
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }

    // --- the OPTIONS file RocksDB wrote (KV-21, LAY-9) --------------------------------------------------------

    /** Per column family the block-based table format_version and the comparator, from the OPTIONS file RocksDB
     *  names the latest of a closed store's database (a segmented store's: of each segment, which must agree). */
    private static ObjectNode tableOptions(final JsonNode in) throws Exception {
        final Stores.Handle h = Stores.handleOrCrashed(in);
        if (!h.backend.equals("rocksdb") || !h.closed) {
            throw new Json.InputError("handle", "table options are read from a closed RocksDB store's OPTIONS file");
        }
        final Path store = Dump.storePath(h.context.taskDir.toPath(), h.name, h.type);
        final List<Path> databases = new ArrayList<>();
        if (Files.isRegularFile(store.resolve("CURRENT"))) {
            databases.add(store);
        } else if (Files.isDirectory(store)) {
            try (var list = Files.list(store)) {
                list.filter(p -> Files.isRegularFile(p.resolve("CURRENT"))).sorted().forEach(databases::add);
            }
        }
        if (databases.isEmpty()) {
            throw new Json.InputError("handle", "no RocksDB database under " + store);
        }
        ObjectNode families = null;
        for (final Path db : databases) {
            final ObjectNode these = optionsOf(db);
            if (families != null && !families.equals(these)) {
                throw new IllegalStateException("the segments of " + store + " have different table options");
            }
            families = these;
        }
        return obj().set("column_families", families);
    }

    private static ObjectNode optionsOf(final Path db) throws RocksDBException, java.io.IOException {
        final String name;
        try (org.rocksdb.Env env = org.rocksdb.Env.getDefault()) {
            name = org.rocksdb.OptionsUtil.getLatestOptionsFileName(db.toString(), env);
        }
        final Map<String, ObjectNode> families = new LinkedHashMap<>();
        String section = "";
        for (final String raw : Files.readAllLines(db.resolve(name), StandardCharsets.UTF_8)) {
            final String line = raw.strip();
            if (line.startsWith("[")) {
                section = line;
                continue;
            }
            final int eq = line.indexOf('=');
            if (eq < 0) {
                continue;
            }
            final String key = line.substring(0, eq).strip();
            final String value = line.substring(eq + 1).strip();
            final int quote = section.indexOf('"');
            final String cf = quote >= 0 ? section.substring(quote + 1, section.lastIndexOf('"')) : "";
            if (section.startsWith("[TableOptions/BlockBasedTable") && key.equals("format_version")) {
                families.computeIfAbsent(cf, k -> obj()).put("format_version", value);
            } else if (section.startsWith("[CFOptions") && key.equals("comparator")) {
                families.computeIfAbsent(cf, k -> obj()).put("comparator", value);
            }
        }
        final ObjectNode out = obj();
        families.forEach(out::set);
        return out;
    }

    // --- store paths (LAY-2..4) -------------------------------------------------------------------------------

    /** A store's paths relative to its task directory, as Kafka makes them: the store is opened through Kafka's
     *  Stores supplier (a segmented one written at time 0, which makes a segment), closed, and its directory is where
     *  RocksDB's databases are (a segmented store's: their parent); the position file is the one
     *  StoreQueryUtils.maybeMigrateExistingPositionFile reads (every RocksDB store calls it at open with its task
     *  directory and name), checked by planting it; the checkpoint files are LegacyCheckpointingStateStore
     *  .checkpointFileFor's (for the task, and for the store); a segment directory is named by AbstractSegments
     *  .segmentName of the given interval, under the store directory. */
    private static ObjectNode storePaths(final JsonNode in) throws Exception {
        final String type = Json.str(in, "store_type");
        final String name = Json.str(in, "store_name");
        final boolean withSegment = in.has("segment_id") && !in.get("segment_id").isNull();
        final long segmentId = withSegment ? Json.lng(in, "segment_id") : 0L;
        final long interval = withSegment ? Json.lng(in, "segment_interval") : 0L;
        final Path stateDir = Files.createTempDirectory("kstate-store-paths");
        try {
            final ObjectNode opened = Main.OPS.get("store.open").apply(openInput(type, name, stateDir));
            final Stores.Handle h = Stores.handle(obj().put("handle", opened.get("handle").textValue()));
            final StateStore store = h.root;
            try {
                if (Stores.segmented(type)) {
                    writeAtZero(h);
                }
            } finally {
                Main.OPS.get("store.close").apply(obj().put("handle", h.id));
            }
            final Path taskDir = h.context.taskDir.toPath();
            final List<Path> databases = new ArrayList<>();
            try (var walk = Files.walk(taskDir)) {
                walk.filter(p -> Files.isRegularFile(p.resolve("CURRENT"))).sorted().forEach(databases::add);
            }
            final java.util.Set<Path> parents = new java.util.HashSet<>();
            databases.forEach(p -> parents.add(p.getParent()));
            final Path storeDir;
            if (Stores.segmented(type) && parents.size() == 1) {
                storeDir = parents.iterator().next();
            } else if (!Stores.segmented(type) && databases.size() == 1) {
                storeDir = databases.get(0);
            } else {
                throw new IllegalStateException("the " + type + " store wrote databases the testee cannot place: " + databases);
            }
            final ObjectNode out = obj();
            out.put("store_dir", taskDir.relativize(storeDir).toString());
            out.put("position_file", positionFile(taskDir, name));
            final org.apache.kafka.streams.processor.internals.StateDirectory directory = Tasks.stateDirectory(stateDir, "app", true, false);
            final Class<?> legacy = K.cls("LegacyCheckpointingStateStore");
            final java.lang.reflect.Method checkpointFileFor = K.method(legacy, "checkpointFileFor",
                org.apache.kafka.streams.processor.internals.StateDirectory.class,
                org.apache.kafka.streams.processor.TaskId.class, StateStore.class);
            out.put("task_checkpoint_file", relative(taskDir, (File) K.invoke(checkpointFileFor, null, directory, h.context.taskId, null)));
            out.put("legacy_store_checkpoint_file", relative(taskDir, (File) K.invoke(checkpointFileFor, null, directory, h.context.taskId, store)));
            if (withSegment) {
                if (!Stores.segmented(type)) {
                    throw new Json.InputError("segment_id", "a " + type + " store keeps one database: it has no segment directories");
                }
                final Object segments = K.construct("KeyValueSegments", K.t(String.class, String.class, long.class, long.class),
                    name, "testee", Long.MAX_VALUE, interval);
                out.put("segment_dir", taskDir.relativize(storeDir.resolve(
                    (String) K.callOn(segments, "segmentName", K.t(long.class), segmentId))).toString());
            }
            return out;
        } finally {
            Changelog.deleteTree(stateDir);
        }
    }

    private static String relative(final Path taskDir, final File file) {
        return taskDir.relativize(file.toPath()).toString();
    }

    /** {@code <store>.position}, answered only once Kafka's maybeMigrateExistingPositionFile has read a position
     *  planted there (by StoreQueryUtils.checkpointPosition) for the store of that name in that directory. */
    private static String positionFile(final Path taskDir, final String name) throws Exception {
        final Path dir = Files.createTempDirectory("kstate-position-file");
        try {
            final String candidate = name + ".position";
            final Position planted = Position.fromMap(Map.of("topic", Map.of(0, 5L)));
            K.call("StoreQueryUtils", "checkpointPosition", K.t(K.cls("OffsetCheckpoint"), Position.class),
                checkpoint(dir.resolve(candidate).toFile()), planted);
            final Position read = Position.emptyPosition();
            K.call("StoreQueryUtils", "maybeMigrateExistingPositionFile", K.t(File.class, String.class, Position.class),
                dir.toFile(), name, read);
            if (!read.equals(planted)) {
                throw new IllegalStateException("Kafka's maybeMigrateExistingPositionFile did not read " + candidate);
            }
            return candidate;
        } finally {
            Changelog.deleteTree(dir);
        }
    }

    // --- column families (LAY-5..8) ---------------------------------------------------------------------------

    /** The store.open input of a RocksDB store of the type in {@code stateDir}, logging off, with the options its
     *  family requires (a retention of 120 s: Kafka's default segment interval is then 60 s). */
    private static ObjectNode openInput(final String type, final String name, final Path stateDir) {
        final ObjectNode options = StoreFamily.of(type).retentionOptions(120_000L);
        final ObjectNode open = obj().put("store_type", type).put("name", name).put("state_dir", stateDir.toString())
            .put("logging", false);
        open.set("options", options);
        return open;
    }

    /** A segmented store creates a segment at its first write: one at time 0 lands in segment 0. The value has the
     *  layout of every store format (no headers, timestamp 0, then a value). */
    private static void writeAtZero(final Stores.Handle h) throws Exception {
        final ObjectNode put = obj().put("handle", h.id).put("key", "6b").put("value", "00000000000000000776");
        StoreFamily.of(h.type).writeAtZero(put);
    }

    private static final Map<String, String> CONVERTERS = new LinkedHashMap<>();

    static {
        CONVERTERS.put("org.apache.kafka.streams.state.TimestampedBytesStore#convertToTimestampedFormat", "convert_to_timestamped_format");
        CONVERTERS.put("org.apache.kafka.streams.state.HeadersBytesStore#convertToHeaderFormat", "convert_to_header_format");
        CONVERTERS.put("org.apache.kafka.streams.state.HeadersBytesStore#convertFromPlainToHeaderFormat", "convert_from_plain_to_header_format");
    }

    private static ObjectNode columnFamilies(final JsonNode in) throws Exception {
        final String type = Json.str(in, "store_type");
        final JsonNode existing = in.has("existing") && !in.get("existing").isNull() ? in.get("existing") : obj();
        if (!existing.isObject()) {
            throw new Json.InputError("existing", "an object {column family: has data}");
        }
        final Map<String, Boolean> planted = new LinkedHashMap<>();
        for (final Iterator<Map.Entry<String, JsonNode>> it = existing.fields(); it.hasNext();) {
            final Map.Entry<String, JsonNode> e = it.next();
            if (!e.getValue().isBoolean()) {
                throw new Json.InputError("existing." + e.getKey(), "a boolean");
            }
            planted.put(e.getKey(), e.getValue().booleanValue());
        }
        final boolean segmented = Stores.segmented(type);
        final Path stateDir = Files.createTempDirectory("kstate-column-families");
        try {
            final ObjectNode open = openInput(type, "store", stateDir);
            final Path taskDir = Stores.taskDir(obj().put("state_dir", stateDir.toString()));
            // A segmented store keeps one database per segment: the families are planted in segment 0, which the
            // store's AbstractSegments.openExisting opens at init (named by Kafka's segmentName).
            final Path storeDir = Dump.storePath(taskDir, "store", type);
            final Path db = segmented ? storeDir.resolve((String) K.callOn(K.construct("KeyValueSegments",
                K.t(String.class, String.class, long.class, long.class), "store", "testee", Long.MAX_VALUE, 60_000L),
                "segmentName", K.t(long.class), 0L)) : storeDir;
            final List<String> before = planted.isEmpty() ? List.of() : plant(db, planted);
            final ObjectNode opened = Main.OPS.get("store.open").apply(open);
            final Stores.Handle h = Stores.handle(obj().put("handle", opened.get("handle").textValue()));
            final ObjectNode out = obj();
            try {
                if (segmented) {
                    writeAtZero(h);
                }
                describeAccessor(rocksStore(h), out);
            } finally {
                Main.OPS.get("store.close").apply(obj().put("handle", h.id));
            }
            final List<String> after = list(db);
            // A planted family missing after the close is one Kafka dropped; all of them were open together first.
            // The families form a set: RocksDB lists them by id, which depends on the database's history (a family
            // Kafka adds to an older database comes after `offsets`), so they are answered in name order.
            final java.util.TreeSet<String> families = new java.util.TreeSet<>(before);
            families.addAll(after);
            final ArrayNode openFamilies = Json.arr();
            families.forEach(openFamilies::add);
            final ArrayNode dropped = Json.arr();
            before.stream().filter(n -> !after.contains(n)).sorted().forEach(dropped::add);
            out.set("open", openFamilies);
            out.set("dropped", dropped);
            return out;
        } finally {
            Changelog.deleteTree(stateDir);
        }
    }

    /** A RocksDB at {@code db} holding the families of {@code planted} (default always: RocksDB has it), one entry in
     *  each that has data; answers the families as RocksDB lists them. */
    private static List<String> plant(final Path db, final Map<String, Boolean> planted) throws Exception {
        Files.createDirectories(db);
        final List<ColumnFamilyDescriptor> descriptors = new ArrayList<>();
        descriptors.add(new ColumnFamilyDescriptor(RocksDB.DEFAULT_COLUMN_FAMILY));
        for (final String name : planted.keySet()) {
            if (!name.equals("default")) {
                descriptors.add(new ColumnFamilyDescriptor(name.getBytes(StandardCharsets.UTF_8)));
            }
        }
        final List<ColumnFamilyHandle> handles = new ArrayList<>();
        try (DBOptions options = new DBOptions().setCreateIfMissing(true).setCreateMissingColumnFamilies(true);
             RocksDB rocks = RocksDB.open(options, db.toString(), descriptors, handles)) {
            for (final ColumnFamilyHandle handle : handles) {
                final String name = new String(handle.getName(), StandardCharsets.UTF_8);
                if (planted.getOrDefault(name, false)) {
                    // A key and a value any of the store's formats holds (a value of 12 bytes reads as a timestamp
                    // and a value); the write goes to the WAL, which the store's open replays.
                    rocks.put(handle, new byte[] {0x6b}, new byte[] {0, 0, 0, 0, 0, 0, 0, 7, 0x76, 0x76, 0x76, 0x76});
                }
            }
            for (final ColumnFamilyHandle handle : handles) {
                handle.close();
            }
        }
        return list(db);
    }

    private static List<String> list(final Path db) throws RocksDBException {
        final List<String> names = new ArrayList<>();
        try (Options options = new Options()) {
            for (final byte[] name : RocksDB.listColumnFamilies(options, db.toString())) {
                names.add(new String(name, StandardCharsets.UTF_8));
            }
        }
        return names;
    }

    /** The RocksDBStore holding the store's data: the innermost store, the versioned store's physical store, or
     *  segment 0 of a segmented store. */
    private static Object rocksStore(final Stores.Handle h) throws ReflectiveOperationException {
        final Object inner = Dump.innermost(h);
        final Class<?> rocks = K.cls("RocksDBStore");
        if (rocks.isInstance(inner)) {
            return inner;
        }
        if (K.cls("RocksDBVersionedStore").isInstance(inner)) {
            final Object segments = Changelog.field(inner.getClass(), "segmentStores").get(inner);
            return Changelog.field(segments.getClass(), "physicalStore").get(segments);
        }
        for (final String field : new String[] {"segments", "baseSegments"}) {
            try {
                final Object segments = Changelog.field(inner.getClass(), field).get(inner);
                final Map<?, ?> map = (Map<?, ?>) Changelog.field(segments.getClass(), "segments").get(segments);
                final Object segment = map.get(0L);
                if (segment == null) {
                    throw new IllegalStateException("the store opened no segment 0 (segments " + map.keySet() + ")");
                }
                return segment;
            } catch (K.Unavailable | IllegalArgumentException e) {
                // the next kind of store
            }
        }
        throw new K.Unavailable("no RocksDB database found under " + inner.getClass().getName());
    }

    /** mode, data_cf, legacy_cf and conversion from the accessor Kafka's openRocksDB chose. */
    @SuppressWarnings("unchecked")
    private static void describeAccessor(final Object store, final ObjectNode out) throws ReflectiveOperationException {
        final Object accessor = Changelog.field(K.cls("RocksDBStore"), "cfAccessor").get(store);
        final String kind = accessor.getClass().getSimpleName();
        if (kind.equals("SingleColumnFamilyAccessor")) {
            out.put("data_cf", cfName(Changelog.field(accessor.getClass(), "columnFamily").get(accessor)));
            out.put("mode", "regular");
            out.putNull("legacy_cf");
            out.putNull("conversion");
        } else if (kind.equals("DualColumnFamilyAccessor")) {
            out.put("data_cf", cfName(Changelog.field(accessor.getClass(), "newColumnFamily").get(accessor)));
            out.put("mode", "upgrade");
            out.put("legacy_cf", cfName(Changelog.field(accessor.getClass(), "oldColumnFamily").get(accessor)));
            final Function<byte[], byte[]> converter =
                (Function<byte[], byte[]>) Changelog.field(accessor.getClass(), "valueConverter").get(accessor);
            out.put("conversion", conversion(converter));
        } else {
            throw new IllegalStateException("an accessor the testee does not know: " + accessor.getClass().getName());
        }
    }

    private static String cfName(final Object handle) {
        try {
            return new String(((ColumnFamilyHandle) handle).getName(), StandardCharsets.UTF_8);
        } catch (RocksDBException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Which of Kafka's public conversion functions the accessor's converter is: the one that answers a probe value
     *  as it does (exactly one must). */
    private static String conversion(final Function<byte[], byte[]> converter) {
        final byte[] probe = {0, 0, 0, 0, 0, 0, 0, 7, 0x76, 0x76, 0x76, 0x76};
        final byte[] converted = converter.apply(probe.clone());
        String found = null;
        for (final Map.Entry<String, String> e : CONVERTERS.entrySet()) {
            final String[] at = e.getKey().split("#");
            final byte[] theirs;
            try {
                theirs = (byte[]) K.invoke(K.method(Class.forName(at[0]), at[1], byte[].class), null, (Object) probe.clone());
            } catch (ClassNotFoundException | K.Unavailable missing) {
                continue;
            }
            if (java.util.Arrays.equals(theirs, converted)) {
                if (found != null) {
                    throw new IllegalStateException("the converter answers as both " + found + " and " + e.getValue());
                }
                found = e.getValue();
            }
        }
        if (found == null) {
            throw new IllegalStateException("the accessor's converter is none of Kafka's conversion functions");
        }
        return found;
    }
}
