"""Versioned store benchmarks (pytest-benchmark): the RocksDB versioned store against the timestamped store.

Run with ``pytest benchmarks/test_versioned_bench.py --benchmark-only``. Each round is N writes or reads over
the same keys and values (``KEYS`` keys, N operations). Pairs, printed side by side at the end with their
throughput ratio (baseline time / measured time; higher is better) and target (issue 11):

- ``put in order``: N versioned puts with rising timestamps (each moves the previous latest into a segment,
  VS-3) and a commit, against N timestamped puts of ``[ts][value]`` and a commit; target: Kafka's own ratio of the
  same two workloads on its RocksDB stores, measured in the same run inside the JVM (the Kafka testee's
  ``bench.run``, as ``test_kafka_side_bench.py``), printed beside kstate's (n/a where the testee cannot run). The
  fixed target of 0.5 it replaces was set before Kafka's own ratio was measured.
- ``put out of order``: the same with timestamps up to 5 000 ms late (a key's puts are 2 000 ms apart, all
  within history retention); no target.
- ``get latest``: N ``get(key)`` on the versioned store against N ``get`` on the timestamped store; target >= 0.8.
- ``get as of``: N ``get(key, asOf)`` at random times within history retention; no target.
- ``put in order, interval I``: the segment interval's effect (default: VER-23's 20 000 for 60 s of history).

Rounds are timed in process CPU time (as ``test_store_bench.py``). Measurements, not timed tests.
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
from bench_tools import KAFKA_VERSION, bench, hexes, machine_load, print_report, start_kafka_side

from kstate.codecs.store_types import StoreType
from kstate.codecs.timestamped import encode_value_and_timestamp
from kstate.stores.api import Backend, KeyValueBytesStore, TopicPartition
from kstate.stores.factory import open_bytes_store, open_kv_store
from kstate.stores.versioned import RocksDBVersionedStore

pytestmark = pytest.mark.benchmark(timer=time.process_time)

N = 2_000
KEYS = 200
ROUNDS = 30
HISTORY_MS = 60_000
STEP_MS = 10  # timestamp advance per put
INTERVALS = (1_000, 20_000, 100_000)  # 20 000 is VER-23's default for 60 s of history
TP = TopicPartition("app-bench-changelog", 0)

_rng = random.Random(7)
KEY_LIST = [_rng.randbytes(16) for _ in range(KEYS)]
VALUES = [os.urandom(100) for _ in range(N)]
LATENESS = [_rng.randrange(0, 5_000) for _ in range(N)]  # up to 2.5 versions of a key back

PAIRS = [
    # The target of "put in order" is Kafka's own ratio (KAFKA_TARGET), measured when the module ends.
    ("put in order", "versioned_put_in_order", "timestamped_put", None),
    ("put out of order", "versioned_put_out_of_order", "timestamped_put", None),
    ("get latest", "versioned_get_latest", "timestamped_get", 0.8),
    ("get as of", "versioned_get_as_of", "timestamped_get", None),
    *((f"put, interval {i}", f"versioned_put_interval_{i}", "timestamped_put", None) for i in INTERVALS),
]

Workload = Callable[[], object]
RESULTS: dict[str, tuple[float, float]] = {}


def _versioned(state_dir: Path, interval: int | None = None) -> RocksDBVersionedStore:
    options: dict[str, Any] = {"history_retention_ms": HISTORY_MS}
    if interval is not None:
        options["segment_interval_ms"] = interval
    store = open_bytes_store(StoreType.VERSIONED_KV, Backend.ROCKSDB, name="bench", state_dir=state_dir,
                             options=options)
    assert isinstance(store, RocksDBVersionedStore)
    return store


class _Clock:
    """The next timestamp of a store's puts: rounds continue where the last one stopped, so puts stay in order."""

    def __init__(self) -> None:
        self.now = 1_000_000


def _putter(store: RocksDBVersionedStore, late: bool) -> Workload:
    clock = _Clock()

    def run() -> None:
        put, now = store.put, clock.now
        for i, value in enumerate(VALUES):
            now += STEP_MS
            put(KEY_LIST[i % KEYS], value, now - LATENESS[i] if late else now)
        clock.now = now
        store.commit({TP: 1})

    return run


@pytest.fixture(scope="module")
def workloads(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Workload]]:
    """Every benchmarked operation, over stores that live for the whole module."""
    timestamped: KeyValueBytesStore = open_kv_store(StoreType.TIMESTAMPED_KV, Backend.ROCKSDB, name="bench",
                                                    state_dir=tmp_path_factory.mktemp("ts"))
    stores = {"in_order": _versioned(tmp_path_factory.mktemp("in-order")),
              "late": _versioned(tmp_path_factory.mktemp("late")),
              "read": _versioned(tmp_path_factory.mktemp("read"))}
    for interval in INTERVALS:
        stores[f"interval_{interval}"] = _versioned(tmp_path_factory.mktemp(f"interval-{interval}"), interval)
    ts_clock = _Clock()
    fill = _putter(stores["read"], late=False)
    for _ in range(5):
        fill()  # five versions per key... and more: N / KEYS per round
    end = 1_000_000 + 5 * N * STEP_MS
    as_of = [random.Random(i).randrange(end - HISTORY_MS, end) for i in range(N)]

    def timestamped_put() -> None:
        put, now = timestamped.put, ts_clock.now
        for i, value in enumerate(VALUES):
            now += STEP_MS
            put(KEY_LIST[i % KEYS], encode_value_and_timestamp(value, now))
        ts_clock.now = now
        timestamped.commit({TP: 1})

    timestamped_put()

    def timestamped_get() -> None:
        get = timestamped.get
        for i in range(N):
            get(KEY_LIST[i % KEYS])

    def versioned_get_latest() -> None:
        get = stores["read"].get
        for i in range(N):
            get(KEY_LIST[i % KEYS])

    def versioned_get_as_of() -> None:
        get = stores["read"].get
        for i in range(N):
            get(KEY_LIST[i % KEYS], as_of[i])

    found = {
        "timestamped_put": timestamped_put,
        "timestamped_get": timestamped_get,
        "versioned_put_in_order": _putter(stores["in_order"], late=False),
        "versioned_put_out_of_order": _putter(stores["late"], late=True),
        "versioned_get_latest": versioned_get_latest,
        "versioned_get_as_of": versioned_get_as_of,
        **{f"versioned_put_interval_{i}": _putter(stores[f"interval_{i}"], late=False) for i in INTERVALS},
    }
    yield found
    timestamped.close()
    for store in stores.values():
        store.close()
    gc.collect()


