"""Side by side with Kafka's stores (issue 23): the same store operations on Apache Kafka 4.4.0's RocksDB stores
(the Maven testee of ``testees/kafka-jvm``) and on kstate's, in one run, reported as ratios in a Markdown table.

Every operation runs ``N`` times per round over the same bytes on both sides. Kafka's rounds are timed inside its
JVM (the testee's ``bench.run``: the loop, ``System.nanoTime`` around each round, JIT warm-up rounds first), so
that the pipe's round trips are not measured; kstate's rounds are timed the same way in this process (wall clock,
``time.perf_counter``, two warm-up rounds). Each side's rounds run in three blocks that alternate between the
sides, so that both see the load of the same minutes on a shared machine. Both sides call the store at the same layer: Kafka's bytes store
under the metered layer (logging and caching off), kstate's RocksDB bytes store. The fastest round of each side
is compared: ``kstate/Kafka`` is Kafka's time over kstate's (higher is better; 1.0 is Kafka's speed).

- ``put`` (+ commit), ``get``, ``range`` (100 ranges of 20 keys), ``prefix scan`` (100 one-byte prefixes, about
  8 keys each), ``all`` (the 2 000 keys): a timestamped key-value store.
- ``window put`` (+ commit), ``window fetch`` and ``backward fetch`` (a key's 40 windows), ``fetchAll`` (20 time
  ranges of 10 s, 100 windows each): a window store, one-minute segments.
- ``findSessions`` and ``backwardFindSessions`` (a key's 20 sessions): a session store, where the Kafka testee
  builds one (else reported n/a).
- ``versioned put`` (+ commit, in order), ``versioned get as of`` (random times within history), ``versioned get
  latest (uncached)`` (the store reopened, so kstate's latest-value cache is empty) and, for the versioned put
  target, ``timestamped put`` of the same keys: kstate's versioned/timestamped put ratio is reported beside
  Kafka's own, which is the target (a versioned put may cost what it costs Kafka, no more).

Every read also has a **floor** column (issue 35): the same loop over the same rows through raw rocksdict (raw
mode, the stores' RocksDB options, the same row keys and values written to plain databases, one per segment where
the store has segments), doing only what any Python reader must (seek, step, compare the bound, the fixed-size
key suffix read with ``struct`` where the read filters on it). It is the least a Python reader pays, so
``kstate/floor`` says how much of the gap to Kafka is kstate's own; floor rounds alternate with the other two.

The report is printed and written to ``reports/bench/kafka-side-by-side.md``. Measurements, not timed tests: a
ratio under its target is reported, never failed. ``KSTATE_BENCH_KAFKA_VERSION`` picks the Kafka release.
"""

from __future__ import annotations

import gc
import os
import random
import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from bench_tools import (
    JVM_WARMUP,
    KAFKA_VERSION,
    SESSION_SUFFIX,
    KafkaSide,
    Side,
    git_commit,
    hexes,
    machine_load,
    print_report,
    raw_copy,
    raw_find_sessions,
    raw_prefix_count,
    raw_versioned_get_as_of,
    raw_window_fetch,
    segment_floors,
)

from kstate.codecs import session_keys
from kstate.codecs import versioned as versioned_codec
from kstate.codecs.store_types import DEFAULT_CF, StoreType
from kstate.codecs.timestamped import encode_value_and_timestamp
from kstate.stores.api import Backend, TopicPartition
from kstate.stores.factory import open_bytes_store, open_kv_store

pytestmark = pytest.mark.benchmark(timer=time.perf_counter)

N = 2_000
ROUNDS = int(os.environ.get("KSTATE_BENCH_KAFKA_ROUNDS", "30"))
PY_WARMUP = 2
#: Each side's rounds are cut into this many blocks, alternating between the sides.
BLOCKS = 3
TP = TopicPartition("bench-changelog", 0)
MINUTE = 60_000
HOUR = 60 * MINUTE
HISTORY_MS = 60_000
SEGMENT_MS = 20_000  # VER-23's default for 60 s of history, given explicitly to both sides
STEP_MS = 10
VERSIONED_KEYS = 200
REPORT = Path(__file__).resolve().parents[1] / "reports" / "bench" / "kafka-side-by-side.md"

