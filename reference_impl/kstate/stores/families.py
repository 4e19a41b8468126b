"""The stores layer's table: for each store type the reference builds, the classes that make its store (KV-1).

:data:`STORE_CLASSES` maps a :class:`~kstate.codecs.store_types.StoreType` to its :class:`StoreClasses`: the
RocksDB bytes store, the in-memory bytes store, the change-logging layer and the typed facade;
:data:`SEGMENT_MANAGERS` maps each segmented type to the manager its store keeps its segments with. What the type's values and changelog records look like is
in :mod:`kstate.codecs.store_types`; this table says only which classes implement it. A type without an
entry raises :class:`StoreTypeNotBuiltError` naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from kstate.codecs.store_types import STORE_TYPES, StoreType
from kstate.errors import KStateError
from kstate.stores.api import StateStore
from kstate.stores.changelogging import (
    ChangeLoggingKeyValueBytesStore,
    ChangeLoggingSessionBytesStore,
    ChangeLoggingTimestampedKeyValueBytesStore,
    ChangeLoggingTimestampedKeyValueBytesStoreWithHeaders,
    ChangeLoggingVersionedKeyValueBytesStore,
    ChangeLoggingWindowBytesStore,
    ChangelogSink,
    RecordContextHolder,
)
from kstate.stores.headers import InMemoryTimestampedKeyValueStoreWithHeaders, RocksDBTimestampedStoreWithHeaders
from kstate.stores.kv import InMemoryKeyValueStore, RocksDBStore
from kstate.stores.segments import (
    AbstractSegments,
    KeyValueSegments,
    LogicalKeyValueSegments,
    TimestampedSegments,
    TimestampedSegmentsWithHeaders,
)
from kstate.stores.session import (
    InMemorySessionStore,
    InMemorySessionStoreWithHeaders,
    RocksDBSessionStore,
    RocksDBSessionStoreWithHeaders,
    SessionSegmentsWithHeaders,
)
from kstate.stores.timestamped import InMemoryTimestampedKeyValueStore, RocksDBTimestampedStore
from kstate.stores.typed import KeyValueStore, TimestampedKeyValueStore, TimestampedKeyValueStoreWithHeaders
from kstate.stores.versioned import (
    InMemoryVersionedStore,
    InMemoryVersionedStoreWithHeaders,
    RocksDBVersionedStore,
    RocksDBVersionedStoreWithHeaders,
)
from kstate.stores.window import (
    RocksDBTimestampedWindowStore,
    RocksDBTimestampedWindowStoreWithHeaders,
    RocksDBWindowStore,
)
from kstate.stores.window_memory import (
    InMemoryTimestampedWindowStore,
    InMemoryTimestampedWindowStoreWithHeaders,
    InMemoryWindowStore,
)


class StoreTypeNotBuiltError(KStateError, ValueError):
    """A store type of the spec that the reference cannot open yet; ``store_type`` names it."""

    def __init__(self, store_type: StoreType) -> None:
        self.store_type = store_type
        super().__init__(f"the reference implementation has no {store_type.value} store yet")


#: A change-logging layer's constructor: ``(inner, store_type, context, sink)``; the inner store is of the type's
#: family (:class:`~kstate.stores.changelogging.ChangeLoggingStore`).
LoggingConstructor = Callable[[Any, StoreType, RecordContextHolder, ChangelogSink], StateStore]


class StoreOptionError(KStateError, ValueError):
    """An option a store type does not take, a required one missing, or one of the wrong kind; ``option`` names it."""

    def __init__(self, option: str, message: str) -> None:
        self.option = option
        super().__init__(f"store option {option!r}: {message}")


@dataclass(frozen=True)
class OpenOption:
    """An option of a store family, passed to its classes by keyword (retention, segment interval, ...)."""

    name: str
    kind: type[int] | type[bool]
    #: A required option has no default; an optional one absent is not passed (the class's default applies).
    required: bool = False


@dataclass(frozen=True)
class StoreClasses:
    """The classes of one store type: bytes stores per backend, change-logging layer, typed facade, and the
    options its constructors take beyond the common ones.

    ``rocksdb(name, task_dir, *, options=RocksDBOptions(...), **family_options)`` and
    ``memory(name, **family_options)`` build the bytes store.
    """

    rocksdb: type[Any]
    memory: type[Any]
    logging: LoggingConstructor
    facade: type[Any] | None = None
    options: tuple[OpenOption, ...] = ()

    def check_options(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """``given`` checked against :attr:`options`: :class:`StoreOptionError` naming any unknown, missing or
        ill-typed option."""
        known = {o.name: o for o in self.options}
        for name in given:
            if name not in known:
                accepted = ", ".join(sorted(known)) or "none"
                raise StoreOptionError(str(name), f"not an option of this store type (accepted: {accepted})")
        out: dict[str, Any] = {}
        for option in self.options:
            if option.name not in given:
                if option.required:
                    raise StoreOptionError(option.name, "required")
                continue
            value = given[option.name]
            # bool is an int in Python: an int option refuses it, a bool option takes nothing else.
            if isinstance(value, bool) is not (option.kind is bool) or not isinstance(value, option.kind):
                raise StoreOptionError(option.name, f"expected {option.kind.__name__}, got {value!r:.80}")
            out[option.name] = value
        return out


#: The options of the versioned types (VS-4): history retention required, segment interval defaulted by VER-23.
VERSIONED_OPTIONS = (OpenOption("history_retention_ms", int, required=True), OpenOption("segment_interval_ms", int))
#: The options of the window types, as ``Stores.persistentWindowStore`` takes them (WS-2): retention and window
#: size required, duplicates off unless asked for, the segment interval defaulted to ``max(retention / 2, 60000)``.
WINDOW_OPTIONS = (
    OpenOption("retention_ms", int, required=True),
    OpenOption("window_size_ms", int, required=True),
    OpenOption("retain_duplicates", bool),
    OpenOption("segment_interval_ms", int),
)
#: A session store's options: its retention (required) and segment interval (default max(retention / 2, 60000)).
SESSION_OPTIONS = (OpenOption("retention_ms", int, required=True), OpenOption("segment_interval_ms", int))

#: One entry per built store type (``StoreTypeInfo.built`` in the codecs' table).
STORE_CLASSES = MappingProxyType({
    StoreType.KEY_VALUE: StoreClasses(RocksDBStore, InMemoryKeyValueStore, ChangeLoggingKeyValueBytesStore,
                                      KeyValueStore),
    StoreType.TIMESTAMPED_KV: StoreClasses(RocksDBTimestampedStore, InMemoryTimestampedKeyValueStore,
                                           ChangeLoggingTimestampedKeyValueBytesStore, TimestampedKeyValueStore),
    StoreType.TIMESTAMPED_KV_WITH_HEADERS: StoreClasses(
        RocksDBTimestampedStoreWithHeaders, InMemoryTimestampedKeyValueStoreWithHeaders,
        ChangeLoggingTimestampedKeyValueBytesStoreWithHeaders, TimestampedKeyValueStoreWithHeaders),
    # VS-4: history retention required, segment interval defaulted by VER-23.
    StoreType.VERSIONED_KV: StoreClasses(RocksDBVersionedStore, InMemoryVersionedStore,
                                         ChangeLoggingVersionedKeyValueBytesStore, options=VERSIONED_OPTIONS),
    StoreType.VERSIONED_KV_WITH_HEADERS: StoreClasses(
        RocksDBVersionedStoreWithHeaders, InMemoryVersionedStoreWithHeaders, ChangeLoggingVersionedKeyValueBytesStore,
        options=VERSIONED_OPTIONS),
    StoreType.WINDOW: StoreClasses(RocksDBWindowStore, InMemoryWindowStore, ChangeLoggingWindowBytesStore,
                                   options=WINDOW_OPTIONS),
    StoreType.TIMESTAMPED_WINDOW: StoreClasses(RocksDBTimestampedWindowStore, InMemoryTimestampedWindowStore,
                                               ChangeLoggingWindowBytesStore, options=WINDOW_OPTIONS),
    StoreType.TIMESTAMPED_WINDOW_WITH_HEADERS: StoreClasses(
        RocksDBTimestampedWindowStoreWithHeaders, InMemoryTimestampedWindowStoreWithHeaders,
        ChangeLoggingWindowBytesStore, options=WINDOW_OPTIONS),
    # Session stores (SS-*): ``Stores.persistentSessionStore(name, retention)`` / ``inMemorySessionStore``.
    StoreType.SESSION: StoreClasses(RocksDBSessionStore, InMemorySessionStore, ChangeLoggingSessionBytesStore,
                                    options=SESSION_OPTIONS),
    StoreType.SESSION_WITH_HEADERS: StoreClasses(RocksDBSessionStoreWithHeaders, InMemorySessionStoreWithHeaders,
                                                 ChangeLoggingSessionBytesStore, options=SESSION_OPTIONS),
})

if set(STORE_CLASSES) != {t for t, i in STORE_TYPES.items() if i.built}:  # the two tables agree
    raise AssertionError("kstate.stores.families and kstate.codecs.store_types disagree on the built store types")


#: How each segmented store type keeps its segments, as Kafka's suppliers choose (LAY-3, VER-1): one database per
#: segment (window, session) or key-prefix segments in one database (versioned). The stores that use these are
#: the next families; a segmented type absent here has no segment manager yet.
SEGMENT_MANAGERS: MappingProxyType[StoreType, type[AbstractSegments[Any]]] = MappingProxyType({
    StoreType.WINDOW: KeyValueSegments,
    StoreType.TIMESTAMPED_WINDOW: TimestampedSegments,
    StoreType.TIMESTAMPED_WINDOW_WITH_HEADERS: TimestampedSegmentsWithHeaders,
    StoreType.SESSION: KeyValueSegments,
    StoreType.SESSION_WITH_HEADERS: SessionSegmentsWithHeaders,
    StoreType.VERSIONED_KV: LogicalKeyValueSegments,
    StoreType.VERSIONED_KV_WITH_HEADERS: LogicalKeyValueSegments,
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
    inner: Any, store_type: StoreType, context: RecordContextHolder, sink: ChangelogSink
) -> Any:
    """The change-logging layer Kafka's builder for ``store_type`` puts around ``inner`` (CL-3 to CL-8)."""
    store_type = StoreType(store_type)
    return store_classes(store_type).logging(inner, store_type, context, sink)


__all__ = [
    "SEGMENT_MANAGERS",
    "STORE_CLASSES",
    "WINDOW_OPTIONS",
    "LoggingConstructor",
    "OpenOption",
    "StoreClasses",
    "StoreOptionError",
    "StoreTypeNotBuiltError",
    "changelogging_store",
    "segment_manager",
    "store_classes",
]
