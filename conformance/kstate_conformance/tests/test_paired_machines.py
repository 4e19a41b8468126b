"""The implementation under test against a model implementation, step by step (``kstate conformance --model
kafka-jvm:4.4.0``): hypothesis draws sequences of store operations, each goes to both, and every answer, every
refusal, every changelog record and, after each close, every row of every column family on disk must agree
(:mod:`kstate_conformance.paired`, the machines in :mod:`kstate_conformance.paired_stores`). Without ``--model``
these tests do not apply. Known differences of Kafka are excluded by rule (``paired.EXCLUSIONS``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kstate_conformance import rules
from kstate_conformance import store_types as types
from kstate_conformance.paired import require_model, run_paired
from kstate_conformance.paired_stores import KeyValuePair, SessionPair, VersionedPair, WindowPair

BACKENDS = pytest.mark.parametrize("backend", ["rocksdb", "memory"])


def _run(pair: Any, implementation: Any, model: Any, store_type: str, backend: str, base: Path) -> None:
    """Skip unless both sides offer the family's operations and the store; then run the paired machine."""
    require_model(implementation, model, pair.family_ops, store_type, backend)
    run_paired(lambda: pair(implementation, model, base, store_type, backend))


@rules("KV-1", "KV-6", "KV-9", "KV-11", "KV-15", "KV-54", "CL-1", "CL-2", "CL-8", "CACHE-1", "CACHE-7", "RST-1", "OFF-5", "OFF-8")
@BACKENDS
@pytest.mark.parametrize("store_type", types.KV_TYPES)
def test_key_value_store_agrees_with_the_model(implementation: Any, model_impl: Any, store_type: str, backend: str,
                                               tmp_path_factory: pytest.TempPathFactory) -> None:
    """A key-value store answers every operation as the model does and leaves the same rows on disk."""
    _run(KeyValuePair, implementation, model_impl, store_type, backend, tmp_path_factory.mktemp("paired-kv"))


@rules("WS-4", "WS-9", "WS-10", "WS-11", "WS-13", "WS-14", "WS-15", "WS-18", "WS-22", "CL-1", "RST-1", "OFF-8")
@BACKENDS
@pytest.mark.parametrize("store_type", types.WINDOW_TYPES)
def test_window_store_agrees_with_the_model(implementation: Any, model_impl: Any, store_type: str, backend: str,
                                            tmp_path_factory: pytest.TempPathFactory) -> None:
    """A window store answers every operation as the model does and leaves the same rows in every segment."""
    _run(WindowPair, implementation, model_impl, store_type, backend, tmp_path_factory.mktemp("paired-window"))


@rules("SS-2", "SS-3", "SS-4", "SS-5", "SS-6", "SS-7", "SS-8", "SS-9", "SS-10", "SS-12", "SS-13", "SS-14", "SS-15",
       "SS-16", "SS-17", "SS-24", "SS-26", "SS-27", "SS-30", "SS-31", "CL-1", "RST-1", "OFF-8")
@BACKENDS
@pytest.mark.parametrize("store_type", types.SESSION_TYPES)
def test_session_store_agrees_with_the_model(implementation: Any, model_impl: Any, store_type: str, backend: str,
                                             tmp_path_factory: pytest.TempPathFactory) -> None:
    """A session store answers every operation as the model does and leaves the same rows in every segment."""
    _run(SessionPair, implementation, model_impl, store_type, backend, tmp_path_factory.mktemp("paired-session"))


@rules("VS-6", "VS-7", "VS-8", "VS-9", "VS-12", "VS-18", "CL-1", "RST-1", "OFF-8")
def test_versioned_store_agrees_with_the_model(implementation: Any, model_impl: Any,
                                               tmp_path_factory: pytest.TempPathFactory) -> None:
    """A versioned store on RocksDB answers as the model does and leaves the same rows (no reopen: VS-14)."""
    _run(VersionedPair, implementation, model_impl, types.VERSIONED_KV, "rocksdb",
         tmp_path_factory.mktemp("paired-versioned"))
