"""Dump benchmark (issue 35): ``kstate inspect --dump`` and the store dump reading a large state directory, against
raw rocksdict iteration of the same database.

One timestamped key-value store of ``KSTATE_BENCH_DUMP_MB`` MiB of rows (default 32, sized for CI; the issue's figure
is 1 GiB: ``KSTATE_BENCH_DUMP_MB=1024``), 16-byte keys and 100-byte values, written by the reference and closed (its rows
flushed to table files as Kafka leaves them). Each stage is timed in process CPU time (``time.process_time``,
RocksDB's threads included), twice, the faster kept:

- ``raw iteration``: the floor, ``Rdict.items()`` over every family of the database opened read-only in raw mode,
  each row counted;
- ``iter_database``: :func:`kstate.store_dump.iter_database`, the reader of every dump (the scratch copy, every
  family's rows in key order, streamed: one row held at a time);
- ``read_database``: :func:`kstate.store_dump.read_database`, the same rows held in lists (what the inspection
  without ``--dump`` reads);
- ``dump_store rows``: :func:`kstate.inspect.dump_store`, every row decoded by its store type into the dict the
  dump prints (the inspection of the directory included);
- ``inspect --dump --json``: those rows as the command prints them (:func:`kstate.inspect.dump_store_lines`, the
  bytes of ``json.dumps`` with sorted keys, the collector paused as the command pauses it), written to a null sink.

Each is reported as raw iteration's time over its own (higher is better; the issue's target for the dump read is
0.8). The table is printed and written to ``reports/bench/dump.md`` with its date, commit and machine load
(``benchmarks/readme.py`` copies it into the README). Measurements, not timed tests.
"""

from __future__ import annotations

import gc
import io
import os
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import rocksdict
from bench_tools import git_commit, machine_load, print_report

from kstate.codecs.store_types import StoreType
from kstate.codecs.timestamped import encode_value_and_timestamp
from kstate.inspect import dump_store, dump_store_lines
from kstate.store_dump import iter_database, read_database
from kstate.stores.api import Backend, TopicPartition
from kstate.stores.factory import open_kv_store
from kstate.stores.restore import gc_paused

MIB = int(os.environ.get("KSTATE_BENCH_DUMP_MB", "32"))
KEY_SIZE, VALUE_SIZE = 16, 100
ROW_BYTES = KEY_SIZE + 8 + VALUE_SIZE
ROWS = MIB * (1 << 20) // ROW_BYTES
BATCH = 50_000
TP = TopicPartition("dump-changelog", 0)
APP, TASK, STORE = "dump-bench", "0_0", "big"
REPORT = Path(__file__).resolve().parents[1] / "reports" / "bench" / "dump.md"


def _fill(state_dir: Path) -> Path:
    """The store written and closed; its database directory."""
    store = open_kv_store(StoreType.TIMESTAMPED_KV, Backend.ROCKSDB, name=STORE, state_dir=state_dir,
                          application_id=APP, task_id=TASK)
    rng = random.Random(35)
    value = rng.randbytes(VALUE_SIZE)
    put = store.put
    for start in range(0, ROWS, BATCH):
        for i in range(start, min(start + BATCH, ROWS)):
            put(i.to_bytes(4, "big") + rng.randbytes(KEY_SIZE - 4), encode_value_and_timestamp(value, i))
        store.commit({TP: start})
    store.close()
    return state_dir / APP / TASK / "rocksdb" / STORE


def _raw_iteration(db_dir: Path) -> int:
    families = [str(cf) for cf in rocksdict.Rdict.list_cf(str(db_dir))]
    db = rocksdict.Rdict(str(db_dir), rocksdict.Options(raw_mode=True),
                         column_families={cf: rocksdict.Options(raw_mode=True) for cf in families},
                         access_type=rocksdict.AccessType.read_only())
    try:
        found = 0
        for cf in families:
            handle = db.get_column_family(cf)
            for _ in handle.items():
                found += 1
            del handle
        return found
    finally:
        db.close()
        del db
        gc.collect()


def _iter_database(db_dir: Path) -> int:
    found = 0
    for _cf, rows in iter_database(db_dir):
        for _ in rows:
            found += 1
    return found


def _read_database(db_dir: Path) -> int:
    return sum(len(rows) for rows in read_database(db_dir).values())


def _dump_rows(state_dir: Path) -> int:
    return sum(1 for _ in dump_store(state_dir, STORE, task=TASK))


def _dump_json(state_dir: Path) -> int:
    """What ``cmd_inspect`` does for ``--dump STORE --json`` (the collector paused, every row printed)."""
    sink = io.StringIO()
    found = 0
    with gc_paused():
        for line in dump_store_lines(state_dir, STORE, task=TASK):
            sink.write(line)
            sink.write("\n")
            found += 1
            if found % 100_000 == 0:
                sink = io.StringIO()  # a null sink: the printed text is not kept
    return found


def _timed(work: Callable[[], int], rounds: int = 2) -> tuple[float, int]:
    best, found = float("inf"), 0
    for _ in range(rounds):
        start = time.process_time()
        found = work()
        best = min(best, time.process_time() - start)
    return best, found


def test_dump_against_raw_iteration(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> None:
    state_dir = tmp_path_factory.mktemp("dump-state")
    db_dir = _fill(state_dir)
    on_disk = sum(f.stat().st_size for f in db_dir.iterdir() if f.is_file())
    stages: list[tuple[str, Callable[[], int]]] = [
        ("raw iteration", lambda: _raw_iteration(db_dir)), ("iter_database", lambda: _iter_database(db_dir)),
        ("read_database", lambda: _read_database(db_dir)),
        ("dump_store rows", lambda: _dump_rows(state_dir)), ("inspect --dump --json", lambda: _dump_json(state_dir))]
    results: dict[str, tuple[float, int]] = {}
    for name, work in stages:
        results[name] = _timed(work)
        gc.collect()
    floor = results["raw iteration"][0]
    lines = [f"## Dump of a {on_disk / (1 << 20):.0f} MiB store against raw rocksdict iteration "
             f"({time.strftime('%Y-%m-%d %H:%M')}, commit {git_commit()})", "",
             f"{ROWS} rows of {ROW_BYTES} bytes (a timestamped key-value store); process CPU time, faster of 2 rounds; "
             f"raw/stage = raw iteration's time over the stage's (higher is better; target 0.8); {machine_load()} "
             "at the end of the run.", "",
             "| stage | rows | seconds | µs/row | raw/stage |", "|---|---:|---:|---:|---:|"]
    for name, _ in stages:
        seconds, found = results[name]
        lines.append(f"| {name} | {found} | {seconds:.2f} | {seconds / max(found, 1) * 1e6:.2f} | "
                     f"{floor / seconds:.2f} |")
    # The rows every stage read: the data family's and the offsets family's (position, status, offset).
    counts = {found for _, found in results.values()}
    data_rows: Any = results["dump_store rows"][1]
    lines.append("")
    lines.append(f"rows read by each stage: {sorted(counts)}; decoded data rows: {data_rows}")
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print_report(request, ["", *lines, "", f"(written to {REPORT})"])
