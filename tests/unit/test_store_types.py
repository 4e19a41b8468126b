"""Unit tests of the table of store types and the stores' class table (KV-1, CL-1, LAY-5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kstate.codecs import changelog as cl
from kstate.codecs.store_types import (
    BUILT_KV_TYPES,
    BUILT_TYPES,
    KV_TYPES,
    LEGACY_ALIASES,
    SESSION_TYPES,
    STORE_TYPES,
    WINDOW_TYPES,
    StoreType,
    UnknownStoreTypeError,
    encode_stored_value,
)
from kstate.errors import EncodeError, KStateError
from kstate.ops import call
from kstate.stores.api import Backend
from kstate.stores.factory import open_kv_store
from kstate.stores.families import STORE_CLASSES, StoreTypeNotBuiltError, store_classes

T = StoreType


def test_every_type_has_one_entry_and_one_spelling() -> None:
    assert set(STORE_TYPES) == set(StoreType)
    assert all(info.store_type is t for t, info in STORE_TYPES.items())
    assert T.TIMESTAMPED_KV_WITH_HEADERS.value == "timestamped_kv_with_headers"
    assert LEGACY_ALIASES == {"timestamped_kv_headers": "timestamped_kv_with_headers"}


def test_the_legacy_alias_parses_and_an_unknown_name_is_named() -> None:
    assert StoreType.parse("timestamped_kv_headers") is T.TIMESTAMPED_KV_WITH_HEADERS
    assert StoreType("timestamped_kv_headers") is T.TIMESTAMPED_KV_WITH_HEADERS
    with pytest.raises(UnknownStoreTypeError, match="'nope'") as info:
        StoreType.parse("nope")
    assert info.value.name == "nope" and isinstance(info.value, EncodeError)


def test_the_derived_sets_are_the_families() -> None:
    assert {T.KEY_VALUE, T.TIMESTAMPED_KV, T.TIMESTAMPED_KV_WITH_HEADERS} == KV_TYPES
    assert {T.WINDOW, T.TIMESTAMPED_WINDOW, T.TIMESTAMPED_WINDOW_WITH_HEADERS} == WINDOW_TYPES
    assert {T.SESSION, T.SESSION_WITH_HEADERS} == SESSION_TYPES
    assert BUILT_KV_TYPES == (T.KEY_VALUE, T.TIMESTAMPED_KV, T.TIMESTAMPED_KV_WITH_HEADERS)
    assert {T.VERSIONED_KV, T.VERSIONED_KV_WITH_HEADERS} <= set(BUILT_TYPES)
    assert {T.KEY_VALUE, T.TIMESTAMPED_KV, T.TIMESTAMPED_KV_WITH_HEADERS, *WINDOW_TYPES} <= set(BUILT_TYPES)
    assert T.TIME_ORDERED_WINDOW_WITH_HEADERS not in BUILT_TYPES
    assert {T.SESSION, T.SESSION_WITH_HEADERS} <= set(BUILT_TYPES)


def test_restore_writes_a_record_in_the_value_layout() -> None:
    """A restored value is the record's value, timestamp and headers in the type's layout (CL-9 to CL-11)."""
    headers = (("h", b"1"),)
    for store_type, info in STORE_TYPES.items():
        if info.restore is None:
            continue
        record = cl.ChangelogRecord(b"k", b"v", 5, headers)
        assert cl.restore_value(store_type, record) == encode_stored_value(store_type, b"v", 5, headers)


def test_a_type_without_a_layout_is_refused() -> None:
    with pytest.raises(EncodeError):
        encode_stored_value(T.TIME_ORDERED_WINDOW_WITH_HEADERS, b"v", 1)
    # The versioned store with headers has a (tentative) layout since it is built (VS-25).
    assert encode_stored_value(T.VERSIONED_KV_WITH_HEADERS, b"v", 1) == b"\x00v"


def test_only_built_types_have_store_classes(tmp_path: Path) -> None:
    assert set(STORE_CLASSES) == set(BUILT_TYPES)
    with pytest.raises(StoreTypeNotBuiltError, match="time_ordered_window_with_headers") as info:
        store_classes(T.TIME_ORDERED_WINDOW_WITH_HEADERS)
    assert info.value.store_type is T.TIME_ORDERED_WINDOW_WITH_HEADERS and isinstance(info.value, KStateError)
    with pytest.raises(StoreTypeNotBuiltError, match="time_ordered_window_with_headers"):
        open_kv_store("time_ordered_window_with_headers", Backend.ROCKSDB, name="s", state_dir=tmp_path)
    assert not any(tmp_path.iterdir())


def test_store_open_takes_both_spellings_and_names_a_type_not_built(tmp_path: Path) -> None:
    for name in ("timestamped_kv_with_headers", "timestamped_kv_headers"):
        opened = call("store.open", {"store_type": name, "backend": "memory", "name": "s"})
        assert "handle" in opened, opened
        assert call("store.close", {"handle": opened["handle"]}) == {}
    refused = call("store.open", {"store_type": "time_ordered_window_with_headers", "backend": "rocksdb", "name": "s",
                                  "state_dir": str(tmp_path)})
    assert refused["error"]["type"] == "StoreTypeNotBuiltError" and "time_ordered_window" in refused["error"]["message"]
    offered = call("store.capabilities", {})["store_types"]
    assert offered[:3] == ["kv", "timestamped_kv", "timestamped_kv_with_headers"]
    assert {"versioned_kv", "versioned_kv_with_headers"} <= set(offered)
    assert offered == [t.value for t in BUILT_TYPES]


def test_every_segmented_type_with_a_manager_is_segmented_and_the_rest_are_refused_by_name() -> None:
    # LAY-3, VER-1: window and session stores keep one database per segment, versioned stores key prefixes.
    from kstate.codecs.store_types import STORE_TYPES, Family
    from kstate.stores.families import SEGMENT_MANAGERS, StoreTypeNotBuiltError, segment_manager
    from kstate.stores.segments import KeyValueSegments, LogicalKeyValueSegments

    assert all(STORE_TYPES[t].family is not Family.KEY_VALUE for t in SEGMENT_MANAGERS)
    assert issubclass(segment_manager(StoreType.WINDOW), KeyValueSegments)
    assert segment_manager(StoreType.VERSIONED_KV) is LogicalKeyValueSegments
    with pytest.raises(StoreTypeNotBuiltError, match="timestamped_kv"):
        segment_manager(StoreType.TIMESTAMPED_KV)


def test_a_family_s_open_options_are_checked_by_name_kind_and_presence() -> None:
    from kstate.stores.families import OpenOption, StoreClasses, StoreOptionError

    classes = StoreClasses(object, object, lambda inner, context, sink: inner,
                           options=(OpenOption("retention_ms", int, required=True), OpenOption("retain_duplicates", bool)))
    assert classes.check_options({"retention_ms": 5}) == {"retention_ms": 5}
    assert classes.check_options({"retention_ms": 5, "retain_duplicates": True}) == {
        "retention_ms": 5, "retain_duplicates": True}
    for given, option in (({}, "retention_ms"), ({"retention_ms": True}, "retention_ms"),
                          ({"retention_ms": 1, "retain_duplicates": 1}, "retain_duplicates"),
                          ({"retention_ms": 1, "window_size_ms": 1}, "window_size_ms")):
        with pytest.raises(StoreOptionError) as refused:
            classes.check_options(given)
        assert refused.value.option == option and isinstance(refused.value, KStateError)


def test_a_key_value_store_takes_no_options_and_refuses_one_by_name() -> None:
    refused = call("store.open", {"store_type": "kv", "backend": "memory", "name": "s", "options": {"retention_ms": 1}})
    assert "retention_ms" in str(refused), refused


def test_the_store_tables_come_from_the_families_modules_found_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 33: each family's module ``kstate.stores.<family>`` declares its entries; a family without a module
    is refused by name."""
    import enum

    from kstate.codecs.store_types import Family, UnknownFamilyError
    from kstate.stores import families

    for family in Family:
        module = families.family_module(family)
        assert module.__name__ == f"kstate.stores.{family.value}"
        assert set(module.family_store_classes()) <= set(families.STORE_CLASSES)

    class _NewFamily(str, enum.Enum):
        COLUMNAR = "columnar"

    with pytest.raises(UnknownFamilyError, match="columnar"):
        families.family_module(_NewFamily.COLUMNAR)  # type: ignore[arg-type]
