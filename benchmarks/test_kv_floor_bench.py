"""Key-value reads against their raw rocksdict floor in process time (issue 35), without the Kafka testee.

The rows and reads of ``test_kafka_side_bench.py``'s key-value test (2 000 timestamped keys of 16 bytes, 100 ranges
of 20 keys, 100 one-byte prefixes, ``all()``), on the RocksDB and the in-memory timestamped store, on the RocksDB
store under the caching layer (every tenth key cached dirty), and on the header-aware store. The floor is the same
loop over the same rows through raw rocksdict (raw mode, the stores' RocksDB options), as the side-by-side floor.
The versioned reads of its versioned test too (200 keys, five rounds of 2 000 in-order puts, the store reopened so
that its latest-value cache is cold): ``get(key, asOf)`` beside the same lookup through raw rocksdict (the
latest-value row, then the key's segment rows newest first, the version found in the row's index as
``SegmentValue.find`` finds it, VER-32, VER-11), and beside the codec's per-key procedure; ``get(key)`` beside a
floor that reads and decodes the latest-value row, and one that only reads it (the side-by-side floor).

Each kstate round alternates with a floor round, ``KSTATE_BENCH_FLOOR_ROUNDS`` times (80), and the fastest of each
is compared in process CPU time (``time.process_time``), which the load of a shared machine disturbs far less than
wall-clock time: ``kstate/floor`` = the floor's time / kstate's (higher is better; the goal is 0.85). Measurements,
not timed tests: a ratio under its goal is reported, never failed. The table is printed and written to
``reports/bench/kv-floor.md``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from bench_tools import (
    git_commit,
    interleaved,
    machine_load,
    open_raw,
    print_report,
    raw_prefix_count,
    raw_versioned_get_as_of,
    raw_versioned_get_latest,
)
from test_kafka_side_bench import (
    HISTORY_MS,
    KEYS,
    PREFIXES,
    RANGES,
    RAW_VALUES,
    SEGMENT_MS,
    TP,
    TS_VALUES,
    V_LOOKUPS,
    VFILL_ROUNDS,
    VKEYS,
    VSHIFT,
    VTIMES,
)

from kstate.codecs.header_values import encode_value_timestamp_headers
from kstate.codecs.store_types import DEFAULT_CF, StoreType
from kstate.stores.api import Backend
from kstate.stores.caching import CachingKeyValueStore
from kstate.stores.factory import open_bytes_store, open_kv_store
from kstate.stores.surface import RecordContextHolder

ROUNDS = int(os.environ.get("KSTATE_BENCH_FLOOR_ROUNDS", "80"))
REPORT = Path(__file__).resolve().parents[1] / "reports" / "bench" / "kv-floor.md"
#: (store, read) -> (kstate seconds, floor seconds), the fastest round of each.
RESULTS: dict[tuple[str, str], tuple[float, float]] = {}


def _reads(store: Any, close: Callable[[Any], None]) -> dict[str, Callable[[], int]]:
    def ranges() -> int:
        found = 0
        for low, high in RANGES:
            iterator = store.range(low, high)
            found += sum(1 for _ in iterator)
            close(iterator)
        return found

    def prefixes() -> int:
        found = 0
        for prefix in PREFIXES:
            iterator = store.prefix_scan(prefix)
            found += sum(1 for _ in iterator)
            close(iterator)
        return found

    def all_rows() -> int:
        iterator = store.all()
        found = sum(1 for _ in iterator)
        close(iterator)
        return found

    return {"range (100 × 20 keys)": ranges, "prefix scan (100 one-byte prefixes)": prefixes, "all (2 000 keys)": all_rows}


def _floors(raw: Any) -> dict[str, Callable[[], int]]:
    def ranges() -> int:
        found = 0
        for low, high in RANGES:
            for key, _ in raw.items(from_key=low):
                if key > high:
                    break
                found += 1
        return found

    def prefixes() -> int:
        return raw_prefix_count(raw, PREFIXES)

    def all_rows() -> int:
        return sum(1 for _ in raw.items())

    return {"range (100 × 20 keys)": ranges, "prefix scan (100 one-byte prefixes)": prefixes, "all (2 000 keys)": all_rows}


def _measure(label: str, store: Any, raw: Any) -> None:
    _measure_reads(label, _reads(store, lambda iterator: iterator.close()), _floors(raw))


def _measure_reads(label: str, reads: dict[str, Callable[[], int]], floors: dict[str, Callable[[], int]]) -> None:
    for read, workload in reads.items():
        floor = floors[read]
        assert workload() == floor(), f"{label} {read}: kstate and the floor read different rows"
        RESULTS[(label, read)] = interleaved(workload, floor, ROUNDS)


def _filled(store: Any, values: list[bytes] | list[bytes | None]) -> Any:
    for key, value in zip(KEYS, values, strict=True):
        store.put(key, value)
    return store


def test_key_value_reads_at_the_floor(benchmark: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    raw = open_raw(tmp_path_factory.mktemp("floor"))
    for key, value in zip(KEYS, TS_VALUES, strict=True):
        raw.put(key, value)
    rocks = _filled(open_kv_store(StoreType.TIMESTAMPED_KV, Backend.ROCKSDB, name="bench",
                                  state_dir=tmp_path_factory.mktemp("rocks")), TS_VALUES)
    rocks.commit({TP: 1})
    memory = _filled(open_kv_store(StoreType.TIMESTAMPED_KV, Backend.MEMORY, name="bench"), TS_VALUES)
    # pytest-benchmark's own table (and ``--benchmark-only`` runs this test): the RocksDB ranges.
    benchmark.group = "key-value reads at the floor"
    benchmark.pedantic(_reads(rocks, lambda iterator: iterator.close())["range (100 × 20 keys)"], rounds=10,
                       iterations=1, warmup_rounds=2)
    _measure("RocksDB timestamped", rocks, raw)
    _measure("in-memory timestamped", memory, raw)
    cached = CachingKeyValueStore(rocks, RecordContextHolder())
    for key, value in list(zip(KEYS, TS_VALUES, strict=True))[::10]:
        cached.put(key, value)
    _measure("RocksDB timestamped, cached (200 dirty)", cached, raw)
    cached.close()
    memory.close()
    # The header-aware store beside a floor holding its own rows (the values carry the empty headers' prefix).
    header_values = [encode_value_timestamp_headers(v, 1_700_000_000_000 + i, []) for i, v in enumerate(RAW_VALUES)]
    headers = _filled(open_kv_store(StoreType.TIMESTAMPED_KV_WITH_HEADERS, Backend.ROCKSDB, name="bench",
                                    state_dir=tmp_path_factory.mktemp("headers")), header_values)
    headers.commit({TP: 1})
    header_raw = open_raw(tmp_path_factory.mktemp("header-floor"))
    for key, value in zip(KEYS, header_values, strict=True):
        header_raw.put(key, value)
    _measure("RocksDB header-aware", headers, header_raw)
    headers.close()
    raw.close()
    header_raw.close()


def test_versioned_reads_at_the_floor(tmp_path_factory: pytest.TempPathFactory) -> None:
    """get as of and get latest of the side-by-side benchmark's versioned store (200 keys, five rounds of 2 000
    in-order puts, the store reopened so its latest-value cache is cold) beside the same lookups through raw
    rocksdict over a copy of its rows flushed to a table file, as the reopened store's are (VS-8, VS-9)."""
    options = {"history_retention_ms": HISTORY_MS, "segment_interval_ms": SEGMENT_MS}
    state_dir = tmp_path_factory.mktemp("versioned")
    store: Any = open_bytes_store(StoreType.VERSIONED_KV, Backend.ROCKSDB, name="bench", state_dir=state_dir,
                                  options=options)
    for r in range(VFILL_ROUNDS):
        for key, value, t in zip(VKEYS, RAW_VALUES, VTIMES, strict=True):
            store.put(key, value, t + r * VSHIFT)
        store.commit({TP: 1})
    raw = open_raw(tmp_path_factory.mktemp("versioned-floor"))
    for key, value in store.column_family_rows()[DEFAULT_CF]:
        raw.put(key, value)
    raw.flush()
    live_ids = sorted(store.segment_ids(), reverse=True)
    observed = store.observed_stream_time
    store.close()
    store = open_bytes_store(StoreType.VERSIONED_KV, Backend.ROCKSDB, name="bench", state_dir=state_dir,
                             options=options)
    get = store.get

    def get_as_of() -> int:
        return sum(get(key, as_of) is not None for key, as_of in V_LOOKUPS)

    def get_latest() -> int:
        return sum(get(key) is not None for key in VKEYS)

    def get_latest_rows_only() -> int:  # the side-by-side benchmark's floor: the row read, nothing decoded
        row_get, prefix = raw.get, b"\xff" * 8
        return sum(row_get(prefix + key) is not None for key in VKEYS)

    codec_get_as_of = store._codec_get_as_of

    def get_as_of_through_the_codec() -> int:
        # The same answers through the codec's per-key procedure (KeyVersions.get_as_of over SegmentValue.find,
        # VER-32, VER-11), which the store's read in place replaced: what that read buys, in the same run.
        return sum(codec_get_as_of(key, as_of) is not None for key, as_of in V_LOOKUPS)

    as_of_floor = lambda: raw_versioned_get_as_of(raw, V_LOOKUPS, live_ids, observed, HISTORY_MS, SEGMENT_MS)  # noqa: E731
    reads = {f"get as of ({len(V_LOOKUPS)})": get_as_of,
             f"get as of ({len(V_LOOKUPS)}), through the codec's procedure": get_as_of_through_the_codec,
             f"get latest, uncached ({len(VKEYS)})": get_latest,
             f"get latest, uncached ({len(VKEYS)}), floor without decoding": get_latest}
    floors = {f"get as of ({len(V_LOOKUPS)})": as_of_floor,
              f"get as of ({len(V_LOOKUPS)}), through the codec's procedure": as_of_floor,
              f"get latest, uncached ({len(VKEYS)})": lambda: raw_versioned_get_latest(raw, VKEYS),
              f"get latest, uncached ({len(VKEYS)}), floor without decoding": get_latest_rows_only}
    _measure_reads("RocksDB versioned (reopened)", reads, floors)
    store.close()
    raw.close()


@pytest.fixture(scope="module", autouse=True)
def floor_report(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if not RESULTS:
        return
    lines = [f"## Key-value reads against raw rocksdict ({time.strftime('%Y-%m-%d %H:%M')}, commit {git_commit()})", "",
             f"Process time, fastest of {ROUNDS} interleaved rounds; kstate/floor = the floor's time / kstate's "
             f"(goal 0.85); {machine_load()} at the end of the run.", "",
             "| store | read | floor ms | kstate ms | kstate/floor |", "|---|---|---:|---:|---:|"]
    for (label, read), (ours, floor) in RESULTS.items():
        lines.append(f"| {label} | {read} | {floor * 1e3:.3f} | {ours * 1e3:.3f} | {floor / ours:.2f} |")
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print_report(request, ["", *lines, "", f"(written to {REPORT})"])
