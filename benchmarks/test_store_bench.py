"""Store benchmarks (pytest-benchmark): the reference stores against raw rocksdict on the same bytes.

Run with ``pytest benchmarks --benchmark-only``. At the end of the module every pair is printed side by
side with its throughput ratio (baseline time / measured time; higher is better) and its target:

- ``put``: N puts on the RocksDB timestamped-with-headers bytes store, then its ``commit`` (the staged
  writes and the offsets in one batch, KV-50), against N raw-mode ``Rdict.put`` of the same bytes;
  target >= 0.7.
- ``get``: N gets of committed keys on that store against N raw ``Rdict.get``; target >= 0.7.
- ``value-only scan``: a full scan of a headers store reading only the values (header bytes and
  timestamp skipped unparsed, HV-10) against the same scan of a timestamped store holding the same raw
  values; target >= 0.9.

Rounds are timed in process CPU time (``time.process_time``: every thread of the process, RocksDB's
included), which other load on the machine disturbs far less than wall-clock time. Two ratios are
printed: from pytest-benchmark's minimum rounds, and from an interleaved re-run (measured and baseline
alternating round by round, so both see the same machine load), the steadier of the two. These are
measurements, not timed tests: a ratio under its target is reported, never failed.
"""

from __future__ import annotations

import gc
import os
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import rocksdict
from bench_tools import bench, interleaved, print_report

from kstate.codecs.header_values import encode_value_timestamp_headers
from kstate.codecs.store_types import StoreType
from kstate.codecs.timestamped import encode_value_and_timestamp
from kstate.stores.api import Backend, KeyValueBytesStore, TopicPartition
from kstate.stores.engine import rocksdb_options
from kstate.stores.factory import open_kv_store
from kstate.stores.typed import TimestampedKeyValueStore, TimestampedKeyValueStoreWithHeaders

pytestmark = pytest.mark.benchmark(timer=time.process_time)

N = 2_000
SCAN_N = 10_000
ROUNDS = 60
INTERLEAVED_ROUNDS = 25
TP = TopicPartition("app-bench-changelog", 0)
HEADERS = [("trace-id", b"0123456789abcdef"), ("source", b"bench")]

_rng = random.Random(7)
KEYS = [_rng.randbytes(16) for _ in range(N)]
VALUES = [encode_value_timestamp_headers(os.urandom(100), 1_700_000_000_000 + i, HEADERS) for i in range(N)]
PAIRS = [
    ("put", "put_headers_store", "put_raw_rocksdict", 0.7),
    ("get", "get_headers_store", "get_raw_rocksdict", 0.7),
    ("value-only scan", "scan_headers_store", "scan_timestamped_store", 0.9),
]

Workload = Callable[[], object]
#: name -> (minimum, median) seconds per round, filled as the benchmarks run.
RESULTS: dict[str, tuple[float, float]] = {}


def _open(store_type: StoreType, state_dir: Path) -> KeyValueBytesStore:
    return open_kv_store(store_type, Backend.ROCKSDB, name="bench", state_dir=state_dir)


def _quiesce(db: Any) -> None:
    """Flush and compact, so that no background RocksDB work (counted in process time) overlaps reads."""
    db.flush()
    db.compact_range(None, None)
    time.sleep(0.2)


def _filled(store_type: StoreType, state_dir: Path) -> KeyValueBytesStore:
    rng = random.Random(11)
    store = _open(store_type, state_dir)
    for i in range(SCAN_N):
        raw = rng.randbytes(100)
        if store_type is StoreType.TIMESTAMPED_KV_WITH_HEADERS:
            value = encode_value_timestamp_headers(raw, i, HEADERS)
        else:
            value = encode_value_and_timestamp(raw, i)
        store.put(rng.randbytes(16), value)
    store.commit({TP: 3})
    _quiesce(store.engine._db)  # type: ignore[attr-defined]
    return store


