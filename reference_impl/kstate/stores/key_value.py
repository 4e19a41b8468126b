"""The key-value family's store classes (KV-1, TSKV-*, HV-*): what :mod:`kstate.stores.families` collects for it.

The stores themselves are in :mod:`kstate.stores.kv`, :mod:`kstate.stores.timestamped` and
:mod:`kstate.stores.headers`, their change-logging layers in :mod:`kstate.stores.changelogging`; this module is the
family's own, found by the family's name (``kstate.stores.key_value``, issue 33).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kstate.codecs.store_types import StoreType
from kstate.stores.changelogging import (
    ChangeLoggingKeyValueBytesStore,
    ChangeLoggingTimestampedKeyValueBytesStore,
    ChangeLoggingTimestampedKeyValueBytesStoreWithHeaders,
)
from kstate.stores.headers import InMemoryTimestampedKeyValueStoreWithHeaders, RocksDBTimestampedStoreWithHeaders
from kstate.stores.kv import InMemoryKeyValueStore, RocksDBStore
from kstate.stores.segments import AbstractSegments
from kstate.stores.store_classes import StoreClasses
from kstate.stores.timestamped import InMemoryTimestampedKeyValueStore, RocksDBTimestampedStore
from kstate.stores.typed import KeyValueStore, TimestampedKeyValueStore, TimestampedKeyValueStoreWithHeaders


def family_store_classes() -> Mapping[StoreType, StoreClasses]:
    """The classes of each key-value type: one database, no options beyond the common ones (KV-1)."""
    return {
        StoreType.KEY_VALUE: StoreClasses(RocksDBStore, InMemoryKeyValueStore, ChangeLoggingKeyValueBytesStore,
                                          KeyValueStore),
        StoreType.TIMESTAMPED_KV: StoreClasses(RocksDBTimestampedStore, InMemoryTimestampedKeyValueStore,
                                               ChangeLoggingTimestampedKeyValueBytesStore, TimestampedKeyValueStore),
        StoreType.TIMESTAMPED_KV_WITH_HEADERS: StoreClasses(
            RocksDBTimestampedStoreWithHeaders, InMemoryTimestampedKeyValueStoreWithHeaders,
            ChangeLoggingTimestampedKeyValueBytesStoreWithHeaders, TimestampedKeyValueStoreWithHeaders),
    }


def family_segment_managers() -> Mapping[StoreType, type[AbstractSegments[Any]]]:
    """None: a key-value store is one database, not segments (LAY-2)."""
    return {}


__all__ = ["family_segment_managers", "family_store_classes"]
