"""The wrapper base of the store layers and the optional capabilities as Protocols (stores/wrapping.py, stores/api.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from kstate.codecs.store_types import StoreType
from kstate.stores.api import (
    Backend,
    ColumnFamilyStore,
    Crashable,
    Downgradable,
    Flushable,
    PositionTracking,
    RecordContext,
    Restorable,
    TopicPartition,
    WriteChecking,
    restore_mode,
)
from kstate.stores.caching import CachingKeyValueStore
from kstate.stores.changelogging import RecordContextHolder
from kstate.stores.factory import open_kv_store
from kstate.stores.families import changelogging_store
from kstate.stores.typed import TimestampedKeyValueStore
from kstate.stores.wrapping import WrappedStore

TP = TopicPartition("app-s-changelog", 0)


def test_every_layer_reaches_the_store_beneath(tmp_path: Path) -> None:
    inner = open_kv_store(StoreType.TIMESTAMPED_KV, Backend.ROCKSDB, name="s", state_dir=tmp_path)
    context = RecordContextHolder(RecordContext(timestamp=1))
    logged = changelogging_store(inner, StoreType.TIMESTAMPED_KV, context, [])
    cached = CachingKeyValueStore(logged, context)
    typed = TimestampedKeyValueStore(cached)
    assert typed.wrapped() is cached and cached.wrapped() is logged and logged.wrapped() is inner
    for layer in (logged, cached, typed):
        assert isinstance(layer, WrappedStore)
        assert layer.name == "s" and layer.is_open and layer.persistent() and layer.manages_offsets()
    typed.put(b"k", b"v", 5)
    typed.commit({TP: 7})  # through the cache (flushed first) and the log into the store
    assert typed.committed_offset(TP) == 7 and inner.get(b"k") == (5).to_bytes(8, "big") + b"v"
    typed.close()
    assert not inner.is_open and not typed.is_open


def test_the_stores_declare_their_capabilities(tmp_path: Path) -> None:
    rocksdb = open_kv_store(StoreType.KEY_VALUE, Backend.ROCKSDB, name="s", state_dir=tmp_path)
    memory = open_kv_store(StoreType.KEY_VALUE, Backend.MEMORY, name="m")
    for capability in (Restorable, Flushable, Crashable, Downgradable, PositionTracking, ColumnFamilyStore):
        assert isinstance(rocksdb, capability)
    for capability in (Flushable, Crashable, PositionTracking):
        assert isinstance(memory, capability)
    for capability in (Restorable, Downgradable, ColumnFamilyStore, WriteChecking):
        assert not isinstance(memory, capability)
    assert isinstance(changelogging_store(memory, StoreType.KEY_VALUE, RecordContextHolder(), []), WriteChecking)
    rocksdb.close()


class _Plain:
    """A store written against the protocol alone: no restore mode, no flush."""

    name = "p"


def test_restore_mode_without_the_capability_is_a_no_op() -> None:
    with restore_mode(_Plain()):
        pass


def test_restore_mode_and_flush_reach_through_the_layers() -> None:
    calls: list[str] = []

    class Probe:
        name = "probe"

        @contextlib.contextmanager
        def restoring(self) -> Iterator[None]:
            calls.append("restoring")
            yield

        def flush(self) -> None:
            calls.append("flush")

    logged = changelogging_store(Probe(), StoreType.KEY_VALUE, RecordContextHolder(), [])  # type: ignore[arg-type]
    with restore_mode(logged):
        pass
    logged.flush()
    assert calls == ["restoring", "flush"]


def test_a_layer_over_a_store_without_flush_flushes_nothing() -> None:
    logged = changelogging_store(_Plain(), StoreType.KEY_VALUE, RecordContextHolder(), [])  # type: ignore[arg-type]
    logged.flush()
    with pytest.raises(AttributeError):
        logged.manages_offsets()  # forwarded, not invented