_rng = random.Random(23)
KEYS = [_rng.randbytes(16) for _ in range(N)]
RAW_VALUES = [_rng.randbytes(100) for _ in range(N)]
TS_VALUES = [encode_value_and_timestamp(v, 1_700_000_000_000 + i) for i, v in enumerate(RAW_VALUES)]
SORTED = sorted(KEYS)
RANGES = [(SORTED[i], SORTED[i + 19]) for i in range(0, N, 20)]
#: Window rows: 50 keys x 40 windows a second apart, key i's windows starting at (i % 5) minutes.
WINDOW_KEYS = [_rng.randbytes(16) for _ in range(50)]
WINDOW_ROWS = [(WINDOW_KEYS[i], (i % 5) * MINUTE + w * 1000, RAW_VALUES[i * 40 + w])
               for i in range(50) for w in range(40)]
WINDOW_FETCHES = [(k, (i % 5) * MINUTE, (i % 5) * MINUTE + 39_000) for i, k in enumerate(WINDOW_KEYS)]
#: fetchAll over 10 s of one minute: the 10 keys of that minute x 10 windows.
FETCH_ALL = [(m * MINUTE + s * 1000, m * MINUTE + s * 1000 + 9_000) for m in range(5) for s in (0, 10, 20, 30)]
#: One-byte prefixes: about 2 000 / 256 keys each.
PREFIXES = [bytes([p]) for p in range(100)]
ALL_SCANS = 1
#: Sessions: 100 keys x 20 sessions of 10 s, 30 s apart.
SESSION_KEYS = [_rng.randbytes(16) for _ in range(100)]
SESSIONS = [(SESSION_KEYS[i], s * 30_000, s * 30_000 + 10_000, RAW_VALUES[i * 20 + s])
            for i in range(100) for s in range(20)]
SESSION_FINDS = [(k, 0, 20 * 30_000) for k in SESSION_KEYS]
VKEYS = [KEYS[i % VERSIONED_KEYS] for i in range(N)]
VTIMES = [1_000_000 + (i + 1) * STEP_MS for i in range(N)]
VSHIFT = N * STEP_MS  # a round's puts continue where the last stopped: in order
VFILL_ROUNDS = 5
V_END = 1_000_000 + VFILL_ROUNDS * VSHIFT
AS_OF = [random.Random(i).randrange(V_END - HISTORY_MS, V_END) for i in range(N)]
V_LOOKUPS = list(zip(VKEYS, AS_OF, strict=True))

#: (label, kind of ``bench.run``); the order of the report.
OPERATIONS = [("put (+ commit)", "put"), ("get", "get"), ("range", "range"), ("prefix scan", "prefix_scan"),
              ("all", "all"), ("window put (+ commit)", "window_put"), ("window fetch", "window_fetch"),
              ("window backward fetch", "window_fetch_backward"), ("window fetchAll", "window_fetch_all"),
              ("findSessions", "find_sessions"), ("backwardFindSessions", "find_sessions_backward"),
              ("timestamped put (+ commit)", "timestamped_put"), ("versioned put (+ commit)", "versioned_put"),
              ("versioned get as of", "versioned_get_as_of"),
              ("versioned get latest (uncached)", "versioned_get_latest")]


#: operation kind -> (Kafka, kstate, floor); a side absent where it could not run (``None``: not offered; puts
#: have no floor).
RESULTS: dict[str, tuple[Side | None, Side | None, Side | None]] = {}
NOTES: list[str] = []


KafkaBlock = Callable[[int, int, int], Side]


def _kafka(kafka: KafkaSide, handle: str, kind: str, **inputs: Any) -> KafkaBlock:
    """Kafka's side of an operation: ``(first round, warm-up rounds, timed rounds) -> Side``, timed in the JVM."""
    return lambda first, warmup, rounds: kafka.run(handle, kind, first_round=first, warmup=warmup, rounds=rounds,
                                                   **inputs)


def _py_block(workload: Callable[[int], int], first: int, warmup: int, rounds: int, benchmark: Any = None) -> Side:
    """kstate's rounds ``first`` on: ``warmup`` untimed, then ``rounds`` timed on the wall clock (through
    pytest-benchmark where given, which records them in its own table too)."""
    nanos: list[int] = []
    found = [0]
    counter = iter(range(first, first + 10 * (warmup + rounds) + 10))

    def one() -> None:
        r = next(counter)
        start = time.perf_counter_ns()
        found[0] = workload(r)
        if r >= first + warmup:
            nanos.append(time.perf_counter_ns() - start)

    if benchmark is not None:
        benchmark.pedantic(one, rounds=rounds, iterations=1, warmup_rounds=warmup)
    while len(nanos) < rounds:  # no benchmark, or pytest-benchmark disabled (it ran one round)
        one()
    return Side(nanos[:rounds], found[0])


