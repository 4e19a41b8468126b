"""State stores over storage engines (RocksDB through rocksdict, and memory), above the pure codecs.

Layering: ``engine`` (storage) < ``column_families`` (staged writes, accessors, each type's column-family
layout) < ``offsets`` (KIP-1035) < ``rocksdb_instance`` (one database's life at any path) <
``kv``/``timestamped``/``headers`` (Kafka's key-value bytes stores, operations over an instance) and
``segments`` (segment managers of window, session and versioned stores) < ``changelogging``/``caching``/
``restore`` (wrappers) < ``typed`` (value facades). Every layer over a store
derives from ``wrapping.WrappedStore`` (the life-cycle forwarded once, ``wrapped()`` the store beneath);
optional capabilities (restore mode, flush, crash, downgrade close, ...) are Protocols in ``api``.
"""
