"""Application instances: small processes that each play one Kafka Streams application instance.

:mod:`kstate.app.host` is the process (``python -m kstate.app CONFIG.json``), :mod:`kstate.app.process`
starts, stops, bounces and kills it from a test, :mod:`kstate.store_dump` reads its stores without opening
them for writing, :mod:`kstate.app.restore_io` restores a store from its changelog topic.
"""
