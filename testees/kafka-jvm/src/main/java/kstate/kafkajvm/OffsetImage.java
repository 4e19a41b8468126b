package kstate.kafkajvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.query.Position;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.DBOptions;
import org.rocksdb.FlushOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksIterator;
import org.rocksdb.WriteOptions;

import java.lang.reflect.Field;
import java.lang.reflect.Proxy;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;

import static kstate.kafkajvm.Json.hexNode;
import static kstate.kafkajvm.Json.obj;
import static kstate.kafkajvm.K.t;
import static kstate.kafkajvm.Main.register;

/** The offsets column family operations on an image (spec/offsets.md OFF-4..7, OFF-19, OFF-20): the image is
 *  loaded into a real RocksDB (a default and an offsets column family) in a temporary directory, and Kafka's
 *  own RocksDBStore accessor (SingleColumnFamilyAccessor over AbstractColumnFamilyAccessor) runs on it through
 *  Kafka's DirectDBAccessor; the image answered is the offsets family read back after the database is closed.
 *  The legacy checkpoint migration and the downgrade checkpoint are LegacyCheckpointingStateStore's
 *  migrateLegacyOffsets and maybeDowngradeOffsets over a StateDirectory in a temporary state directory. */
final class OffsetImage {
    private static final String ACCESSOR = "RocksDBStore$SingleColumnFamilyAccessor";
    private static final String DB_ACCESSOR = "RocksDBStore$DBAccessor";
    private static final String LEGACY = "LegacyCheckpointingStateStore";

    private OffsetImage() { }

    static void registerAll() {
        register("offsets.open", in -> {
            final boolean ignore = Json.bool(in, "ignore_invalid_state", false);
            final Position[] loaded = new Position[1];
            final List<byte[][]> cf = run(cfIn(in), (accessor, db) ->
                loaded[0] = (Position) K.callOn(accessor, "open", t(K.cls(DB_ACCESSOR), boolean.class), db, ignore));
            return obj().<ObjectNode>set("cf", cfJson(cf)).set("position", positionJson(loaded[0]));
        });
        register("offsets.close", in -> {
            final boolean opened = Json.bool(in, "opened", false);
            if (!in.has("opened")) {
                throw new Json.InputError("opened", "required");
            }
            return obj().set("cf", cfJson(run(cfIn(in), (accessor, db) -> {
                // "opened": this instance opened the store, which the accessor records in the flag it shares with
                // the store (open() sets it); close() writes CLOSED only when it was set.
                ((AtomicBoolean) field(accessor, "storeOpen")).set(opened);
                K.callOn(accessor, "close", t(K.cls(DB_ACCESSOR)), db);
            })));
        });
        register("offsets.committed_offset", in -> {
            final TopicPartition tp = new TopicPartition(Json.str(in, "topic"), Json.integer(in, "partition"));
            final Long[] offset = new Long[1];
            run(cfIn(in), (accessor, db) ->
                offset[0] = (Long) K.callOn(accessor, "getCommittedOffset", t(K.cls(DB_ACCESSOR), TopicPartition.class), db, tp));
            return obj().set("offset", offset[0] == null ? com.fasterxml.jackson.databind.node.NullNode.instance
                : Json.F.numberNode(offset[0]));
        });
        register("offsets.commit", in -> {
            final Map<TopicPartition, Long> offsets = Stores.offsets(in, "offsets");
            Json.field(in, "offsets");
            return obj().set("cf", cfJson(run(cfIn(in), (accessor, db) -> commitOffsets(accessor, db, offsets))));
        });
        register("offsets.commit_position", OffsetImage::commitPosition);
        register("offsets.migrate_checkpoint", OffsetImage::migrateCheckpoint);
        register("offsets.migrate_position_file", OffsetImage::migratePositionFile);
        register("checkpoint.write_downgrade", OffsetImage::writeDowngrade);
    }

