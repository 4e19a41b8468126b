package kstate.kafkajvm;

import org.apache.kafka.streams.processor.StateStore;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.MutableDBOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Deque;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** store.crash (CACHE-9): the store is lost as a killed process loses it. Kafka's RocksDBStore writes with the WAL
 *  disabled, so what a kill loses is every RocksDB memtable not flushed by a commit; RocksDB flushes them on close
 *  unless avoid_flush_during_shutdown is set (DBImpl::CancelAllBackgroundWork). The crash sets it on each RocksDB
 *  instance the store holds (plain, timestamped, versioned and every segment), closes the native handles, and drops
 *  the Kafka store objects without their close: no cache flush, no position or status row written. */
final class Crash {
    private Crash() { }

    /** Loses the store under {@code root}: in-memory stores lose their content with the objects dropped. */
    static void crash(final StateStore root) {
        final List<RocksDB> dbs = new ArrayList<>();
        final List<ColumnFamilyHandle> families = new ArrayList<>();
        collect(root, dbs, families);
        final MutableDBOptions noFlush = MutableDBOptions.builder().setAvoidFlushDuringShutdown(true).build();
        for (final RocksDB db : dbs) {
            if (!db.isOwningHandle()) {
                continue;
            }
            try {
                db.setDBOptions(noFlush);
            } catch (RocksDBException e) {
                throw new IllegalStateException("cannot turn off the flush at shutdown: " + e.getMessage(), e);
            }
        }
        // The column family handles go first, as RocksDB requires of a close (Kafka's ColumnFamilyAccessor does so).
        for (final ColumnFamilyHandle cf : families) {
            cf.close();
        }
        for (final RocksDB db : dbs) {
            // Unlocks the directory for the reopen; with avoid_flush_during_shutdown the memtables are discarded.
            db.close();
        }
    }

    /** Walks the store's own object graph (Kafka's state.internals classes and their collections) for the RocksDB
     *  instances and column families it holds; the metrics recorder's references are skipped as duplicates. */
    private static void collect(final Object root, final List<RocksDB> dbs, final List<ColumnFamilyHandle> families) {
        final Set<Object> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        final Deque<Object> todo = new ArrayDeque<>();
        todo.push(root);
        while (!todo.isEmpty()) {
            final Object o = todo.pop();
            if (o == null || !seen.add(o)) {
                continue;
            }
            if (o instanceof RocksDB db) {
                dbs.add(db);
            } else if (o instanceof ColumnFamilyHandle cf) {
                families.add(cf);
            } else if (o instanceof Map<?, ?> m) {
                m.values().forEach(todo::push);
            } else if (o instanceof Collection<?> c) {
                c.forEach(todo::push);
            } else if (o.getClass().getName().startsWith("org.apache.kafka.streams.state.internals.")
                && !o.getClass().getName().startsWith("org.apache.kafka.streams.state.internals.metrics.")
                && !o.getClass().getName().endsWith("ThreadCache")) {
                for (Class<?> c = o.getClass(); c != null && c != Object.class; c = c.getSuperclass()) {
                    for (final Field f : c.getDeclaredFields()) {
                        if (Modifier.isStatic(f.getModifiers()) || f.getType().isPrimitive()) {
                            continue;
                        }
                        try {
                            f.setAccessible(true);
                            todo.push(f.get(o));
                        } catch (ReflectiveOperationException | RuntimeException e) {
                            // a field the module system hides holds nothing of the store's own
                        }
                    }
                }
            }
        }
    }
}
