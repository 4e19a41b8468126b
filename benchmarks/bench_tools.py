"""What the benchmark modules share: interleaved timing, the raw rocksdict baseline, the printed report, and
Kafka's stores timed inside the JVM (the testee's ``bench.run``)."""

from __future__ import annotations

import contextlib
import os
import statistics
import struct
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import rocksdict

from kstate.stores.engine import rocksdb_options
from kstate_conformance.capabilities import capabilities_of


def interleaved(measured: Callable[[], object], baseline: Callable[[], object], rounds: int) -> tuple[float, float]:
    """Minimum process time of each workload over ``rounds`` that alternate between the two (same machine load)."""
    best_m = best_b = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        measured()
        best_m = min(best_m, time.process_time() - start)
        start = time.process_time()
        baseline()
        best_b = min(best_b, time.process_time() - start)
    return best_m, best_b


def open_raw(path: Path) -> Any:
    """A raw rocksdict database at ``path``, with the stores' RocksDB options."""
    path.mkdir(parents=True, exist_ok=True)
    return rocksdict.Rdict(str(path), rocksdb_options())


def raw_copy(tmp_path_factory: pytest.TempPathFactory, name: str, rows: Sequence[tuple[bytes, bytes]]) -> Any:
    """A raw rocksdict database holding ``rows`` (in its memtable, as a store's committed rows are), for a floor."""
    db = open_raw(tmp_path_factory.mktemp(name))
    for key, value in rows:
        db.put(key, value)
    return db


