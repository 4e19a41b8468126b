"""The suite's spellings of the store types, in one module (spec/ops.md OPS-2: one name each, one legacy alias).

Written from the spec's text, not imported from the reference, so that the models, strategies and tests that
use them stay independent of the implementation under test. Groups are by family; ``tests/test_conformance_
imports.py`` checks the names against the spec's table.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

KV = "kv"
TIMESTAMPED_KV = "timestamped_kv"
TIMESTAMPED_KV_WITH_HEADERS = "timestamped_kv_with_headers"
#: The legacy spelling of :data:`TIMESTAMPED_KV_WITH_HEADERS`: accepted wherever a store type is read, never answered.
TIMESTAMPED_KV_HEADERS_ALIAS = "timestamped_kv_headers"
VERSIONED_KV = "versioned_kv"
VERSIONED_KV_WITH_HEADERS = "versioned_kv_with_headers"
WINDOW = "window"
TIMESTAMPED_WINDOW = "timestamped_window"
TIMESTAMPED_WINDOW_WITH_HEADERS = "timestamped_window_with_headers"
SESSION = "session"
SESSION_WITH_HEADERS = "session_with_headers"
#: Only a column-family layout (LAY-5 to LAY-8); no store of it is opened.
TIME_ORDERED_WINDOW_WITH_HEADERS = "time_ordered_window_with_headers"

KV_TYPES = (KV, TIMESTAMPED_KV, TIMESTAMPED_KV_WITH_HEADERS)
VERSIONED_TYPES = (VERSIONED_KV, VERSIONED_KV_WITH_HEADERS)
WINDOW_TYPES = (WINDOW, TIMESTAMPED_WINDOW, TIMESTAMPED_WINDOW_WITH_HEADERS)
SESSION_TYPES = (SESSION, SESSION_WITH_HEADERS)
#: Every store type of the spec, the layout-only one last.
ALL_TYPES = (*KV_TYPES, *VERSIONED_TYPES, *WINDOW_TYPES, *SESSION_TYPES, TIME_ORDERED_WINDOW_WITH_HEADERS)
#: The types whose stored value keeps the record timestamp (TSKV-1, HV-6).
TIMESTAMPED_TYPES = (TIMESTAMPED_KV, TIMESTAMPED_KV_WITH_HEADERS, TIMESTAMPED_WINDOW, TIMESTAMPED_WINDOW_WITH_HEADERS)
#: The merged header-aware types (HV-6, HV-11); the versioned one (KIP-1271, tentative) is apart.
HEADERS_TYPES = (TIMESTAMPED_KV_WITH_HEADERS, TIMESTAMPED_WINDOW_WITH_HEADERS, SESSION_WITH_HEADERS)
#: Legacy spelling -> the type it names (spec/ops.md).
ALIASES = {TIMESTAMPED_KV_HEADERS_ALIAS: TIMESTAMPED_KV_WITH_HEADERS}


@dataclass(frozen=True)
class StoreFamily:
    """A store family as the suite speaks of it: the shared modules iterate :data:`FAMILIES` rather than name one."""

    #: Its short name: in test ids, in the suite's tables of rules and places.
    name: str
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


#: Every store family with stores, in the order the suite's cases are parametrized.
FAMILIES = (
    StoreFamily("kv", KV_TYPES, "store.", segmented=False, rule_prefixes=("KV", "TSKV", "CACHE", "UPG"),
                rule_terms=r"key-value|\bKV-\d|\bkv\b|timestamped_kv|RocksDBStore\b|RocksDBTimestampedStore",
                code_names=r"^(KV|HDR|TS|TSKV|KV_TYPES)$", module_part="kv_"),
    StoreFamily("versioned", VERSIONED_TYPES, "versioned_store.", segmented=False, codec_ops="versioned",
                rule_prefixes=("VS", "VER"), rule_terms=r"versioned|\bVS-\d", code_names=r"VERSIONED|^VKVH?$",
                module_part="versioned"),
    StoreFamily(WINDOW, WINDOW_TYPES, "window_store.", segmented=True, codec_ops="window", rule_prefixes=("WS", "WIN"),
                rule_terms=r"\bwindow|\bWS-\d|segment", code_names=r"WINDOW|^WIN$", module_part="window"),
    StoreFamily(SESSION, SESSION_TYPES, "session_store.", segmented=True, codec_ops="session",
                rule_prefixes=("SS", "SESS"), rule_terms=r"\bsession|\bSS-\d|segment", code_names=r"SESSION",
                module_part="session"),
)
#: The families' names, in :data:`FAMILIES`' order.
FAMILY_NAMES = tuple(f.name for f in FAMILIES)
#: The families with a store type whose values carry the record's headers (HV-*).
HEADERS_FAMILIES = tuple(f.name for f in FAMILIES if set(f.types) & set(HEADERS_TYPES))
#: The families whose RocksDB stores keep a database per segment.
SEGMENTED_FAMILIES = tuple(f.name for f in FAMILIES if f.segmented)
#: The store types of those families.
SEGMENTED_TYPES = tuple(t for f in FAMILIES if f.segmented for t in f.types)
#: The prefixes of every store operation (OPS-2): an operation that reaches a store starts with one of them.
STORE_OP_PREFIXES = tuple(f.op_prefix for f in FAMILIES)
#: The families of the store families' pure codec operations.
CODEC_OP_FAMILIES = tuple(f.codec_ops for f in FAMILIES if f.codec_ops is not None)
#: Store type -> the name of its family (the layout-only type has none).
FAMILY_OF = {t: f.name for f in FAMILIES for t in f.types}


def family_model(family: StoreFamily) -> ModuleType:
    """The family's own model module, ``kstate_conformance.models.<name>``, found by its name: the expected data a case
    over every family reads is there, so that the case names no family."""
    return importlib.import_module(f"kstate_conformance.models.{family.name}")


def per_family(attribute: str) -> list[Any]:
    """What each family's model module declares under ``attribute``, in :data:`FAMILIES`' order."""
    return [getattr(family_model(family), attribute) for family in FAMILIES]


class UnknownStoreTypeError(ValueError):
    """A dispatch of the suite over store types met one it has no branch for; ``store_type`` names it, ``where`` the
    dispatch. A type added to the spec fails here until every dispatch is given its answer."""

    def __init__(self, store_type: object, where: str) -> None:
        super().__init__(f"{where}: no branch for the store type {store_type!r}")
        self.store_type = store_type
        self.where = where
