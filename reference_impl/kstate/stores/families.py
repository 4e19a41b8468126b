"""The stores layer's table: for each store type the reference builds, the classes that make its store (KV-1).

:data:`STORE_CLASSES` maps a :class:`~kstate.codecs.store_types.StoreType` to its
:class:`~kstate.stores.store_classes.StoreClasses`: the RocksDB bytes store, the in-memory bytes store, the
change-logging layer and the typed facade; :data:`SEGMENT_MANAGERS` maps each segmented type to the manager its
store keeps its segments with. Neither is written here: each family's own module, ``kstate.stores.<family>`` for
every :class:`~kstate.codecs.store_types.Family` of the table, declares its entries (``family_store_classes()``,
``family_segment_managers()``) and is imported by its name, so a new family needs no line here (issue 33). A
family without such a module raises :class:`~kstate.codecs.store_types.UnknownFamilyError`; a type without an
entry raises :class:`StoreTypeNotBuiltError` naming it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import MappingProxyType, ModuleType
from typing import Any

from kstate.codecs.store_types import STORE_TYPES, Family, StoreType, UnknownFamilyError
from kstate.stores.segments import AbstractSegments
from kstate.stores.store_classes import (
    LoggingConstructor,
    OpenOption,
    StoreClasses,
    StoreOptionError,
    StoreTypeNotBuiltError,
)
from kstate.stores.surface import ChangelogSink, RecordContextHolder

#: What every family module declares: a function answering its entries of each table.
_DECLARATIONS = ("family_store_classes", "family_segment_managers")


def family_module(family: Family) -> ModuleType:
    """``kstate.stores.<family>``, the family's own store module; :class:`UnknownFamilyError` when it has none."""
    name = f"{__package__}.{family.value}"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:  # the module exists and something it imports does not: not ours to hide
            raise
        raise UnknownFamilyError(family, f"kstate.stores.families (no module {name})") from exc


def _declared(family: Family, declaration: str) -> Mapping[StoreType, Any]:
    """The entries ``family``'s module declares with ``declaration``; each must be a type of that family."""
    module = family_module(family)
    declare = getattr(module, declaration, None)
    if declare is None:
        raise UnknownFamilyError(family, f"kstate.stores.families (no {module.__name__}.{declaration})")
    entries: Mapping[StoreType, Any] = declare()
    strays = sorted(t.value for t in entries if STORE_TYPES[t].family is not family)
    if strays:
        raise AssertionError(f"{module.__name__}.{declaration} declares types of another family: {strays}")
    return entries


def _collect(declaration: str) -> dict[StoreType, Any]:
    table: dict[StoreType, Any] = {}
    for family in Family:
        table.update(_declared(family, declaration))
    return {t: table[t] for t in StoreType if t in table}  # in the table's order of types, whatever the modules' order


#: One entry per built store type (``StoreTypeInfo.built`` in the codecs' table), from the families' modules.
STORE_CLASSES: MappingProxyType[StoreType, StoreClasses] = MappingProxyType(_collect(_DECLARATIONS[0]))

if set(STORE_CLASSES) != {t for t, i in STORE_TYPES.items() if i.built}:  # the two tables agree
    raise AssertionError("kstate.stores.families and kstate.codecs.store_types disagree on the built store types")

#: How each segmented store type keeps its segments, as Kafka's suppliers choose (LAY-3, VER-1): one database per
#: segment (window, session) or key-prefix segments in one database (versioned), from the families' modules.
SEGMENT_MANAGERS: MappingProxyType[StoreType, type[AbstractSegments[Any]]] = MappingProxyType(
    _collect(_DECLARATIONS[1]))


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
    "LoggingConstructor",
    "OpenOption",
    "StoreClasses",
    "StoreOptionError",
    "StoreTypeNotBuiltError",
    "changelogging_store",
    "family_module",
    "segment_manager",
    "store_classes",
]
