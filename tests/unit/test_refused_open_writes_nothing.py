"""A refused open writes nothing, not even rocksdict's sidecar (KV-23; issue 32 A2).

A directory Kafka wrote has no ``rocksdict-config.json``; rocksdict writes one at every open, a read-only one
included, so each case removes it first, as a Kafka-written directory would be, and compares every file after.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from kstate.ops import call

rules = pytest.mark.rules
WINDOW_OPTIONS = {"options": {"retention_ms": 1000, "window_size_ms": 10, "segment_interval_ms": 500}}


def _tree(root: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for directory, dirs, files in os.walk(root):
        for name in files:
            path = Path(directory, name)
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
        for name in dirs:
            out[str(Path(directory, name).relative_to(root)) + "/"] = ""
    return out


def _open(state_dir: Path, store_type: str, **extra: Any) -> dict[str, Any]:
    return call("store.open", {"store_type": store_type, "backend": "rocksdb", "name": "s", "state_dir": str(state_dir),
                               "application_id": "app", "task_id": "0_0", **extra})


def _written(state_dir: Path, store_type: str, op: str, payload: dict[str, Any], offset: int, **extra: Any) -> None:
    handle = _open(state_dir, store_type, **extra)["handle"]
    assert "error" not in call(op, {"handle": handle, **payload})
    call("store.commit", {"handle": handle, "changelog_offsets": [["app-s-changelog", 0, offset]]})
    call("store.close", {"handle": handle})


def _half_migrated_kv(state_dir: Path) -> None:
    """Rows in both ``default`` and ``keyValueWithTimestamp``: a plain store upgraded half way (UPG-7)."""
    _written(state_dir, "kv", "store.put", {"key": "61", "value": "01"}, 1)
    _written(state_dir, "timestamped_kv", "store.put", {"key": "62", "value": "000000000000000102"}, 2)


def _window(store_type: str, value: str) -> Any:
    def write(state_dir: Path) -> None:
        _written(state_dir, store_type, "window_store.put", {"key": "61", "value": value, "window_start": 1}, 1,
                 **WINDOW_OPTIONS)
    return write


CASES = {
    "half_migrated_kv_as_headers": (_half_migrated_kv, "timestamped_kv_with_headers", {}),
    "timestamped_window_as_plain": (_window("timestamped_window", "000000000000000102"), "window", WINDOW_OPTIONS),
    "headers_window_as_plain": (_window("timestamped_window_with_headers", "00000000000000000102"), "window",
                                WINDOW_OPTIONS),
}


@rules("KV-23", "UPG-7", "LAY-8", "LAY-14")
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_refused_open_leaves_every_file_as_it_was(tmp_path: Path, case: str) -> None:
    write, opened_as, extra = CASES[case]
    write(tmp_path)
    for sidecar in tmp_path.rglob("rocksdict-config.json"):
        sidecar.unlink()  # as Kafka leaves the directory
    before = _tree(tmp_path)
    out = _open(tmp_path, opened_as, **extra)
    assert "error" in out, f"{case}: the open was accepted: {out}"
    after = _tree(tmp_path)
    assert sorted(set(after) ^ set(before)) == [], f"{case}: the refused open added or removed files"
    assert after == before, f"{case}: the refused open changed files"