    @FunctionalInterface
    private interface Body {
        void apply(Object accessor, Object db) throws Exception;
    }

    /** 4.3's commit(db, offsets); 4.4's commit(db, position, offsets) with the position the store holds, which is
     *  what open() would load from the image (its position entry, else empty): a 4.4 store commits both at once. */
    private static void commitOffsets(final Object accessor, final Object db, final Map<TopicPartition, Long> offsets)
            throws Exception {
        final Class<?> dbType = K.cls(DB_ACCESSOR);
        try {
            K.method(accessor.getClass().getSuperclass(), "commit", dbType, Map.class);
        } catch (K.Unavailable e) {
            final byte[] stored = (byte[]) K.callOn(db, "get", t(ColumnFamilyHandle.class, byte[].class),
                field(accessor, "offsetColumnFamilyHandle"), field(accessor, "positionKey"));
            final Position position = stored == null ? Position.emptyPosition()
                : (Position) K.call("PositionSerde", "deserialize", t(ByteBuffer.class), ByteBuffer.wrap(stored));
            K.callOn(accessor, "commit", t(dbType, Position.class, Map.class), db, position, offsets);
            return;
        }
        K.callOn(accessor, "commit", t(dbType, Map.class), db, offsets);
    }

    private static List<byte[][]> cfIn(final JsonNode in) {
        final JsonNode list = Json.field(in, "cf");
        final List<byte[][]> out = new ArrayList<>();
        if (list.isNull()) {
            return out;
        }
        if (!list.isArray()) {
            throw new Json.InputError("cf", "a list of [key, value] hex pairs");
        }
        int i = 0;
        for (final JsonNode pair : list) {
            final String where = "cf[" + i++ + "]";
            if (!pair.isArray() || pair.size() != 2) {
                throw new Json.InputError(where, "a [key, value] pair");
            }
            out.add(new byte[][] {Json.parseHex(pair.get(0), where, false), Json.parseHex(pair.get(1), where, false)});
        }
        return out;
    }

    private static ArrayNode cfJson(final List<byte[][]> cf) {
        final ArrayNode out = Json.arr();
        for (final byte[][] e : cf) {
            out.add(Json.arr().add(hexNode(e[0])).add(hexNode(e[1])));
        }
        return out;
    }

    private static Position position(final JsonNode json) throws Exception {
        final ObjectNode serialized = Main.OPS.get("position.serialize").apply(obj().set("position", json));
        return (Position) K.call("PositionSerde", "deserialize", t(ByteBuffer.class), ByteBuffer.wrap(Json.hex(serialized, "bytes")));
    }

    private static JsonNode positionJson(final Position position) throws Exception {
        final ByteBuffer bytes = (ByteBuffer) K.call("PositionSerde", "serialize", t(Position.class), position);
        return Main.OPS.get("position.deserialize").apply(obj().set("bytes", hexNode(bytes.array()))).get("position");
    }

