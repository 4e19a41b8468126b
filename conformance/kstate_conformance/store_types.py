"""The suite's table of store families and its spellings of the store types (spec/ops.md OPS-2: one name each, one
legacy alias), built from the families' own entries.

Each family's model module (``kstate_conformance.models.<name>``) declares its entry, ``FAMILY``: a
:class:`StoreFamily` with its store types, as the spec's text spells them, and its other spellings. This module
finds the models by their names, builds :data:`FAMILIES` from them in the order of their entries (``order``) and
names no family itself. The spellings are written from the spec's text, not imported from the reference, so that the
models, strategies and tests that use them stay independent of the implementation under test;
``tests/test_conformance_imports.py`` checks them against the spec's table.

A family's own spellings (``store_types.SESSION``, ``store_types.KV_TYPES``) are read here by name from its entry
(``spellings``); the table and what is derived from it (:data:`ALL_TYPES`, :data:`FAMILY_OF`...) are built at the
first read of one of them, once every model module has been imported.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

#: The package of the families' model modules, each found by the family's name.
MODELS_PACKAGE = "kstate_conformance.models"


@dataclass(frozen=True, kw_only=True)
class StoreFamily:
    """A store family as the suite speaks of it: the shared modules iterate :data:`FAMILIES` rather than name one.
    Each family's model module declares its own, as ``FAMILY``."""

    #: Its short name: in test ids, in the suite's tables of rules and places; its model module's name too.
    name: str
    #: Its place in the table: the order of spec/ops.md's list of store types, which the cases are parametrized in.
    order: int
    #: Its store types, the plain one first.
    types: tuple[str, ...]
    #: The prefix of its store operations (OPS-2).
    op_prefix: str
    #: Its RocksDB store keeps one database per segment (LAY-2, LAY-3), not one database.
    segmented: bool
    #: The family of its pure codec operations (keys and values in, bytes out; OPS-2), if it has one.
    codec_ops: str | None = None
    #: The prefixes of its own rules (spec/): a rule of one applies at its stores (rule_places).
    rule_prefixes: tuple[str, ...] = ()
    #: How a rule's text names the family, for the prefixes the families share (a regular expression, any case).
    rule_terms: str = ""
    #: How the suite's code names it: a pattern of the Python names (constants, helpers) a case that reaches one of
    #: its stores uses.
    code_names: str = ""
    #: Part of the name of the test modules that are the family's own.
    module_part: str = ""
    #: Its types whose stored value keeps the record timestamp (TSKV-1, HV-6).
    timestamped_types: tuple[str, ...] = ()
    #: Its merged header-aware types (HV-6, HV-11).
    headers_types: tuple[str, ...] = ()
    #: Its types that are only a column-family layout (LAY-5 to LAY-8): no store of them is opened.
    layout_only_types: tuple[str, ...] = ()
    #: Legacy spelling -> the type it names (spec/ops.md): accepted wherever a store type is read, never answered.
    aliases: tuple[tuple[str, str], ...] = ()
    #: The names the shared modules read its spellings by (``store_types.<NAME>``), with their values.
    spellings: tuple[tuple[str, object], ...] = ()


class UnknownStoreTypeError(ValueError):
    """A dispatch of the suite over store types met one it has no branch for; ``store_type`` names it, ``where`` the
    dispatch. A type added to the spec fails here until every dispatch is given its answer."""

    def __init__(self, store_type: object, where: str) -> None:
        super().__init__(f"{where}: no branch for the store type {store_type!r}")
        self.store_type = store_type
        self.where = where


class UnknownFamilyError(ValueError):
    """The suite's table of families has no family ``family`` (``where`` names the look-up), or a family model's
    entry is not one the table can hold."""

    def __init__(self, family: object, where: str) -> None:
        super().__init__(f"{where}: no store family {family!r} in the suite's table of families")
        self.family = family
        self.where = where


