"""Restore benchmark (pytest-benchmark): changelog records restored into RocksDB stores against raw rocksdict.

Run with ``pytest benchmarks/test_restore_bench.py --benchmark-only``. ``KSTATE_RESTORE_N`` sets the number
of records (default 1 000 000; e.g. 50000 for a quick run), ``KSTATE_RESTORE_ROUNDS`` the rounds per case
(default 3). Each round restores into a fresh store directory (opening it is not timed):

- ``restore`` (the measured side): :func:`kstate.stores.restore.restore` of N changelog records (16-byte
  keys, 100-byte values) in batches of 1000 into the RocksDB store of each type, each batch made
  durable with the changelog offset it reached (``commit``, one write batch with the offsets, KV-50),
  as Kafka 4.3 records the restored offset;
- ``raw load`` (the baseline): the same keys and the same converted value bytes written with raw-mode
  ``rocksdict.WriteBatch`` batches of 1000.

The plain store's pair is the headline (target >= 0.7): its conversion is the identity, so the pair
compares the store's machinery with rocksdict's. For the timestamped and header-aware stores the
measured side also builds every value (the timestamp, and the header bytes, are added per record, as
Kafka's record converters do), which the baseline gets for free; their ratios are printed for
information. Times are process CPU time; the ratio is baseline / measured (higher is better). Two
ratios are printed: from pytest-benchmark's best rounds, and from an interleaved re-run (a restore
round, then a raw round, alternating, so both see the same machine load), the steadier of the two.
These are measurements, not timed tests: a ratio under its target is reported, never failed.
"""

from __future__ import annotations

import gc
import os
import random
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bench_tools import open_raw, print_report, raw_load

from kstate.codecs import changelog as cl
from kstate.codecs.store_types import BUILT_KV_TYPES, StoreType
from kstate.stores.api import Backend, TopicPartition
from kstate.stores.factory import open_kv_store
from kstate.stores.restore import converter_for, restore

pytestmark = pytest.mark.benchmark(timer=time.process_time)

N = int(os.environ.get("KSTATE_RESTORE_N", "1000000"))
ROUNDS = int(os.environ.get("KSTATE_RESTORE_ROUNDS", "3"))
INTERLEAVED_ROUNDS = int(os.environ.get("KSTATE_RESTORE_INTERLEAVED_ROUNDS", "2"))
BATCH = 1000
TP = TopicPartition("app-bench-changelog", 0)
HEADERS = (("trace-id", b"0123456789abcdef"), ("source", b"bench"))
TARGETS = {StoreType.KEY_VALUE: 0.7}

#: (store type, side) -> minimum seconds per round.
RESULTS: dict[tuple[StoreType, str], float] = {}


@pytest.fixture(scope="module")
def records() -> list[cl.ChangelogRecord]:
    rng = random.Random(5)
    return [
        cl.ChangelogRecord(rng.randbytes(16), rng.randbytes(100), 1_700_000_000_000 + i, HEADERS if i % 2 else ())
        for i in range(N)
    ]


