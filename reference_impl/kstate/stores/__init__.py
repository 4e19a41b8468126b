"""State stores over storage engines (RocksDB through rocksdict, and memory), above the pure codecs.

Layering: ``engine`` (storage) < ``kv``/``timestamped``/``headers`` (Kafka's bytes stores) <
``changelogging``/``caching``/``restore`` (wrappers) < ``typed`` (value facades).
"""