def family_model(family: StoreFamily) -> ModuleType:
    """The family's own model module, ``kstate_conformance.models.<name>``, found by its name: the expected data a case
    over every family reads is there, so that the case names no family."""
    try:
        return importlib.import_module(f"{MODELS_PACKAGE}.{family.name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{MODELS_PACKAGE}.{family.name}":
            raise
        raise UnknownFamilyError(family.name, "store_types.family_model") from exc


def family_named(name: str) -> StoreFamily:
    """The table's family called ``name``; :class:`UnknownFamilyError` for a name it does not hold."""
    for family in _table()["FAMILIES"]:
        if family.name == name:
            found: StoreFamily = family
            return found
    raise UnknownFamilyError(name, "store_types.family_named")


def per_family(attribute: str) -> list[Any]:
    """What each family's model module declares under ``attribute``, in :data:`FAMILIES`' order."""
    return [getattr(family_model(family), attribute) for family in _table()["FAMILIES"]]


# --- the table, built from the families' entries --------------------------------------------------------------------

if TYPE_CHECKING:
    #: Every store family with stores, in the order the suite's cases are parametrized.
    FAMILIES: tuple[StoreFamily, ...]
    #: The families' names, in :data:`FAMILIES`' order.
    FAMILY_NAMES: tuple[str, ...]
    #: Every store type of the spec, by family, the layout-only ones last.
    ALL_TYPES: tuple[str, ...]
    #: The types whose stored value keeps the record timestamp (TSKV-1, HV-6).
    TIMESTAMPED_TYPES: tuple[str, ...]
    #: The merged header-aware types (HV-6, HV-11); the versioned one (KIP-1271, tentative) is apart.
    HEADERS_TYPES: tuple[str, ...]
    #: Legacy spelling -> the type it names (spec/ops.md).
    ALIASES: dict[str, str]
    #: The families with a store type whose values carry the record's headers (HV-*).
    HEADERS_FAMILIES: tuple[str, ...]
    #: The families whose RocksDB stores keep a database per segment.
    SEGMENTED_FAMILIES: tuple[str, ...]
    #: The store types of those families.
    SEGMENTED_TYPES: tuple[str, ...]
    #: The prefixes of every store operation (OPS-2): an operation that reaches a store starts with one of them.
    STORE_OP_PREFIXES: tuple[str, ...]
    #: The families of the store families' pure codec operations.
    CODEC_OP_FAMILIES: tuple[str, ...]
    #: Store type -> the name of its family (a layout-only type has none).
    FAMILY_OF: dict[str, str]

_DERIVED = ("FAMILIES", "FAMILY_NAMES", "ALL_TYPES", "TIMESTAMPED_TYPES", "HEADERS_TYPES", "ALIASES",
            "HEADERS_FAMILIES", "SEGMENTED_FAMILIES", "SEGMENTED_TYPES", "STORE_OP_PREFIXES", "CODEC_OP_FAMILIES",
            "FAMILY_OF")
_built: dict[str, Any] | None = None
_building = False


def _entries() -> list[StoreFamily]:
    """Every model module's ``FAMILY``, each checked to be named as its module; a module without one (the life-cycle
    table) is no family."""
    package = importlib.import_module(MODELS_PACKAGE)
    entries = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda found: found.name):
        entry = getattr(importlib.import_module(f"{MODELS_PACKAGE}.{info.name}"), "FAMILY", None)
        if entry is None:
            continue
        if not isinstance(entry, StoreFamily) or entry.name != info.name:
            raise UnknownFamilyError(entry, f"the FAMILY of {MODELS_PACKAGE}.{info.name}")
        entries.append(entry)
    orders = [entry.order for entry in entries]
    if len(set(orders)) != len(orders):
        raise UnknownFamilyError(sorted(e.name for e in entries), "two families' entries share their order")
    return sorted(entries, key=lambda entry: entry.order)


def _derived(families: tuple[StoreFamily, ...]) -> dict[str, Any]:
    headers_types = tuple(t for f in families for t in f.headers_types)
    table: dict[str, Any] = {
        "FAMILIES": families,
        "FAMILY_NAMES": tuple(f.name for f in families),
        "ALL_TYPES": (*(t for f in families for t in f.types), *(t for f in families for t in f.layout_only_types)),
        "TIMESTAMPED_TYPES": tuple(t for f in families for t in f.timestamped_types),
        "HEADERS_TYPES": headers_types,
        "ALIASES": {alias: t for f in families for alias, t in f.aliases},
        "HEADERS_FAMILIES": tuple(f.name for f in families if set(f.types) & set(headers_types)),
        "SEGMENTED_FAMILIES": tuple(f.name for f in families if f.segmented),
        "SEGMENTED_TYPES": tuple(t for f in families if f.segmented for t in f.types),
        "STORE_OP_PREFIXES": tuple(f.op_prefix for f in families),
        "CODEC_OP_FAMILIES": tuple(f.codec_ops for f in families if f.codec_ops is not None),
        "FAMILY_OF": {t: f.name for f in families for t in f.types},
    }
    for family in families:
        for name, value in family.spellings:
            if name in table:
                raise UnknownFamilyError(family.name, f"its spelling {name} is another family's or the table's")
            table[name] = value
    return table


def _table() -> dict[str, Any]:
    """The table and its spellings, built once from the families' entries."""
    global _built, _building
    if _built is None:
        if _building:  # a model module read the table at its import, before every entry was found
            raise UnknownFamilyError(None, "the suite's table of families read while it is built")
        _building = True
        try:
            _built = _derived(tuple(_entries()))
        finally:
            _building = False
        globals().update(_built)
    return _built


def __getattr__(name: str) -> Any:
    """The table's names and the families' spellings, found in the families' entries at their first read."""
    if name.startswith("_"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    table = _table()
    if name not in table:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}: no family's entry spells it")
    return table[name]