def segment_floors(tmp_path_factory: pytest.TempPathFactory, name: str, rows: Sequence[tuple[int, bytes, bytes]],
                   interval: int) -> dict[int, Any]:
    """Raw databases ``name-<segment>`` of segment ``time // interval`` each holding its ``(time, row key, value)``
    rows, in key order."""
    by_segment: dict[int, list[tuple[bytes, bytes]]] = {}
    for time_, key, value in rows:
        by_segment.setdefault(time_ // interval, []).append((key, value))
    return {sid: raw_copy(tmp_path_factory, f"{name}-{sid}", sorted(seg)) for sid, seg in sorted(by_segment.items())}


def raw_load(db: Any, pairs: Sequence[tuple[bytes, bytes | None]], batch_size: int) -> None:
    """``pairs`` written with raw-mode ``rocksdict.WriteBatch`` batches of ``batch_size``: the restore baseline."""
    for start in range(0, len(pairs), batch_size):
        batch = rocksdict.WriteBatch(raw_mode=True)
        put = batch.put
        for key, value in pairs[start : start + batch_size]:
            put(key, value)
        db.write(batch)


def bench(benchmark: Any, workload: Callable[[], object], rounds: int, results: dict[str, tuple[float, float]],
          name: str) -> None:
    """Benchmark ``workload`` over ``rounds`` rounds after two warm-ups; ``results[name]`` keeps its minimum and
    median seconds (absent when pytest-benchmark is disabled and gives no statistics)."""
    benchmark.pedantic(workload, rounds=rounds, iterations=1, warmup_rounds=2)
    stats = getattr(benchmark, "stats", None)
    if stats is not None and getattr(stats, "stats", None) is not None:
        results[name] = (stats.stats.min, stats.stats.median)


def raw_prefix_count(db: Any, prefixes: Sequence[bytes]) -> int:
    """How many rows of the raw rocksdict ``db`` start with each of ``prefixes``: the floor of a prefix scan."""
    found = 0
    for prefix in prefixes:
        for key, _ in db.items(from_key=prefix):
            if not key.startswith(prefix):
                break
            found += 1
    return found


def git_commit() -> str:
    """The short commit hash the benchmark ran at, printed in every report; ``unknown`` outside a checkout."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True,
                              cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def print_report(request: pytest.FixtureRequest, lines: list[str]) -> None:
    """Print ``lines`` past pytest's output capture, so the ratios show in a normal run."""
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
        print("\n".join(lines), flush=True)


#: The Kafka release whose stores the benchmarks measure beside kstate's.
KAFKA_VERSION = os.environ.get("KSTATE_BENCH_KAFKA_VERSION", "4.4.0")
#: Untimed JVM rounds before the timed ones: 20 rounds of 2 000 calls let the JIT compile the loop and the store's path.
JVM_WARMUP = 20


@dataclass
class Side:
    """One side's rounds of one operation, in nanoseconds, and the entries its last round read."""

    nanos: list[int]
    found: int

    @property
    def best(self) -> int:
        return min(self.nanos)

    @property
    def median(self) -> float:
        return statistics.median(self.nanos)


def hexes(items: Sequence[bytes]) -> list[str]:
    return [item.hex() for item in items]


class KafkaSide:
    """Kafka's stores through the testee (full JIT): opened with logging and caching off, each in its own
    directory under ``base``, and timed inside the JVM by ``bench.run``."""

    def __init__(self, adapter: Any, base: Path) -> None:
        self.adapter, self.base = adapter, base
        self.store_types = set(capabilities_of(adapter).store_types)
        self.opened = 0

    def open(self, store_type: str, options: dict[str, Any] | None = None) -> str:
        self.opened += 1
        answer = self.adapter.call("store.open", {"store_type": store_type, "backend": "rocksdb", "logging": False,
                                                  "caching": False, "options": options or {}, "name": store_type,
                                                  "state_dir": str(self.base / f"{store_type}-{self.opened}")})
        if "error" in answer:
            raise RuntimeError(f"the Kafka testee refused to open a {store_type} store: {answer['error']}")
        return str(answer["handle"])

    def run(self, handle: str, kind: str, *, rounds: int, warmup: int = JVM_WARMUP, **inputs: Any) -> Side:
        """``rounds`` timed rounds of ``kind`` (after ``warmup`` untimed ones) on the store ``handle``."""
        answer = self.adapter.call("bench.run", {"handle": handle, "kind": kind, "warmup": warmup, "rounds": rounds,
                                                 **inputs})
        if "error" in answer:
            raise RuntimeError(f"bench.run {kind} refused: {answer['error']}")
        return Side([int(n) for n in answer["nanos"]], int(answer["found"]))

    def close(self) -> None:
        self.adapter.close()


def start_kafka_side(base: Path) -> KafkaSide | str:
    """The Kafka testee of ``KAFKA_VERSION`` (built by Maven on first use), or why it cannot run here."""
    from kstate_conformance import kafka_jvm
    from kstate_conformance.loading import ImplementationError
    from kstate_conformance.testee import SubprocessAdapter, TesteeError

    try:
        command = kafka_jvm.command(KAFKA_VERSION, full_jit=True)
        adapter = SubprocessAdapter(command, timeout=900, start_timeout=120, label=f"{kafka_jvm.PREFIX}{KAFKA_VERSION}")
    except (ImplementationError, TesteeError, subprocess.SubprocessError) as exc:
        return f"the Kafka testee cannot run here: {exc}"
    if not adapter.supports("bench.run"):
        adapter.close()
        return "the Kafka testee answers no bench.run"
    return KafkaSide(adapter, base)


def machine_load() -> str:
    """The 1-minute load average and the core count, printed with every side-by-side figure."""
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


#: A window store key's suffix (WIN-1): [key][window start int64][seqnum int32]; and the window start alone.
WINDOW_SUFFIX = struct.Struct(">qi")
WINDOW_START = struct.Struct(">q")


def raw_window_fetch(segment: Any, key: bytes, low: int, high: int, backward: bool) -> list[tuple[int, bytes]]:
    """The floor of a window fetch: the key's rows of one raw segment database between two window starts, in
    order, a longer key sharing the prefix skipped by length, each answered as (window start, value)."""
    size, rows, unpack = len(key) + 12, [], WINDOW_START.unpack_from
    first, last = key + WINDOW_SUFFIX.pack(low, 0), key + WINDOW_SUFFIX.pack(high, 0x7FFFFFFF)
    if backward:
        for row_key, value in segment.items(backwards=True, from_key=last):
            if row_key < first:
                break
            if len(row_key) == size:
                rows.append((unpack(row_key, size - 12)[0], value))
        return rows
    for row_key, value in segment.items(from_key=first):
        if row_key > last:
            break
        if len(row_key) == size:
            rows.append((unpack(row_key, size - 12)[0], value))
    return rows


def write_floor_report(request: pytest.FixtureRequest, title: str, rounds: int,
                       results: dict[str, tuple[float, float]], path: Path) -> None:
    """Write and print a table of reads against their raw-rocksdict floor: ``results`` maps a read to (kstate's
    time, the floor's time), as :func:`interleaved` measures them (issue 35's goal is 0.85)."""
    lines = [f"## {title} against raw rocksdict ({time.strftime('%Y-%m-%d %H:%M')}, commit {git_commit()})", "",
             f"Process time, fastest of {rounds} interleaved rounds; kstate/floor = the floor's time / "
             f"kstate's (goal 0.85); {machine_load()} at the end of the run.", "",
             "| read | floor ms | kstate ms | kstate/floor |", "|---|---:|---:|---:|"]
    for name, (ours, floor) in results.items():
        lines.append(f"| {name} | {floor * 1e3:.3f} | {ours * 1e3:.3f} | {floor / ours:.2f} |")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print_report(request, ["", *lines, "", f"(written to {path})"])


#: A versioned store's rows (VER-3, VER-4, VER-5): a latest-value row's validFrom, a segment row's header
#: (nextTimestamp, minTimestamp) and one index entry (validFrom, value size).
VERSIONED_INT64 = struct.Struct(">q")
VERSIONED_HEADER = struct.Struct(">qq")
VERSIONED_ENTRY = struct.Struct(">qi")
#: The latest-value store's key prefix, segment -1 (VER-2).
LATEST_VALUE_PREFIX = b"\xff" * 8


def raw_versioned_get_as_of(db: Any, lookups: Sequence[tuple[bytes, int]], live_ids: Sequence[int], observed: int,
                            history_ms: int, segment_ms: int) -> int:
    """The floor of ``get(key, asOf)`` over a raw copy of a versioned store's rows: how many lookups found a version.

    The latest-value row, then the key's rows in the live segments (``live_ids`` newest first) from
    ``segmentId(asOf)`` upward, the version found by walking the row's index as ``SegmentValue.find`` does
    (VER-32, VER-11) and its value sliced out: the rows read and the integers unpacked that any reader needs.
    """
    found = 0
    get, unpack_int, unpack_header, unpack_entry = db.get, VERSIONED_INT64.unpack_from, \
        VERSIONED_HEADER.unpack_from, VERSIONED_ENTRY.unpack_from
    pack, prefix = VERSIONED_INT64.pack, LATEST_VALUE_PREFIX
    for key, as_of in lookups:
        latest = get(prefix + key)
        if latest is not None and unpack_int(latest)[0] <= as_of:
            found += latest[8:] is not None
            continue
        if as_of < observed - history_ms:
            continue
        low = as_of // segment_ms  # as_of >= 0 here: floor division is Java's truncation
        for sid in live_ids:
            if sid < low:
                break
            row = get(pack(sid) + key)
            if row is None:
                continue
            next_ts, min_ts = unpack_header(row)
            if next_ts <= as_of:
                break
            if min_ts > as_of:
                continue
            position, cumulative, size_of_row = 16, 0, len(row)
            while True:
                valid_from, size = unpack_entry(row, position)
                position, cumulative = position + 12, cumulative + max(size, 0)
                if valid_from <= as_of:
                    if size >= 0:
                        start = size_of_row - cumulative
                        found += row[start:start + size] is not None
                    break
            break
    return found


def raw_versioned_get_latest(db: Any, keys: Sequence[bytes]) -> int:
    """The floor of ``get(key)`` on a versioned store: the latest-value row read, its value sliced and its
    validFrom unpacked (VER-3, VER-31); how many keys had one."""
    found = 0
    get, prefix, unpack = db.get, LATEST_VALUE_PREFIX, VERSIONED_INT64.unpack_from
    for key in keys:
        row = get(prefix + key)
        if row is not None:
            found += unpack(row)[0] is not None and row[8:] is not None
    return found


#: A session store key's suffix (SESS-1): [key][end int64][start int64].
SESSION_SUFFIX = struct.Struct(">qq")
_INT64_MAX = 2**63 - 1


def raw_find_sessions(segments: Mapping[int, Any], sids: Sequence[int], key: bytes, earliest_end: int,
                      latest_start: int, backward: bool) -> list[tuple[int, int, bytes | None]]:
    """The floor of findSessions(key, earliestEnd, latestStart): the key's rows of each raw segment database of
    ``sids`` (in the read's order) between its bounds, a longer key sharing the prefix skipped by length, kept by
    end and start, each answered as (start, end, value)."""
    lower, upper = key + SESSION_SUFFIX.pack(earliest_end, 0), key + SESSION_SUFFIX.pack(_INT64_MAX, latest_start)
    size, rows, unpack = len(key) + 16, [], SESSION_SUFFIX.unpack_from
    for sid in sids:
        db = segments[sid]
        items = db.items(backwards=True, from_key=upper) if backward else db.items(from_key=lower)
        for row_key, value in items:
            if (row_key < lower) if backward else (row_key > upper):
                break
            if len(row_key) == size:
                end, start = unpack(row_key, size - 16)
                if end >= earliest_end and start <= latest_start:
                    rows.append((start, end, value))
    return rows
