"""The stores layer's table: for each store type the reference builds, the classes that make its store (KV-1).

:data:`STORE_CLASSES` maps a :class:`~kstate.codecs.store_types.StoreType` to its :class:`StoreClasses`: the
RocksDB bytes store, the in-memory bytes store, the change-logging layer and the typed facade;
:data:`SEGMENT_MANAGERS` maps each segmented type to the manager its store keeps its segments with. What the type's values and changelog records look like is
in :mod:`kstate.codecs.store_types`; this table says only which classes implement it. A type without an
entry raises :class:`StoreTypeNotBuiltError` naming it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from kstate.codecs.store_types import STORE_TYPES, StoreType
from kstate.errors import KStateError
from kstate.stores.api import KeyValueBytesStore
from kstate.stores.changelogging import (
    ChangeLoggingKeyValueBytesStore,
    ChangeLoggingTimestampedKeyValueBytesStore,
    ChangeLoggingTimestampedKeyValueBytesStoreWithHeaders,
    ChangelogSink,
    RecordContextHolder,
)
from kstate.stores.headers import InMemoryTimestampedKeyValueStoreWithHeaders, RocksDBTimestampedStoreWithHeaders
from kstate.stores.kv import InMemoryKeyValueStore, RocksDBStore
from kstate.stores.segments import AbstractSegments, KeyValueSegments, LogicalKeyValueSegments, TimestampedSegments
from kstate.stores.timestamped import InMemoryTimestampedKeyValueStore, RocksDBTimestampedStore
from kstate.stores.typed import KeyValueStore, TimestampedKeyValueStore, TimestampedKeyValueStoreWithHeaders


class StoreTypeNotBuiltError(KStateError, ValueError):
    """A store type of the spec that the reference cannot open yet; ``store_type`` names it."""

    def __init__(self, store_type: StoreType) -> None:
        self.store_type = store_type
        super().__init__(f"the reference implementation has no {store_type.value} store yet")


#: A change-logging layer's constructor: ``(inner, context, sink)``.
LoggingConstructor = Callable[[KeyValueBytesStore, RecordContextHolder, ChangelogSink], ChangeLoggingKeyValueBytesStore]


def _plain_logging(inner: KeyValueBytesStore, context: RecordContextHolder,
                   sink: ChangelogSink) -> ChangeLoggingKeyValueBytesStore:
    return ChangeLoggingKeyValueBytesStore(inner, StoreType.KEY_VALUE, context, sink)


@dataclass(frozen=True)
class StoreClasses:
    """The classes of one store type: bytes stores per backend, change-logging layer, typed facade."""

    rocksdb: type[RocksDBStore]
    memory: type[InMemoryKeyValueStore]
    logging: LoggingConstructor
    facade: type[KeyValueStore | TimestampedKeyValueStore | TimestampedKeyValueStoreWithHeaders]


#: One entry per built store type (``StoreTypeInfo.built`` in the codecs' table).
STORE_CLASSES = MappingProxyType({
    StoreType.KEY_VALUE: StoreClasses(RocksDBStore, InMemoryKeyValueStore, _plain_logging, KeyValueStore),
    StoreType.TIMESTAMPED_KV: StoreClasses(RocksDBTimestampedStore, InMemoryTimestampedKeyValueStore,
                                           ChangeLoggingTimestampedKeyValueBytesStore, TimestampedKeyValueStore),
    StoreType.TIMESTAMPED_KV_WITH_HEADERS: StoreClasses(
        RocksDBTimestampedStoreWithHeaders, InMemoryTimestampedKeyValueStoreWithHeaders,
        ChangeLoggingTimestampedKeyValueBytesStoreWithHeaders, TimestampedKeyValueStoreWithHeaders),
})

if set(STORE_CLASSES) != {t for t, i in STORE_TYPES.items() if i.built}:  # the two tables agree
    raise AssertionError("kstate.stores.families and kstate.codecs.store_types disagree on the built store types")


#: How each segmented store type keeps its segments, as Kafka's suppliers choose (LAY-3, VER-1): one database per
#: segment (window, session) or key-prefix segments in one database (versioned). The stores that use these are
#: the next families; a segmented type absent here has no segment manager yet.
SEGMENT_MANAGERS: MappingProxyType[StoreType, type[AbstractSegments[Any]]] = MappingProxyType({
    StoreType.WINDOW: KeyValueSegments,
    StoreType.TIMESTAMPED_WINDOW: TimestampedSegments,
    StoreType.SESSION: KeyValueSegments,
    StoreType.VERSIONED_KV: LogicalKeyValueSegments,
})


def segment_manager(store_type: StoreType) -> type[AbstractSegments[Any]]:
    """The segment manager class of a segmented ``store_type``; :class:`StoreTypeNotBuiltError` when none exists yet."""
    manager = SEGMENT_MANAGERS.get(store_type)
    if manager is None:
        raise StoreTypeNotBuiltError(store_type)
    return manager


def store_classes(store_type: StoreType) -> StoreClasses:
    """The classes of ``store_type``; :class:`StoreTypeNotBuiltError` when the reference has none yet."""
    classes = STORE_CLASSES.get(store_type)
    if classes is None:
        raise StoreTypeNotBuiltError(store_type)
    return classes


def changelogging_store(
    inner: KeyValueBytesStore, store_type: StoreType, context: RecordContextHolder, sink: ChangelogSink
) -> ChangeLoggingKeyValueBytesStore:
    """The change-logging layer Kafka's builder for ``store_type`` puts around ``inner`` (CL-3 to CL-8)."""
    return store_classes(StoreType(store_type)).logging(inner, context, sink)


__all__ = ["SEGMENT_MANAGERS", "STORE_CLASSES", "LoggingConstructor", "StoreClasses", "StoreTypeNotBuiltError",
           "changelogging_store", "segment_manager", "store_classes"]
