package kstate.streams;

import java.util.Map;
import org.apache.kafka.streams.state.RocksDBConfigSetter;
import org.rocksdb.Options;

/**
 * A `rocksdb.config.setter` (set through the config's `extra`, INST-5) with 16 KiB memtables, so that RocksDB flushes
 * while a scenario runs: Kafka 4.4 writes its stores without a WAL, and only a flush puts data and the KIP-1035
 * offsets on disk, which a SIGKILL scenario (INST-45) must find there to check anything.
 */
public final class SmallMemtables implements RocksDBConfigSetter {
    @Override
    public void setConfig(String storeName, Options options, Map<String, Object> configs) {
        options.setWriteBufferSize(16 * 1024);
    }

    @Override
    public void close(String storeName, Options options) {
    }
}
