"""State stores over storage engines (RocksDB through rocksdict, and memory), above the pure codecs.

Layering: ``engine`` (storage) < ``kv``/``timestamped``/``headers`` (Kafka's bytes stores) <
``changelogging``/``caching``/``restore`` (wrappers) < ``typed`` (value facades). Every layer over a store
derives from ``wrapping.WrappedStore`` (the life-cycle forwarded once, ``wrapped()`` the store beneath);
optional capabilities (restore mode, flush, crash, downgrade close, ...) are Protocols in ``api``.
"""