@pytest.fixture(scope="module")
def workloads(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Workload]]:
    """Every benchmarked operation, over stores that live for the whole module."""
    headers = _open(StoreType.TIMESTAMPED_KV_WITH_HEADERS, tmp_path_factory.mktemp("headers"))
    raw = rocksdict.Rdict(str(tmp_path_factory.mktemp("raw")), rocksdb_options())
    scan_headers = TimestampedKeyValueStoreWithHeaders(
        _filled(StoreType.TIMESTAMPED_KV_WITH_HEADERS, tmp_path_factory.mktemp("scan-headers"))
    )
    scan_timestamped = TimestampedKeyValueStore(_filled(StoreType.TIMESTAMPED_KV, tmp_path_factory.mktemp("scan-ts")))
    pairs = list(zip(KEYS, VALUES, strict=True))
    for key, value in pairs:
        headers.put(key, value)
        raw.put(key, value)
    headers.commit({TP: 0})
    _quiesce(headers.engine._db)  # type: ignore[attr-defined]
    _quiesce(raw)

    def put_headers_store() -> None:
        put = headers.put
        for key, value in pairs:
            put(key, value)
        headers.commit({TP: 1})

    def put_raw_rocksdict() -> None:
        put = raw.put
        for key, value in pairs:
            put(key, value)

    def get_headers_store() -> None:
        get = headers.get
        for key in KEYS:
            get(key)

    def get_raw_rocksdict() -> None:
        get = raw.get
        for key in KEYS:
            get(key)

    def scan_headers_store() -> int:
        return sum(1 for _ in scan_headers.values())

    def scan_timestamped_store() -> int:
        return sum(1 for _ in scan_timestamped.values())

    yield {
        "put_headers_store": put_headers_store,
        "put_raw_rocksdict": put_raw_rocksdict,
        "get_headers_store": get_headers_store,
        "get_raw_rocksdict": get_raw_rocksdict,
        "scan_headers_store": scan_headers_store,
        "scan_timestamped_store": scan_timestamped_store,
    }
    headers.close()
    scan_headers.close()
    scan_timestamped.close()
    raw.close()
    gc.collect()


def _interleaved(measured: Workload, baseline: Workload) -> tuple[float, float]:
    """Minimum process time of each workload over rounds that alternate between the two."""
    return interleaved(measured, baseline, INTERLEAVED_ROUNDS)


@pytest.fixture(scope="module", autouse=True)
def ratio_report(request: pytest.FixtureRequest, workloads: dict[str, Workload]) -> Iterator[None]:
    """After the module: print each pair side by side with its ratios and target."""
    yield
    if not RESULTS:
        return
    lines = [
        "",
        "store benchmark ratios = baseline time / measured time (process CPU time; higher is better)",
        f"{'pair':<16}{'measured min/median ms':>40}{'baseline min/median ms':>42}"
        f"{'ratio(min)':>11}{'interleaved':>12}{'target':>7}  verdict",
    ]
    for label, measured, baseline, target in PAIRS:
        if measured not in RESULTS or baseline not in RESULTS:
            continue
        (m_min, m_med), (b_min, b_med) = RESULTS[measured], RESULTS[baseline]
        i_m, i_b = _interleaved(workloads[measured], workloads[baseline])
        ratio, steady = b_min / m_min, i_b / i_m
        verdict = "meets target" if steady >= target else "BELOW TARGET"
        lines.append(
            f"{label:<16}{f'{measured} {m_min * 1e3:.2f}/{m_med * 1e3:.2f}':>40}"
            f"{f'{baseline} {b_min * 1e3:.2f}/{b_med * 1e3:.2f}':>42}"
            f"{ratio:>11.2f}{steady:>12.2f}{target:>7.2f}  {verdict}"
        )
    print_report(request, lines)


@pytest.mark.parametrize("name", ["put_headers_store", "put_raw_rocksdict", "get_headers_store", "get_raw_rocksdict"])
def test_workload(benchmark: Any, workloads: dict[str, Workload], name: str) -> None:
    bench(benchmark, workloads[name], ROUNDS, RESULTS, name)


@pytest.mark.parametrize("name", ["scan_headers_store", "scan_timestamped_store"])
def test_scan(benchmark: Any, workloads: dict[str, Workload], name: str) -> None:
    """Each scan reads all SCAN_N rows."""
    bench(benchmark, workloads[name], ROUNDS, RESULTS, name)
    assert workloads[name]() == SCAN_N
