package kstate.streams;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.DBOptions;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;

/**
 * Reads what a store directory says before Kafka Streams opens it, read-only and without its lock: the column
 * families, the KIP-1035 `status` and committed changelog offset (OFF-2, OFF-3), or the legacy `.checkpoint` file
 * (OFF-13). Kafka Streams has no hook that tells an application "this store was opened at offset N" or "this store
 * was left OPEN", and the instance protocol's `opened` and `unclean_shutdown` events (INST-16, INST-21) need both.
 * Nothing here writes: the store logic stays Kafka's.
 */
final class StoreInspector {
    static final byte[] OPEN = {0, 0, 0, 0, 0, 0, 0, 1};

    /** What a store directory held; null fields where it held nothing of the kind. */
    record Inspection(List<String> columnFamilies, byte[] status, Long committedOffset, boolean legacyDataPresent) {
        boolean open() {
            return status != null && !java.util.Arrays.equals(status, new byte[8]);
        }
    }

    private StoreInspector() {
    }

    /** The store at `dbDir`, or null when there is none. `legacyFamily` is checked for data (LAY-7's upgrade mode). */
    static Inspection inspect(Path dbDir, String changelogKey, String legacyFamily) throws RocksDBException {
        if (!Files.exists(dbDir.resolve("CURRENT"))) {
            return null;
        }
        RocksDB.loadLibrary();
        String path = dbDir.toString();
        List<byte[]> names;
        try (Options options = new Options()) {
            names = RocksDB.listColumnFamilies(options, path);
        }
        List<ColumnFamilyDescriptor> descriptors = new ArrayList<>();
        List<String> families = new ArrayList<>();
        for (byte[] name : names) {
            descriptors.add(new ColumnFamilyDescriptor(name));
            families.add(new String(name, StandardCharsets.UTF_8));
        }
        List<ColumnFamilyHandle> handles = new ArrayList<>();
        try (DBOptions options = new DBOptions(); RocksDB db = RocksDB.openReadOnly(options, path, descriptors, handles)) {
            byte[] status = null;
            Long committed = null;
            boolean legacyData = false;
            for (int i = 0; i < families.size(); i++) {
                ColumnFamilyHandle handle = handles.get(i);
                if (families.get(i).equals("offsets")) {
                    status = db.get(handle, "status".getBytes(StandardCharsets.UTF_8));
                    byte[] offset = db.get(handle, changelogKey.getBytes(StandardCharsets.UTF_8));
                    committed = offset != null && offset.length == 8 ? ByteBuffer.wrap(offset).getLong() : null;
                } else if (families.get(i).equals(legacyFamily)) {
                    try (RocksIterator it = db.newIterator(handle)) {
                        it.seekToFirst();
                        legacyData = it.isValid();
                    }
                }
            }
            handles.forEach(ColumnFamilyHandle::close);
            return new Inspection(families, status, committed, legacyData);
        }
    }

    /** The offset of `topic partition` in a task's legacy `.checkpoint` file (OFF-13, OFF-16), or null. */
    static Long checkpointOffset(Path taskDir, String topic, int partition) throws IOException {
        Path file = taskDir.resolve(".checkpoint");
        if (!Files.exists(file)) {
            return null;
        }
        List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        for (String line : lines.subList(Math.min(2, lines.size()), lines.size())) {
            String[] f = line.trim().split("\\s+");
            if (f.length == 3 && f[0].equals(topic) && f[1].equals(Integer.toString(partition))) {
                long offset = Long.parseLong(f[2]);
                return offset >= 0 ? offset : null;
            }
        }
        return null;
    }
}
