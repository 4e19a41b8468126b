"""A store directory reopened as another store type (LAY-14): refused where the bytes tell, before anything is written;
accepted where they do not, and then ``kstate inspect`` warns (issue 25, item 5)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kstate.codecs.store_types import StoreType
from kstate.inspect import inspect_state_dir
from kstate.stores.api import Backend, TopicPartition
from kstate.stores.factory import open_bytes_store
from kstate.stores.type_check import WrongStoreTypeError

OPTIONS: dict[StoreType, dict[str, Any]] = {
    StoreType.KEY_VALUE: {},
    StoreType.VERSIONED_KV: {"history_retention_ms": 10_000},
    StoreType.VERSIONED_KV_WITH_HEADERS: {"history_retention_ms": 10_000},
    StoreType.WINDOW: {"retention_ms": 1_000, "window_size_ms": 10, "segment_interval_ms": 500},
    StoreType.SESSION: {"retention_ms": 1_000, "segment_interval_ms": 500},
}
CHANGELOG = TopicPartition("app-s-changelog", 0)


def _open(state_dir: Path, store_type: StoreType) -> Any:
    return open_bytes_store(store_type, Backend.ROCKSDB, name="s", state_dir=state_dir, options=OPTIONS[store_type])


def _write(state_dir: Path, store_type: StoreType, key: bytes = b"k") -> None:
    """One row of ``store_type`` under ``key``, committed at offset 5, closed cleanly."""
    store = _open(state_dir, store_type)
    if store_type is StoreType.KEY_VALUE:
        store.put(key, b"\xaa")
    elif store_type is StoreType.VERSIONED_KV:
        store.put(key, b"\xaa", 1)
    elif store_type is StoreType.VERSIONED_KV_WITH_HEADERS:
        store.put(key, b"\x00\xaa", 1)  # no headers, then the value (VS-25)
    elif store_type is StoreType.WINDOW:
        store.put(key, b"\xaa", 1)
    else:
        store.put(key, 1, 2, b"\xaa")
    store.commit({CHANGELOG: 5})
    store.close()


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(("written", "opened"), [
    (StoreType.KEY_VALUE, StoreType.VERSIONED_KV),
    (StoreType.KEY_VALUE, StoreType.VERSIONED_KV_WITH_HEADERS),
    (StoreType.VERSIONED_KV, StoreType.VERSIONED_KV_WITH_HEADERS),
    (StoreType.WINDOW, StoreType.SESSION),
    (StoreType.SESSION, StoreType.WINDOW),
])
def test_another_types_directory_is_refused_and_left_unchanged(tmp_path: Path, written: StoreType,
                                                               opened: StoreType) -> None:
    """The one-byte key of issue 25 included: refused by its shape, before any segment scan could loop on it."""
    _write(tmp_path, written)
    before = _files(tmp_path)
    with pytest.raises(WrongStoreTypeError, match=f"as {opened.value}") as refused:
        _open(tmp_path, opened)
    assert refused.value.store == "s" and refused.value.store_type is opened
    assert _files(tmp_path) == before
    store = _open(tmp_path, written)  # no ignore_invalid_state: nothing was left OPEN
    assert store.committed_offset(CHANGELOG) == 5
    store.close()


def test_a_versioned_directory_opened_as_key_value_is_accepted_and_inspect_warns(tmp_path: Path) -> None:
    """Any bytes are a key-value row: the bytes cannot tell, so the open is accepted and the inspector says so."""
    _write(tmp_path, StoreType.VERSIONED_KV)
    _open(tmp_path, StoreType.KEY_VALUE).close()
    _open(tmp_path, StoreType.VERSIONED_KV).close()
    warnings = inspect_state_dir(tmp_path).warnings
    assert len(warnings) == 1 and "rocksdb/s" in warnings[0] and "opened as kv" in warnings[0], warnings


def test_an_empty_store_and_undecided_segments_are_warned_about(tmp_path: Path) -> None:
    _open(tmp_path, StoreType.KEY_VALUE).close()
    report = inspect_state_dir(tmp_path)
    assert len(report.warnings) == 1 and "empty" in report.warnings[0], report.warnings
    assert report.to_json()["warnings"] == report.warnings


def test_each_types_own_directory_reopens(tmp_path: Path) -> None:
    """The check never refuses a store's own bytes: the headers variant, and keys long and short."""
    for store_type in OPTIONS:
        for key in (b"k", b"a-longer-key-of-many-bytes"):
            state_dir = tmp_path / f"{store_type.value}-{len(key)}"
            _write(state_dir, store_type, key)
            store = _open(state_dir, store_type)
            assert store.committed_offset(CHANGELOG) == 5
            store.close()
