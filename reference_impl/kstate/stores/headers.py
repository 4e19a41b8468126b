"""KIP-1271 timestamped key-value stores with headers: ``[varint hsize][headers][ts][value]`` (spec/kv-stores.md).

``RocksDBTimestampedStoreWithHeaders`` keeps its data in ``keyValueWithTimestampAndHeaders``. At open
(KV-38, UPG-6..UPG-8): a ``keyValueWithTimestamp`` family with data means upgrade mode from a
timestamped store (``convertToHeaderFormat``); an empty one is dropped; data in ``default`` means upgrade
from a plain store (``convertFromPlainToHeaderFormat``, timestamp -1); data in both is refused.
"""

from __future__ import annotations

from kstate.codecs.store_types import TIMESTAMPED_HEADERS_CF, StoreType
from kstate.stores.column_families import TIMESTAMPED_WITH_HEADERS_LAYOUT
from kstate.stores.kv import InMemoryKeyValueStore, RocksDBStore

TIMESTAMPED_VALUES_WITH_HEADERS_COLUMN_FAMILY = TIMESTAMPED_HEADERS_CF

class RocksDBTimestampedStoreWithHeaders(RocksDBStore):
    """Kafka's ``RocksDBTimestampedStoreWithHeaders`` (KV-38, UPG-6..UPG-8); constructor as ``RocksDBStore``."""

    store_type = StoreType.TIMESTAMPED_KV_WITH_HEADERS
    COLUMN_FAMILY_LAYOUT = TIMESTAMPED_WITH_HEADERS_LAYOUT


class InMemoryTimestampedKeyValueStoreWithHeaders(InMemoryKeyValueStore):
    """The in-memory header-aware store: values held as ``[varint hsize][headers][ts][value]`` (KV-45)."""

    store_type = StoreType.TIMESTAMPED_KV_WITH_HEADERS