def _paired(kafka_block: KafkaBlock | None, workload: Callable[[int], int], benchmark: Any = None,
            floor: Callable[[int], int] | None = None) -> tuple[Side | None, Side, Side | None]:
    """Every side of an operation in ``BLOCKS`` blocks that alternate (Kafka's, the raw floor's, then kstate's), so
    that all see the machine's load of the same minutes; the first block of each side warms up."""
    per_block = max(1, ROUNDS // BLOCKS)
    k_nanos: list[int] = []
    p_nanos: list[int] = []
    f_nanos: list[int] = []
    k_found = p_found = f_found = k_next = p_next = f_next = 0
    for block in range(BLOCKS):
        if kafka_block is not None:
            warmup = JVM_WARMUP if block == 0 else 0
            side = kafka_block(k_next, warmup, per_block)
            k_nanos += side.nanos
            k_found, k_next = side.found, k_next + warmup + per_block
        warmup = PY_WARMUP if block == 0 else 0
        if floor is not None:
            raw = _py_block(floor, f_next, warmup, per_block)
            f_nanos += raw.nanos
            f_found, f_next = raw.found, f_next + warmup + per_block
        ours = _py_block(workload, p_next, warmup, per_block, benchmark if block == 0 else None)
        p_nanos += ours.nanos
        p_found, p_next = ours.found, p_next + warmup + per_block
    return ((None if kafka_block is None else Side(k_nanos, k_found)), Side(p_nanos, p_found),
            None if floor is None else Side(f_nanos, f_found))


def _record(kind: str, kafka: Side | None, ours: Side | None, floor: Side | None = None) -> None:
    RESULTS[kind] = (kafka, ours, floor)
    for side, label in ((kafka, "Kafka"), (floor, "the floor")):
        if side is not None and ours is not None and side.found != ours.found:
            NOTES.append(f"{kind}: {label} read {side.found} entries a round, kstate {ours.found}")


def _put_round(store: Any, keys: list[bytes], values: list[bytes]) -> Callable[[int], int]:
    """A round of key-value puts: every key put with its value, in order, then a commit."""
    def put(_: int) -> int:
        p = store.put
        for key, value in zip(keys, values, strict=True):
            p(key, value)
        store.commit({TP: 1})
        return 0

    return put


def _forward_count(db: Any, lower: bytes, upper: bytes) -> int:
    """The floor of a bounded forward scan: seek ``lower``, step until a key passes ``upper``."""
    found = 0
    for key, _ in db.items(from_key=lower):
        if key > upper:
            break
        found += 1
    return found


def _kv_store(tmp_path_factory: pytest.TempPathFactory, store_type: StoreType) -> Any:
    return open_kv_store(store_type, Backend.ROCKSDB, name="bench", state_dir=tmp_path_factory.mktemp(store_type.value))


def test_key_value(benchmark: Any, kafka: KafkaSide, tmp_path_factory: pytest.TempPathFactory) -> None:
    """put (+ commit), get, range, prefix scan and all() on a timestamped key-value store; put's round fills the
    store for the reads; each read beside its raw floor."""
    k_put = _kafka(kafka, kafka.open("timestamped_kv"), "put", keys=hexes(KEYS), values=hexes(TS_VALUES), commit=True)
    # The reads go to stores written once on each side (the put rounds leave each key's overwritten versions in
    # the memtable, as many as the side ran rounds).
    reads = kafka.open("timestamped_kv")
    kafka.run(reads, "put", warmup=0, rounds=1, keys=hexes(KEYS), values=hexes(TS_VALUES), commit=True)
    k_get = _kafka(kafka, reads, "get", keys=hexes(KEYS))
    k_range = _kafka(kafka, reads, "range", keys=hexes([a for a, _ in RANGES]), to_keys=hexes([b for _, b in RANGES]))
    k_prefix = _kafka(kafka, reads, "prefix_scan", keys=hexes(PREFIXES))
    k_all = _kafka(kafka, reads, "all", keys=hexes(KEYS[:ALL_SCANS]))
    store = _kv_store(tmp_path_factory, StoreType.TIMESTAMPED_KV)
    read_store = _kv_store(tmp_path_factory, StoreType.TIMESTAMPED_KV)
    for key, value in zip(KEYS, TS_VALUES, strict=True):
        read_store.put(key, value)
    read_store.commit({TP: 1})
    raw = raw_copy(tmp_path_factory, "kv-floor", list(zip(KEYS, TS_VALUES, strict=True)))

    put = _put_round(store, KEYS, TS_VALUES)

    def get(_: int) -> int:
        g = read_store.get
        return sum(g(key) is not None for key in KEYS)

    def get_floor(_: int) -> int:
        g = raw.get
        return sum(g(key) is not None for key in KEYS)

    def ranges(_: int) -> int:
        found = 0
        for low, high in RANGES:
            with read_store.range(low, high) as iterator:
                found += sum(1 for _ in iterator)
        return found

    def ranges_floor(_: int) -> int:
        return sum(_forward_count(raw, low, high) for low, high in RANGES)

    def prefixes(_: int) -> int:
        found = 0
        for prefix in PREFIXES:
            with read_store.prefix_scan(prefix) as iterator:
                found += sum(1 for _ in iterator)
        return found

    def prefixes_floor(_: int) -> int:
        return raw_prefix_count(raw, PREFIXES)

    def all_rows(_: int) -> int:
        found = 0
        for _ in range(ALL_SCANS):
            with read_store.all() as iterator:
                found += sum(1 for _ in iterator)
        return found

    def all_floor(_: int) -> int:
        return sum(sum(1 for _ in raw.items()) for _ in range(ALL_SCANS))

    benchmark.group = "kafka side by side: put"
    _record("put", *_paired(k_put, put, benchmark))
    # The reads are timed here, outside pytest-benchmark's table (one benchmark per test).
    _record("get", *_paired(k_get, get, floor=get_floor))
    _record("range", *_paired(k_range, ranges, floor=ranges_floor))
    _record("prefix_scan", *_paired(k_prefix, prefixes, floor=prefixes_floor))
    _record("all", *_paired(k_all, all_rows, floor=all_floor))
    store.close()
    read_store.close()
    raw.close()


_WINDOW_SUFFIX = struct.Struct(">qi")  # WIN-4: [key][window start int64][seqnum int32]
_WINDOW_START = struct.Struct(">q")


def test_window(benchmark: Any, kafka: KafkaSide, tmp_path_factory: pytest.TempPathFactory) -> None:
    """window put (+ commit), window fetch forward and backward, and fetchAll over one-minute segments (the same
    rows on both sides), each read beside its raw floor."""
    options = {"retention_ms": HOUR, "window_size_ms": 1000, "segment_interval_ms": MINUTE}
    rows = {"keys": hexes([k for k, _, _ in WINDOW_ROWS]), "values": hexes([v for _, _, v in WINDOW_ROWS]),
            "timestamps": [t for _, t, _ in WINDOW_ROWS], "commit": True}
    k_put = _kafka(kafka, kafka.open("window", options), "window_put", **rows)
    reads = kafka.open("window", options)  # written once, as the key-value reads
    kafka.run(reads, "window_put", warmup=0, rounds=1, **rows)
    fetch_inputs = {"keys": hexes([k for k, _, _ in WINDOW_FETCHES]), "timestamps": [f for _, f, _ in WINDOW_FETCHES],
                    "to_times": [t for _, _, t in WINDOW_FETCHES]}
    k_fetch = _kafka(kafka, reads, "window_fetch", **fetch_inputs)
    k_backward = _kafka(kafka, reads, "window_fetch", backward=True, **fetch_inputs)
    k_fetch_all = _kafka(kafka, reads, "window_fetch_all", keys=hexes(KEYS[:len(FETCH_ALL)]),
                         timestamps=[f for f, _ in FETCH_ALL], to_times=[t for _, t in FETCH_ALL])
    store, read_store = (open_bytes_store(StoreType.WINDOW, Backend.ROCKSDB, name="bench", options=options,
                                          state_dir=tmp_path_factory.mktemp("window")) for _ in range(2))
    for key, start, value in WINDOW_ROWS:
        read_store.put(key, value, start)
    read_store.commit({TP: 1})
    floors = segment_floors(tmp_path_factory, "window-floor",
                            [(t, k + _WINDOW_SUFFIX.pack(t, 0), v) for k, t, v in WINDOW_ROWS], MINUTE)

    def put(_: int) -> int:
        p = store.put
        for key, start, value in WINDOW_ROWS:
            p(key, value, start)
        store.commit({TP: 1})
        return 0

    def fetch(_: int) -> int:
        f = read_store.fetch_range
        return sum(len(f(key, low, high)) for key, low, high in WINDOW_FETCHES)

    def backward_fetch(_: int) -> int:
        f = read_store.fetch_range
        return sum(len(f(key, low, high, True)) for key, low, high in WINDOW_FETCHES)

    def fetch_floor(_: int) -> int:
        # The key's rows of the fetch's segment, each answered as the fetch answers it (bench_tools.raw_window_fetch).
        return sum(len(raw_window_fetch(floors[low // MINUTE], key, low, high, False)) for key, low, high in WINDOW_FETCHES)

    def backward_floor(_: int) -> int:
        return sum(len(raw_window_fetch(floors[low // MINUTE], key, low, high, True)) for key, low, high in WINDOW_FETCHES)

    def fetch_all(_: int) -> int:
        f = read_store.fetch_all
        return sum(len(f(low, high)) for low, high in FETCH_ALL)

    def fetch_all_floor(_: int) -> int:
        # Every row of the range's segments, kept by its window start (read with struct, the key split off).
        found = 0
        unpack = _WINDOW_START.unpack_from
        for low, high in FETCH_ALL:
            for sid in range(low // MINUTE, high // MINUTE + 1):
                for row_key, value in floors[sid].items():
                    end = len(row_key) - 12
                    start = unpack(row_key, end)[0]
                    if low <= start <= high:
                        row = (row_key[:end], start, value)
                        found += row is not None
        return found

    benchmark.group = "kafka side by side: window"
    _record("window_put", *_paired(k_put, put, benchmark))
    _record("window_fetch", *_paired(k_fetch, fetch, floor=fetch_floor))
    _record("window_fetch_backward", *_paired(k_backward, backward_fetch, floor=backward_floor))
    _record("window_fetch_all", *_paired(k_fetch_all, fetch_all, floor=fetch_all_floor))
    store.close()
    read_store.close()
    for db in floors.values():
        db.close()


def test_find_sessions(benchmark: Any, kafka: KafkaSide, tmp_path_factory: pytest.TempPathFactory) -> None:
    """findSessions and backwardFindSessions of each key's 20 sessions beside their raw floor; Kafka's side where
    its testee builds session stores."""
    store = open_bytes_store(StoreType.SESSION, Backend.ROCKSDB, name="bench",
                             state_dir=tmp_path_factory.mktemp("session"), options={"retention_ms": HOUR})
    for key, start, end, value in SESSIONS:
        store.put(key, start, end, value)
    store.commit({TP: 1})
    interval = session_keys.default_segment_interval(HOUR)
    floors = segment_floors(tmp_path_factory, "session-floor",
                            [(e, k + SESSION_SUFFIX.pack(e, s), v) for k, s, e, v in SESSIONS], interval)

    def finder(backward: bool) -> Callable[[int], int]:
        def find(_: int) -> int:
            found = 0
            for key, earliest_end, latest_start in SESSION_FINDS:
                with store.find_sessions(key, earliest_end, latest_start, backward=backward) as iterator:
                    found += sum(1 for _ in iterator)
            return found

        return find

    def floor(backward: bool) -> Callable[[int], int]:
        # The key's rows of every segment from segmentId(earliest end) on, kept by length, end and start.
        sids = sorted(floors, reverse=backward)

        def find(_: int) -> int:
            found = 0
            for key, earliest_end, latest_start in SESSION_FINDS:
                first = earliest_end // interval
                rows = raw_find_sessions(floors, [sid for sid in sids if sid >= first], key, earliest_end,
                                         latest_start, backward)
                found += sum(value is not None for _, _, value in rows)
            return found

        return find

    k_find: KafkaBlock | None = None
    k_backward: KafkaBlock | None = None
    if "session" in kafka.store_types:
        handle = kafka.open("session", {"retention_ms": HOUR})
        kafka.run(handle, "session_put", warmup=0, rounds=1, keys=hexes([k for k, _, _, _ in SESSIONS]),
                  values=hexes([v for _, _, _, v in SESSIONS]), timestamps=[s for _, s, _, _ in SESSIONS],
                  to_times=[e for _, _, e, _ in SESSIONS], commit=True)
        finds = {"keys": hexes([k for k, _, _ in SESSION_FINDS]), "timestamps": [e for _, e, _ in SESSION_FINDS],
                 "to_times": [s for _, _, s in SESSION_FINDS]}
        k_find = _kafka(kafka, handle, "find_sessions", **finds)
        k_backward = _kafka(kafka, handle, "find_sessions", backward=True, **finds)
    else:
        NOTES.append(f"findSessions: the Kafka {KAFKA_VERSION} testee builds no session store yet (store.capabilities)")
    benchmark.group = "kafka side by side: session"
    _record("find_sessions", *_paired(k_find, finder(False), benchmark, floor=floor(False)))
    _record("find_sessions_backward", *_paired(k_backward, finder(True), floor=floor(True)))
    store.close()
    for db in floors.values():
        db.close()


def test_versioned(benchmark: Any, kafka: KafkaSide, tmp_path_factory: pytest.TempPathFactory) -> None:
    """versioned put in order (+ commit) against a timestamped put of the same keys, on each side; get as of and
    get latest (uncached) beside their raw floors."""
    options = {"history_retention_ms": HISTORY_MS, "segment_interval_ms": SEGMENT_MS}
    ts_values = [encode_value_and_timestamp(v, t) for v, t in zip(RAW_VALUES, VTIMES, strict=True)]
    k_ts = _kafka(kafka, kafka.open("timestamped_kv"), "put", keys=hexes(VKEYS), values=hexes(ts_values), commit=True)
    k_put = _kafka(kafka, kafka.open("versioned_kv", options), "versioned_put", keys=hexes(VKEYS),
                   values=hexes(RAW_VALUES), timestamps=VTIMES, round_shift_ms=VSHIFT, commit=True)
    reads = kafka.open("versioned_kv", options)
    kafka.run(reads, "versioned_put", warmup=0, rounds=VFILL_ROUNDS, keys=hexes(VKEYS), values=hexes(RAW_VALUES),
              timestamps=VTIMES, round_shift_ms=VSHIFT, commit=True)
    k_get = _kafka(kafka, reads, "versioned_get", keys=hexes(VKEYS), timestamps=AS_OF)
    k_latest = _kafka(kafka, reads, "versioned_get", keys=hexes(VKEYS))

    timestamped = _kv_store(tmp_path_factory, StoreType.TIMESTAMPED_KV)
    versioned = open_bytes_store(StoreType.VERSIONED_KV, Backend.ROCKSDB, name="bench",
                                 state_dir=tmp_path_factory.mktemp("versioned"), options=options)
    read_dir = tmp_path_factory.mktemp("versioned-read")
    read_store = open_bytes_store(StoreType.VERSIONED_KV, Backend.ROCKSDB, name="bench", state_dir=read_dir,
                                  options=options)

    ts_put = _put_round(timestamped, VKEYS, ts_values)

    def putter(store: Any) -> Callable[[int], int]:
        def put(r: int) -> int:
            p, shift = store.put, r * VSHIFT
            for key, value, t in zip(VKEYS, RAW_VALUES, VTIMES, strict=True):
                p(key, value, t + shift)
            store.commit({TP: 1})
            return 0

        return put

    fill = putter(read_store)
    for r in range(VFILL_ROUNDS):
        fill(r)
    raw = raw_copy(tmp_path_factory, "versioned-floor", read_store.column_family_rows()[DEFAULT_CF])
    raw.flush()  # as the reopened store's rows are: in a table file
    live_ids = sorted(read_store.segment_ids(), reverse=True)
    observed = read_store.observed_stream_time
    # Reopened: kstate's latest-value cache, filled by puts, starts empty (reads do not fill it).
    read_store.close()
    read_store = open_bytes_store(StoreType.VERSIONED_KV, Backend.ROCKSDB, name="bench", state_dir=read_dir,
                                  options=options)

    def get_as_of(_: int) -> int:
        g = read_store.get
        return sum(g(key, as_of) is not None for key, as_of in zip(VKEYS, AS_OF, strict=True))

    def get_as_of_floor(_: int) -> int:
        return raw_versioned_get_as_of(raw, V_LOOKUPS, live_ids, observed, HISTORY_MS, SEGMENT_MS)

    def get_latest(_: int) -> int:
        g = read_store.get
        return sum(g(key) is not None for key in VKEYS)

    def get_latest_floor(_: int) -> int:
        get, prefix = raw.get, versioned_codec.LATEST_VALUE_PREFIX
        return sum(get(prefix + key) is not None for key in VKEYS)

    benchmark.group = "kafka side by side: versioned"
    _record("versioned_put", *_paired(k_put, putter(versioned), benchmark))
    _record("timestamped_put", *_paired(k_ts, ts_put))
    _record("versioned_get_as_of", *_paired(k_get, get_as_of, floor=get_as_of_floor))
    _record("versioned_get_latest", *_paired(k_latest, get_latest, floor=get_latest_floor))
    for store in (timestamped, versioned, read_store):
        store.close()
    raw.close()
    gc.collect()


def _us(nanos: float, ops: int) -> str:
    return f"{nanos / ops / 1e3:.2f}"


OPS_PER_ROUND = {"put": N, "get": N, "range": len(RANGES), "prefix_scan": len(PREFIXES), "all": ALL_SCANS,
                 "window_put": len(WINDOW_ROWS), "window_fetch": len(WINDOW_FETCHES),
                 "window_fetch_backward": len(WINDOW_FETCHES), "window_fetch_all": len(FETCH_ALL),
                 "find_sessions": len(SESSION_FINDS), "find_sessions_backward": len(SESSION_FINDS),
                 "timestamped_put": N, "versioned_put": N, "versioned_get_as_of": N, "versioned_get_latest": N}


def report_lines() -> list[str]:
    """The Markdown report of what ran: one row per operation, then the versioned put target."""
    lines = [f"## kstate beside Apache Kafka {KAFKA_VERSION}'s stores ({time.strftime('%Y-%m-%d %H:%M')}, "
             f"commit {git_commit()})", "",
             f"Wall clock, fastest of {BLOCKS * max(1, ROUNDS // BLOCKS)} rounds (median in brackets) in {BLOCKS} "
             f"blocks alternating between the sides; Kafka timed inside its JVM after {JVM_WARMUP} warm-up rounds; floor = the "
             f"same loop over the same rows through raw rocksdict; kstate/Kafka = Kafka's time / kstate's, "
             f"kstate/floor = the floor's time / kstate's (higher is better); {machine_load()} at the end of the run.",
             "", "| operation | ops/round | Kafka µs/op | floor µs/op | kstate µs/op | kstate/Kafka | kstate/floor |",
             "|---|---:|---:|---:|---:|---:|---:|"]

    def text(side: Side | None, ops: int) -> str:
        return "n/a" if side is None else f"{_us(side.best, ops)} ({_us(side.median, ops)})"

    def ratio(side: Side | None, ours: Side | None) -> str:
        return "n/a" if side is None or ours is None else f"{side.best / ours.best:.2f}"

    for label, kind in OPERATIONS:
        if kind not in RESULTS:
            continue
        k, ours, floor = RESULTS[kind]
        ops = OPS_PER_ROUND[kind]
        lines.append(f"| {label} | {ops} | {text(k, ops)} | {text(floor, ops)} | {text(ours, ops)} | "
                     f"{ratio(k, ours)} | {ratio(floor, ours)} |")
    k_v, o_v, _ = RESULTS.get("versioned_put", (None, None, None))
    k_t, o_t, _ = RESULTS.get("timestamped_put", (None, None, None))
    if k_v and o_v and k_t and o_t:
        kafka_ratio, ours_ratio = k_t.best / k_v.best, o_t.best / o_v.best
        verdict = "meets target" if ours_ratio >= kafka_ratio else "BELOW TARGET"
        lines += ["", f"Versioned put / timestamped put throughput (in order, {VERSIONED_KEYS} keys, "
                      f"{HISTORY_MS // 1000} s history): Kafka {kafka_ratio:.2f}, kstate {ours_ratio:.2f}; "
                      f"target: Kafka's ratio, {verdict}."]
    lines += [f"- {note}" for note in NOTES]
    return lines


@pytest.fixture(scope="module", autouse=True)
def side_by_side_report(request: pytest.FixtureRequest) -> Iterator[None]:
    """After the module: the Markdown report, printed and written to ``reports/bench/``."""
    yield
    if not RESULTS:
        return
    lines = report_lines()
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print_report(request, ["", *lines, "", f"(written to {REPORT})"])
