"""System benchmarks on a real broker (the kit's default, Apache Kafka where Java is installed, else Tansu;
``benchmarks/conftest.py``), measured side by side in one run.

- ``restore``: restoring a changelog partition into a RocksDB store of each key-value type (read by fetch to
  EOF, converted, written batch by batch with its offsets, KV-50) against two baselines from the same broker:
  ``raw consume``, confluent-kafka reading the same partition and doing nothing with the messages (the
  target is restore >= 0.5 of it), and ``consume + raw write``, the same reading plus the record keys
  and values written unconverted with raw rocksdict write batches: the ceiling of any restore through
  rocksdict, which shows how much of the gap is the kit's own work. Restore pauses Python's cyclic
  collector while it runs (``gc_paused``: it allocates nothing cyclic), and so does the ceiling; the raw
  consume is measured both ways, and restore's ratio is printed against both. Opening and closing the
  store are not timed (Kafka opens the store before restoring and keeps it open after).
  Each restore round is also paired with a raw consume run just before it, and the median of those
  per-round ratios is printed: on a shared 2-core machine, the machine's speed drifts more between tests
  than between neighbouring rounds.
The Spark audit's benchmark (records per second against a raw consume, local[1] and local[2]) is
``test_audit_bench.py``.

Wall-clock rounds; the ratios are printed at the end of the module and written to ``reports/bench/restore-broker.md``
with the run's date, commit, machine load, broker and client (``benchmarks/readme.py`` copies it into the README). Measurements, not timed tests: a ratio
under its target is reported, never failed. ``KSTATE_BENCH_RECORDS`` sets the restore size (default 200 000).
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from bench_tools import git_commit, machine_load

from kstate.app.restore_io import restore_from_changelog
from kstate.codecs.store_types import BUILT_KV_TYPES, StoreType
from kstate.kafka.broker import Broker, describe
from kstate.kafka.changelog_topics import create_changelog_topic, iter_batches, produce
from kstate.stores.api import Backend, TopicPartition
from kstate.stores.factory import open_kv_store
from kstate.stores.restore import DEFAULT_RESTORE_BATCH_SIZE, gc_paused

RESTORE_RECORDS = int(os.environ.get("KSTATE_BENCH_RECORDS", "200000"))
#: Rounds per restore-side benchmark; the fastest is compared (a 2-core machine shared with the broker is noisy).
ROUNDS = int(os.environ.get("KSTATE_BENCH_ROUNDS", "5"))
RESULTS: dict[str, float] = {}
#: Per store type, the sorted ratios of each restore round to the raw consume run right before it.
PAIRED: dict[str, list[float]] = {}
#: The broker the module ran on, named in the report.
BROKER: list[str] = []
REPORT = Path(__file__).resolve().parents[1] / "reports" / "bench" / "restore-broker.md"


def _changelog(broker: Broker, app: str, records: int, partitions: int) -> str:
    topic = create_changelog_topic(broker, app, "s", StoreType.TIMESTAMPED_KV_WITH_HEADERS, partitions)
    rng = random.Random(1)
    for partition in range(partitions):
        produce(broker, topic, ((b"%016d" % rng.randrange(records // 4), rng.randbytes(100), 1_700_000_000_000 + n,
                                 [("h", b"%d" % n)]) for n in range(records // partitions)), partition=partition,
                timeout=120)
    return topic


@pytest.fixture(scope="module")
def restore_topic(bench_broker: Broker) -> str:
    BROKER.append(describe(bench_broker))
    return _changelog(bench_broker, "bench-restore", RESTORE_RECORDS, 1)


def _retire(databases: list[Any], directories: list[str]) -> None:
    """Close and delete the previous round's database, so its background flushes do not run into this round."""
    while databases:
        databases.pop().close()
    while directories:
        shutil.rmtree(directories.pop(), ignore_errors=True)


@pytest.mark.parametrize("collector", ["gc-on", "gc-paused"])
def test_raw_consume(benchmark: Any, bench_broker: Broker, restore_topic: str, collector: str) -> None:
    """Reading the partition and nothing else; ``gc-paused`` as restore runs (``gc_paused``), for comparison."""
    def consume() -> int:
        with gc_paused() if collector == "gc-paused" else contextlib.nullcontext():
            return _raw_consume(bench_broker, restore_topic)

    count = benchmark.pedantic(consume, rounds=ROUNDS, iterations=1, warmup_rounds=1)
    assert count == RESTORE_RECORDS
    RESULTS[f"raw consume {collector} records/s"] = RESTORE_RECORDS / benchmark.stats.stats.min


def test_consume_and_raw_write(benchmark: Any, bench_broker: Broker, restore_topic: str) -> None:
    """The floor of a restore through rocksdict: the same reads, keys and values written as they come."""
    import rocksdict

    from kstate.stores.engine import rocksdb_options

    databases: list[Any] = []
    directories: list[str] = []

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        _retire(databases, directories)
        directories.append(tempfile.mkdtemp(prefix="kstate-bench-"))
        databases.append(rocksdict.Rdict(directories[-1], rocksdb_options()))
        return (databases[-1],), {}

    def load(db: Any) -> int:
        count = 0
        with gc_paused():
            for batch in iter_batches(bench_broker.bootstrap, restore_topic, 0,
                                      batch_size=DEFAULT_RESTORE_BATCH_SIZE):
                native = rocksdict.WriteBatch(raw_mode=True)
                for message in batch:
                    native.put(message.key(), message.value())
                db.write(native)
                count += len(batch)
        return count

    try:
        count = benchmark.pedantic(load, setup=setup, rounds=ROUNDS, iterations=1, warmup_rounds=1)
    finally:
        _retire(databases, directories)
    assert count == RESTORE_RECORDS
    RESULTS["consume + raw write records/s"] = RESTORE_RECORDS / benchmark.stats.stats.min