def kafka_put_ratio(base: Path) -> tuple[float | None, str]:
    """Kafka's versioned put in order over its timestamped put, the same keys, values, timestamps and history as
    this module's (the fastest of ``ROUNDS`` rounds each, inside the JVM), or ``None`` and why not."""
    side = start_kafka_side(base)
    if isinstance(side, str):
        return None, side
    try:
        times = [1_000_000 + (i + 1) * STEP_MS for i in range(N)]
        keys = hexes([KEY_LIST[i % KEYS] for i in range(N)])
        stamped = hexes([encode_value_and_timestamp(v, t) for v, t in zip(VALUES, times, strict=True)])
        timestamped = side.run(side.open("timestamped_kv"), "put", rounds=ROUNDS, keys=keys, values=stamped,
                               commit=True)
        versioned = side.run(side.open("versioned_kv", {"history_retention_ms": HISTORY_MS}), "versioned_put",
                             rounds=ROUNDS, keys=keys, values=hexes(VALUES), timestamps=times,
                             round_shift_ms=N * STEP_MS, commit=True)
    finally:
        side.close()
    return timestamped.best / versioned.best, (f"Kafka {KAFKA_VERSION}: timestamped {timestamped.best / 1e6:.2f} ms, "
                                               f"versioned {versioned.best / 1e6:.2f} ms (wall clock, in the JVM)")


@pytest.fixture(scope="module", autouse=True)
def ratio_report(request: pytest.FixtureRequest, workloads: dict[str, Workload],
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """After the module: print each pair side by side with its ratio and target (put in order: Kafka's ratio)."""
    yield
    if not RESULTS:
        return
    kafka_target, kafka_note = (kafka_put_ratio(tmp_path_factory.mktemp("kafka"))
                                if "versioned_put_in_order" in RESULTS else (None, "put in order not run"))
    lines = ["", "versioned benchmark ratios = timestamped time / versioned time (process CPU time; higher is better)",
             f"{'pair':<26}{'versioned min/median ms':>46}{'timestamped min/median ms':>36}{'ratio':>8}{'target':>8}"]
    for label, measured, baseline, fixed in PAIRS:
        if measured not in RESULTS or baseline not in RESULTS:
            continue
        target = kafka_target if measured == "versioned_put_in_order" else fixed
        (m_min, m_med), (b_min, b_med) = RESULTS[measured], RESULTS[baseline]
        ratio = b_min / m_min
        verdict = "" if target is None else ("  meets target" if ratio >= target else "  BELOW TARGET")
        lines.append(f"{label:<26}{f'{measured} {m_min * 1e3:.2f}/{m_med * 1e3:.2f}':>46}"
                     f"{f'{baseline} {b_min * 1e3:.2f}/{b_med * 1e3:.2f}':>36}{ratio:>8.2f}"
                     f"{'' if target is None else f'{target:.2f}':>8}{verdict}")
    ours = (f"{RESULTS['timestamped_put'][0] / RESULTS['versioned_put_in_order'][0]:.2f}"
            if "timestamped_put" in RESULTS and "versioned_put_in_order" in RESULTS else "n/a")
    lines.append(f"versioned / timestamped put in order: kstate {ours} (process time), Kafka "
                 f"{'n/a' if kafka_target is None else f'{kafka_target:.2f}'}, the target ({kafka_note}); "
                 f"{machine_load()}, {time.strftime('%Y-%m-%d %H:%M')}")
    print_report(request, lines)


def _bench(benchmark: Any, workloads: dict[str, Workload], name: str, group: str) -> None:
    benchmark.group = group
    bench(benchmark, workloads[name], ROUNDS, RESULTS, name)


@pytest.mark.parametrize("name", ["timestamped_put", "versioned_put_in_order", "versioned_put_out_of_order",
                                  *(f"versioned_put_interval_{i}" for i in INTERVALS)])
def test_put(benchmark: Any, workloads: dict[str, Workload], name: str) -> None:
    _bench(benchmark, workloads, name, "versioned put")


@pytest.mark.parametrize("name", ["timestamped_get", "versioned_get_latest", "versioned_get_as_of"])
def test_get(benchmark: Any, workloads: dict[str, Workload], name: str) -> None:
    _bench(benchmark, workloads, name, "versioned get")