class Rounds:
    """A fresh directory per round, removed after it."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.count = 0
        self.current: Path | None = None

    def fresh(self) -> Path:
        self.cleanup()
        self.count += 1
        self.current = self.base / f"round-{self.count}"
        return self.current

    def cleanup(self) -> None:
        if self.current is not None:
            shutil.rmtree(self.current, ignore_errors=True)
            self.current = None
        gc.collect()


@pytest.fixture
def rounds(tmp_path: Path) -> Iterator[Rounds]:
    r = Rounds(tmp_path)
    yield r
    r.cleanup()


def _record(benchmark: Any, key: tuple[StoreType, str]) -> None:
    stats = getattr(benchmark, "stats", None)
    if stats is not None and getattr(stats, "stats", None) is not None:
        RESULTS[key] = stats.stats.min


def _open_store(store_type: StoreType, path: Path) -> Any:
    return open_kv_store(store_type, Backend.ROCKSDB, name="bench", state_dir=path)


def _restore_round(store: Any, store_type: StoreType, records: list[cl.ChangelogRecord]) -> None:
    restore(store, store_type, records, batch_size=BATCH, after_batch=lambda done: store.commit({TP: done.records - 1}))


def _open_raw(path: Path) -> Any:
    return open_raw(path)


def _raw_round(db: Any, pairs: list[tuple[bytes, bytes | None]]) -> None:
    raw_load(db, pairs, BATCH)


def _pairs(store_type: StoreType, records: list[cl.ChangelogRecord]) -> list[tuple[bytes, bytes | None]]:
    convert = converter_for(store_type)
    return [(r.key, convert(r)) for r in records]


@pytest.mark.parametrize("store_type", list(BUILT_KV_TYPES), ids=lambda t: t.value)
def test_restore_into_rocksdb(benchmark: Any, records: list[cl.ChangelogRecord], rounds: Rounds, store_type: StoreType) -> None:
    """Restore N records in batches of 1000, each batch committed with its changelog offset."""
    opened: list[Any] = []

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        for store in opened:
            store.close()
        opened.clear()
        opened.append(_open_store(store_type, rounds.fresh()))
        return (opened[0],), {}

    benchmark.pedantic(lambda store: _restore_round(store, store_type, records), setup=setup, rounds=ROUNDS, iterations=1)
    store = opened[0]
    probe = records[-1]
    assert store.get(probe.key) == converter_for(store_type)(probe)
    assert store.committed_offset(TP) == N - 1
    store.close()
    _record(benchmark, (store_type, "restore"))


@pytest.mark.parametrize("store_type", list(BUILT_KV_TYPES), ids=lambda t: t.value)
def test_raw_write_batch_load(benchmark: Any, records: list[cl.ChangelogRecord], rounds: Rounds, store_type: StoreType) -> None:
    """The same bytes written with raw rocksdict write batches of 1000."""
    pairs = _pairs(store_type, records)
    opened: list[Any] = []

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        for db in opened:
            db.close()
        opened.clear()
        opened.append(_open_raw(rounds.fresh()))
        return (opened[0],), {}

    benchmark.pedantic(lambda db: _raw_round(db, pairs), setup=setup, rounds=ROUNDS, iterations=1)
    for db in opened:
        db.close()
    _record(benchmark, (store_type, "raw"))


def _interleaved(store_type: StoreType, records: list[cl.ChangelogRecord], base: Path) -> tuple[float, float]:
    """Best process time of a restore round and of a raw round, the two alternating."""
    pairs = _pairs(store_type, records)
    best_restore = best_raw = float("inf")
    for i in range(INTERLEAVED_ROUNDS):
        store = _open_store(store_type, base / f"i-restore-{store_type.value}-{i}")
        start = time.process_time()
        _restore_round(store, store_type, records)
        best_restore = min(best_restore, time.process_time() - start)
        store.close()
        db = _open_raw(base / f"i-raw-{store_type.value}-{i}")
        start = time.process_time()
        _raw_round(db, pairs)
        best_raw = min(best_raw, time.process_time() - start)
        db.close()
        shutil.rmtree(base, ignore_errors=True)
        gc.collect()
    return best_restore, best_raw


@pytest.fixture(scope="module", autouse=True)
def ratio_report(request: pytest.FixtureRequest, records: list[cl.ChangelogRecord],
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """After the module: each store type's restore beside the raw load, with both ratios."""
    yield
    if not RESULTS:
        return
    lines = ["", f"restore benchmark, N={N} records, batches of {BATCH} (process CPU time; best of {ROUNDS} rounds, "
             f"then {INTERLEAVED_ROUNDS} interleaved)",
             f"{'store type':<26}{'restore s':>11}{'raw load s':>12}{'ratio':>8}{'interleaved':>13}{'target':>8}  verdict"]
    for store_type in BUILT_KV_TYPES:
        measured, baseline = RESULTS.get((store_type, "restore")), RESULTS.get((store_type, "raw"))
        if measured is None or baseline is None:
            continue
        i_restore, i_raw = _interleaved(store_type, records, tmp_path_factory.mktemp("interleaved"))
        ratio, steady = baseline / measured, i_raw / i_restore
        target = TARGETS.get(store_type)
        verdict = ("meets target" if steady >= target else "BELOW TARGET") if target else "information (conversion)"
        lines.append(f"{store_type.value:<26}{measured:>11.3f}{baseline:>12.3f}{ratio:>8.2f}{steady:>13.2f}"
                     f"{(f'{target:.2f}' if target else '-'):>8}  {verdict}")
    print_report(request, lines)
