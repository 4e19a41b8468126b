"""KIP-1271 timestamped key-value stores with headers: ``[varint hsize][headers][ts][value]`` (spec/kv-stores.md).

``RocksDBTimestampedStoreWithHeaders`` keeps its data in ``keyValueWithTimestampAndHeaders``. At open
(KV-38, UPG-6..UPG-8): a ``keyValueWithTimestamp`` family with data means upgrade mode from a
timestamped store (``convertToHeaderFormat``); an empty one is dropped; data in ``default`` means upgrade
from a plain store (``convertFromPlainToHeaderFormat``, timestamp -1); data in both is refused.
"""

from __future__ import annotations

from kstate.codecs.layout import ColumnFamilyPlan, LayoutError
from kstate.codecs.store_types import DEFAULT_CF, TIMESTAMPED_CF, TIMESTAMPED_HEADERS_CF, StoreType
from kstate.stores.column_families import ColumnFamilyLayout
from kstate.stores.kv import InMemoryKeyValueStore, RocksDBStore

TIMESTAMPED_VALUES_WITH_HEADERS_COLUMN_FAMILY = TIMESTAMPED_HEADERS_CF

#: Kafka's message when both ``default`` and ``keyValueWithTimestamp`` hold data (UPG-7).
MIXED_LEGACY_DATA_MESSAGE = (
    "Inconsistent store state for {name}. Cannot have both plain (DEFAULT) and timestamped data simultaneously. "
    "Headers store can upgrade from either plain or timestamped format, but not both."
)


def _headers_layout_message(name: str, exc: LayoutError) -> str | None:
    return MIXED_LEGACY_DATA_MESSAGE.format(name=name) if "plain (DEFAULT) and timestamped" in str(exc) else None


def _headers_mode_message(plan: ColumnFamilyPlan) -> str | None:
    if plan.legacy_cf == DEFAULT_CF:
        return "Opening store %s in upgrade mode from plain key value store"
    if plan.legacy_cf == TIMESTAMPED_CF:
        return "Opening store %s in upgrade mode from timestamped store"
    return "Opening store %s in regular headers-aware mode"


#: The column families of header-aware timestamped key-value stores and window segments (LAY-5, LAY-8, UPG-6..UPG-8).
TIMESTAMPED_WITH_HEADERS_LAYOUT = ColumnFamilyLayout(
    StoreType.TIMESTAMPED_KV_WITH_HEADERS,
    _headers_mode_message,
    _headers_layout_message,
)


class RocksDBTimestampedStoreWithHeaders(RocksDBStore):
    """Kafka's ``RocksDBTimestampedStoreWithHeaders`` (KV-38, UPG-6..UPG-8); constructor as ``RocksDBStore``."""

    store_type = StoreType.TIMESTAMPED_KV_WITH_HEADERS
    COLUMN_FAMILY_LAYOUT = TIMESTAMPED_WITH_HEADERS_LAYOUT


class InMemoryTimestampedKeyValueStoreWithHeaders(InMemoryKeyValueStore):
    """The in-memory header-aware store: values held as ``[varint hsize][headers][ts][value]`` (KV-45)."""

    store_type = StoreType.TIMESTAMPED_KV_WITH_HEADERS
