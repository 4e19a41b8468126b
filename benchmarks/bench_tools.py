"""What the benchmark modules share: interleaved timing, the raw rocksdict baseline, and the printed report."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import rocksdict

from kstate.stores.engine import rocksdb_options


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


def print_report(request: pytest.FixtureRequest, lines: list[str]) -> None:
    """Print ``lines`` past pytest's output capture, so the ratios show in a normal run."""
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
        print("\n".join(lines), flush=True)