    private static Object field(final Object target, final String name) {
        for (Class<?> c = target.getClass(); c != null; c = c.getSuperclass()) {
            try {
                final Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(target);
            } catch (NoSuchFieldException e) {
                // the superclass
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
        }
        throw new K.Unavailable("this Kafka release's column family accessor has no field " + name);
    }

    /** Loads the image into a fresh database, runs the body on Kafka's accessor, closes, and reads the image back. */
    private static List<byte[][]> run(final List<byte[][]> image, final Body body) throws Exception {
        RocksDB.loadLibrary();
        final Path dir = Files.createTempDirectory("kstate-offsets-image");
        try {
            final List<ColumnFamilyDescriptor> descriptors = List.of(
                new ColumnFamilyDescriptor(RocksDB.DEFAULT_COLUMN_FAMILY),
                new ColumnFamilyDescriptor("offsets".getBytes(StandardCharsets.UTF_8)));
            try (DBOptions options = new DBOptions().setCreateIfMissing(true).setCreateMissingColumnFamilies(true);
                 WriteOptions write = new WriteOptions(); FlushOptions flush = new FlushOptions().setWaitForFlush(true)) {
                final List<ColumnFamilyHandle> handles = new ArrayList<>();
                try (RocksDB db = RocksDB.open(options, dir.toString(), descriptors, handles)) {
                    for (final byte[][] e : image) {
                        db.put(handles.get(1), e[0], e[1]);
                    }
                    final Object store = K.construct("RocksDBStore", t(String.class, String.class), "store", "rocksdb");
                    final Object accessor = K.construct(ACCESSOR, t(K.cls("RocksDBStore"), ColumnFamilyHandle.class,
                        ColumnFamilyHandle.class), store, handles.get(1), handles.get(0));  // (store, offsets, data)
                    final Object dbAccessor = K.construct("RocksDBStore$DirectDBAccessor",
                        t(RocksDB.class, FlushOptions.class, WriteOptions.class), db, flush, write);
                    try {
                        body.apply(accessor, dbAccessor);
                    } finally {
                        for (final ColumnFamilyHandle h : handles) {
                            h.close();
                        }
                    }
                }
                final List<byte[][]> out = new ArrayList<>();
                final List<ColumnFamilyHandle> reopened = new ArrayList<>();
                try (RocksDB db = RocksDB.openReadOnly(options, dir.toString(), descriptors, reopened)) {
                    try (RocksIterator it = db.newIterator(reopened.get(1))) {
                        for (it.seekToFirst(); it.isValid(); it.next()) {
                            out.add(new byte[][] {it.key(), it.value()});
                        }
                    } finally {
                        reopened.forEach(ColumnFamilyHandle::close);
                    }
                }
                out.sort(Comparator.comparing((byte[][] e) -> e[0], Arrays::compareUnsigned));
                return out;
            }
        } finally {
            delete(dir);
        }
    }

    private static void delete(final Path dir) throws Exception {
        try (Stream<Path> walk = Files.walk(dir)) {
            for (final Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }

    /** migrateLegacyOffsets for one store: the task's .checkpoint (the given bytes) read by Kafka, the offsets of
     *  the store's changelog partitions committed into the store's offsets family, and the file deleted. The
     *  store handed to Kafka is the image's: its commit is the RocksDBStore accessor's commit on the image. */
    private static ObjectNode migrateCheckpoint(final JsonNode in) throws Exception {
        final byte[] checkpoint = Json.hexOrNull(in, "checkpoint");
        if (!in.has("checkpoint")) {
            throw new Json.InputError("checkpoint", "required (null: no file)");
        }
        final JsonNode partitions = Json.field(in, "changelog_partitions");
        if (!partitions.isArray()) {
            throw new Json.InputError("changelog_partitions", "a list of [topic, partition]");
        }
        final List<TopicPartition> tps = new ArrayList<>();
        int i = 0;
        for (final JsonNode p : partitions) {
            final String where = "changelog_partitions[" + i++ + "]";
            if (!p.isArray() || p.size() != 2 || !p.get(0).isTextual() || !p.get(1).canConvertToInt()) {
                throw new Json.InputError(where, "a [topic, partition] pair");
            }
            tps.add(new TopicPartition(p.get(0).textValue(), p.get(1).intValue()));
        }
        final Path stateDir = Files.createTempDirectory("kstate-migrate");
        try {
            final org.apache.kafka.streams.processor.internals.StateDirectory directory = Tasks.stateDirectory(stateDir, "app");
            final Path taskDir = taskDir(directory);
            if (checkpoint != null) {
                Files.write(taskDir.resolve(".checkpoint"), checkpoint);
            }
            return obj().set("cf", cfJson(run(cfIn(in), (accessor, db) -> {
                final StateStore store = (StateStore) Proxy.newProxyInstance(OffsetImage.class.getClassLoader(),
                    new Class<?>[] {StateStore.class}, (self, method, args) -> {
                        switch (method.getName()) {
                            case "name": return "store";
                            case "managesOffsets": return true;
                            case "persistent": return true;
                            case "isOpen": return true;
                            case "commit":
                                @SuppressWarnings("unchecked")
                                final Map<TopicPartition, Long> offsets = (Map<TopicPartition, Long>) args[0];
                                commitOffsets(accessor, db, offsets);
                                return null;
                            case "toString": return "store";
                            case "hashCode": return System.identityHashCode(self);
                            case "equals": return self == args[0];
                            default: throw new UnsupportedOperationException("the image's store has no " + method.getName());
                        }
                    });
                final Map<TopicPartition, StateStore> stores = new LinkedHashMap<>();
                tps.forEach(tp -> stores.put(tp, store));
                K.call(LEGACY, "migrateLegacyOffsets", t(String.class,
                    org.apache.kafka.streams.processor.internals.StateDirectory.class, TaskId.class, Map.class),
                    "", directory, TASK, stores);
            })));
        } finally {
            delete(stateDir);
        }
    }

    /** The task both legacy-offset calls run for. */
    private static final TaskId TASK = new TaskId(0, 0);

    /** {@link #TASK}'s directory as Kafka names it, created (getOrCreateDirectoryForTask creates none without
     *  persistent stores). */
    private static Path taskDir(final org.apache.kafka.streams.processor.internals.StateDirectory directory)
            throws java.io.IOException {
        final Path taskDir = directory.getOrCreateDirectoryForTask(TASK).toPath();
        Files.createDirectories(taskDir);
        return taskDir;
    }

    /** maybeDowngradeOffsets as a downgrade-enabled close calls it (upgrade.from a release before 4.3): the
     *  task's .checkpoint Kafka writes, or none. */
    private static ObjectNode writeDowngrade(final JsonNode in) throws Exception {
        Json.field(in, "committed");
        final Map<TopicPartition, Long> committed = Stores.offsets(in, "committed");
        final Path stateDir = Files.createTempDirectory("kstate-downgrade");
        try {
            final org.apache.kafka.streams.processor.internals.StateDirectory directory = Tasks.stateDirectory(stateDir, "app");
            final Path taskDir = taskDir(directory);
            final Class<?> upgradeFrom = K.cls("org.apache.kafka.streams.internals.UpgradeFromValues");
            final Object from42 = Enum.valueOf(upgradeFrom.asSubclass(Enum.class), "UPGRADE_FROM_42");
            K.call(LEGACY, "maybeDowngradeOffsets", t(String.class, upgradeFrom,
                org.apache.kafka.streams.processor.internals.StateDirectory.class, TaskId.class, Map.class),
                "", from42, directory, TASK, committed);
            final Path file = taskDir.resolve(".checkpoint");
            return obj().set("file", Files.isRegularFile(file) ? hexNode(Files.readAllBytes(file))
                : com.fasterxml.jackson.databind.node.NullNode.instance);
        } finally {
            delete(stateDir);
        }
    }

    // --- the position entry (OFF-5, OFF-9, OFF-22) ----------------------------------------------------------------

    /** {@code offsets.commit_position} (OFF-5, OFF-9): the image's position entry written by Kafka's accessor. */
    private static ObjectNode commitPosition(final JsonNode in) throws Exception {
        final Position position = position(Json.field(in, "position"));
        return obj().set("cf", cfJson(run(cfIn(in), (accessor, db) -> commitPositionOnly(accessor, db, position))));
    }

    /** {@code offsets.migrate_position_file} (OFF-22): as a store's init and its next commit do it. The file is placed
     *  as {@code <store>.position} in a store directory; StoreQueryUtils.maybeMigrateExistingPositionFile (which
     *  RocksDBStore.init calls) merges it into the position the store loaded from the image's entry (what the
     *  accessor's open returns), and the next commit writes the merged position to the entry. Kafka leaves the
     *  file in place; it is dropped with the temporary directory. */
    private static ObjectNode migratePositionFile(final JsonNode in) throws Exception {
        if (!in.has("file")) {
            throw new Json.InputError("file", "required (null: no file)");
        }
        final byte[] file = Json.hexOrNull(in, "file");
        final Path dir = Files.createTempDirectory("kstate-position-file");
        try {
            if (file != null) {
                Files.write(dir.resolve("store.position"), file);
            }
            return obj().set("cf", cfJson(run(cfIn(in), (accessor, db) -> {
                final Position position = storedPosition(accessor, db);
                K.call("StoreQueryUtils", "maybeMigrateExistingPositionFile", t(java.io.File.class, String.class,
                    Position.class), dir.toFile(), "store", position);
                if (file != null) {
                    // Without a file the store's position is what it loaded: nothing to migrate, nothing written.
                    commitPositionOnly(accessor, db, position);
                }
            })));
        } finally {
            delete(dir);
        }
    }

    /** The position the image holds (its position entry, else empty), as the accessor's open loads it. */
    private static Position storedPosition(final Object accessor, final Object db) throws Exception {
        final byte[] stored = (byte[]) K.callOn(db, "get", t(ColumnFamilyHandle.class, byte[].class),
            field(accessor, "offsetColumnFamilyHandle"), field(accessor, "positionKey"));
        return stored == null ? Position.emptyPosition()
            : (Position) K.call("PositionSerde", "deserialize", t(ByteBuffer.class), ByteBuffer.wrap(stored));
    }

    /** A commit that writes the position and moves no committed offset. 4.3's accessor has commit(db, Position), which
     *  writes the entry alone. 4.4's has only commit(db, position, offsets), which writes the offsets given and the
     *  position together (an empty map wipes every offset but the status): a store whose task commits while no
     *  changelog offset moved hands it the offsets it holds, read here through the accessor's own
     *  getCommittedOffset for each partition entry of the image. */
    private static void commitPositionOnly(final Object accessor, final Object db, final Position position) throws Exception {
        final Class<?> dbType = K.cls(DB_ACCESSOR);
        try {
            K.method(accessor.getClass().getSuperclass(), "commit", dbType, Position.class);
        } catch (K.Unavailable e) {
            final Map<TopicPartition, Long> held = new LinkedHashMap<>();
            final byte[] status = (byte[]) field(accessor, "statusKey");
            final byte[] positionKey = (byte[]) field(accessor, "positionKey");
            try (RocksIterator it = (RocksIterator) K.callOn(db, "newIterator", t(ColumnFamilyHandle.class),
                    field(accessor, "offsetColumnFamilyHandle"))) {
                for (it.seekToFirst(); it.isValid(); it.next()) {
                    if (Arrays.equals(it.key(), status) || Arrays.equals(it.key(), positionKey)) {
                        continue;
                    }
                    // An entry's key is TopicPartition.toString(): topic, '-', partition. An entry that names no
                    // partition is no offset a store holds, so its task never hands it back: the commit leaves it
                    // (or, with no offset held at all, wipes it with the rest, as 4.4 does for an empty map).
                    final String key = new String(it.key(), StandardCharsets.UTF_8);
                    final int dash = key.lastIndexOf('-');
                    if (dash <= 0 || !key.substring(dash + 1).matches("0|[1-9][0-9]{0,9}")
                            || Long.parseLong(key.substring(dash + 1)) > Integer.MAX_VALUE) {
                        continue;
                    }
                    final TopicPartition tp = new TopicPartition(key.substring(0, dash), Integer.parseInt(key.substring(dash + 1)));
                    held.put(tp, (Long) K.callOn(accessor, "getCommittedOffset", t(dbType, TopicPartition.class), db, tp));
                }
            }
            K.callOn(accessor, "commit", t(dbType, Position.class, Map.class), db, position, held);
            return;
        }
        K.callOn(accessor, "commit", t(dbType, Position.class), db, position);
    }
}