@pytest.mark.parametrize("store_type", list(BUILT_KV_TYPES), ids=lambda t: t.value)
def test_restore_into_rocksdb(benchmark: Any, bench_broker: Broker, restore_topic: str,
                              store_type: StoreType) -> None:
    stores: list[Any] = []
    directories: list[str] = []
    raw_seconds: list[float] = []

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        _retire(stores, directories)
        raw_seconds.append(_timed_raw_consume(bench_broker, restore_topic))
        directories.append(tempfile.mkdtemp(prefix="kstate-bench-"))
        stores.append(open_kv_store(store_type, Backend.ROCKSDB, name="s", state_dir=directories[-1],
                                    application_id="bench-restore"))
        return (stores[-1],), {}

    def restore(store: Any) -> int:
        return restore_from_changelog(store, store_type, bench_broker.bootstrap,
                                      TopicPartition(restore_topic, 0)).records

    try:
        count = benchmark.pedantic(restore, setup=setup, rounds=ROUNDS, iterations=1, warmup_rounds=1)
        assert stores[-1].committed_offset(TopicPartition(restore_topic, 0)) == RESTORE_RECORDS - 1
    finally:
        _retire(stores, directories)
    assert count == RESTORE_RECORDS
    RESULTS[f"restore {store_type.value} records/s"] = RESTORE_RECORDS / benchmark.stats.stats.min
    # Each round's restore against the raw consume timed just before it (the warm-up round's pair dropped).
    paired = sorted(raw / restored for raw, restored in zip(raw_seconds[-ROUNDS:], benchmark.stats.stats.data, strict=True))
    PAIRED[store_type.value] = paired


def _raw_consume(broker: Broker, topic: str) -> int:
    """The baseline: every message of the partition read, nothing done with it."""
    return sum(len(batch) for batch in iter_batches(broker.bootstrap, topic, 0))


def _timed_raw_consume(broker: Broker, topic: str) -> float:
    start = time.perf_counter()
    assert _raw_consume(broker, topic) == RESTORE_RECORDS
    return time.perf_counter() - start


def _client() -> str:
    import confluent_kafka

    return f"confluent-kafka {confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]})"


def teardown_module() -> None:
    lines = []
    raw = RESULTS.get("raw consume gc-on records/s")
    raw_paused = RESULTS.get("raw consume gc-paused records/s")
    floor = RESULTS.get("consume + raw write records/s")
    if raw and raw_paused:
        lines.append(f"raw consume {raw:,.0f} records/s; with the collector paused {raw_paused:,.0f} records/s")
    if raw and floor:
        lines.append(f"consume + raw rocksdict write {floor:,.0f} records/s vs raw consume: ratio {floor / raw:.2f} "
                     "(the ceiling of a restore through rocksdict)")
    table = ["| run | records/s | / raw consume | / raw consume, collector paused | / consume + raw write | "
             "paired rounds: median (range) |", "|---|---:|---:|---:|---:|---|"]
    for name, rate in (("raw consume", raw), ("raw consume, collector paused", raw_paused),
                       ("consume + raw rocksdict write", floor)):
        if rate and raw:
            table.append(f"| {name} | {rate:,.0f} | {rate / raw:.2f} |  |  |  |")
    for store_type in BUILT_KV_TYPES:
        restored = RESULTS.get(f"restore {store_type.value} records/s")
        paired = PAIRED.get(store_type.value)
        if raw and restored:
            others = "".join(f", {restored / base:.2f} {what}" for base, what in
                             ((raw_paused, "of raw consume with the collector paused"), (floor, "of consume + raw write"))
                             if base)
            lines.append(f"restore into {store_type.value} {restored:,.0f} records/s vs raw consume: "
                         f"ratio {restored / raw:.2f} (target >= 0.5){others}")
            cells = [f"restore into `{store_type.value}`", f"{restored:,.0f}", f"{restored / raw:.2f}",
                     f"{restored / raw_paused:.2f}" if raw_paused else "", f"{restored / floor:.2f}" if floor else "",
                     f"{statistics.median(paired):.2f} ({paired[0]:.2f} to {paired[-1]:.2f})" if paired else ""]
            table.append("| " + " | ".join(cells) + " |")
        if paired:
            lines.append(f"  paired rounds (restore vs the raw consume just before it): median "
                         f"{statistics.median(paired):.2f}, range {paired[0]:.2f} to {paired[-1]:.2f}, "
                         f"{len(paired)} rounds")
    if lines:
        print("\n" + "\n".join(lines) + f"\n(measured {time.strftime('%Y-%m-%d %H:%M')})")
    if len(table) > 2:
        report = [f"## Restore from the broker against raw consume ({time.strftime('%Y-%m-%d %H:%M')}, "
                  f"commit {git_commit()})", "",
                  f"{RESTORE_RECORDS} changelog records of a header-aware store's topic (16-byte keys, 100-byte values, "
                  f"one header), read to the end of the partition through {_client()} on the "
                  f"{BROKER[0] if BROKER else 'benchmark broker'}; wall clock, fastest of {ROUNDS} rounds, and each "
                  "restore round against the raw consume just before it (target: restore >= 0.5 of raw consume); "
                  f"{machine_load()} at the end of the run.", "", *table]
        REPORT.parent.mkdir(parents=True, exist_ok=True)
        REPORT.write_text("\n".join(report) + "\n", encoding="utf-8")
        print("\n".join(["", *report, "", f"(written to {REPORT})"]))
