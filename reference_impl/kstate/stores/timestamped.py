"""KIP-258 timestamped key-value stores: values ``[timestamp int64 BE][raw value]`` (spec/kv-stores.md).

``RocksDBTimestampedStore`` keeps its data in column family ``keyValueWithTimestamp``; a directory
whose ``default`` family still holds plain values opens in upgrade mode, migrating lazily
(KV-30..KV-37, UPG-5). The in-memory variant holds the timestamped layout directly (KV-45).
"""

from __future__ import annotations

from kstate.codecs.store_types import TIMESTAMPED_CF, StoreType
from kstate.stores.column_families import TIMESTAMPED_LAYOUT
from kstate.stores.kv import InMemoryKeyValueStore, RocksDBStore

TIMESTAMPED_VALUES_COLUMN_FAMILY = TIMESTAMPED_CF


class RocksDBTimestampedStore(RocksDBStore):
    """Kafka's ``RocksDBTimestampedStore`` (KV-30..KV-37): ``keyValueWithTimestamp``, lazy upgrade from ``default``.

    Same constructor as :class:`~kstate.stores.kv.RocksDBStore`; ``mode`` is ``"upgrade"`` when the
    ``default`` family held data at open, else ``"regular"``.
    """

    store_type = StoreType.TIMESTAMPED_KV
    COLUMN_FAMILY_LAYOUT = TIMESTAMPED_LAYOUT


class InMemoryTimestampedKeyValueStore(InMemoryKeyValueStore):
    """Kafka's ``InMemoryTimestampedKeyValueStoreMarker`` over ``InMemoryKeyValueStore``: values held as
    ``[ts][value]`` (KV-45)."""

    store_type = StoreType.TIMESTAMPED_KV
