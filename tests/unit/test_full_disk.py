"""A full disk and a failing disk under every store family (spec/offsets.md OFF-23; issue 32 section C).

Each test runs its store on a small tmpfs of its own (``mount -t tmpfs -o size=...``; skipped with the reason
where mounting is not allowed). A :class:`Disk` counts the writes of the store's engine and files, and at the
chosen write fills the tmpfs to the brim just before it (ENOSPC from then on, for real), or makes that one write
fail with ``EIO``: device-mapper (``dm-error``) is not in this kernel, so the failure is injected where the
write enters RocksDB or the file system, as the failed write of a faulty device would be seen there.

After the fault the disk is freed, the store is closed (or abandoned), reopened, and checked: the committed
offset is never ahead of the data on disk (every record at or below it is there, OFF-23), and nothing
acknowledged is lost (every record of a commit that returned is there). A refused or failed operation raises
a typed error (:class:`kstate.errors.KStateError`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kstate.codecs.store_types import StoreType
from kstate.errors import KStateError
from kstate.stores import engine as engine_module
from kstate.stores import segments as segments_module
from kstate.stores.api import Backend, TopicPartition
from kstate.stores.engine import RocksDBEngine
from kstate.stores.factory import open_bytes_store

#: The tmpfs each test gets: room for a few segment databases and their logs, small enough to fill at once.
TMPFS_SIZE = "24m"
TP = TopicPartition("app-s-changelog", 0)
#: Values large enough that a commit's WAL append needs fresh pages (a tmpfs page of slack absorbs small ones).
PAYLOAD = b"v" * 1500


# --- the tmpfs and the disk that fails ------------------------------------------------------------------------


def _mount_tmpfs(target: Path) -> str | None:
    """Mount a tmpfs of TMPFS_SIZE at ``target``; None when done, else why it cannot be."""
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    target.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs", str(target)],
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        return f"mount -t tmpfs is not allowed here: {result.stderr.strip() or result.returncode}"
    return None


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A fresh, empty tmpfs of TMPFS_SIZE, unmounted again after the test."""
    target = Path("/tmp") / f"kstate-full-disk-{uuid.uuid4().hex[:12]}"
    reason = _mount_tmpfs(target)
    if reason is not None:
        with contextlib.suppress(OSError):
            target.rmdir()
        pytest.skip(reason)
    try:
        yield target
    finally:
        subprocess.run(["umount", "-l", str(target)], check=False, capture_output=True)
        with contextlib.suppress(OSError):
            target.rmdir()


@dataclass
class Disk:
    """Counts the writes that reach the disk and fails the ``fail_at``-th (1-based) and, for ENOSPC, every
    later one: the tmpfs is filled to the brim just before it. ``kind`` is ``"ENOSPC"`` or ``"EIO"``."""

    root: Path
    fail_at: int | None = None
    kind: str = "ENOSPC"
    count: int = 0
    failed: bool = False
    ballast: list[Path] = field(default_factory=list)

    def before_write(self, what: str) -> None:
        self.count += 1
        if self.fail_at is None or self.count != self.fail_at:
            return
        self.failed = True
        if self.kind == "ENOSPC":
            self.fill()
        else:
            raise _eio(what)

    def fill(self) -> None:
        """Write ballast until the tmpfs refuses one byte more."""
        path = self.root / f"ballast-{len(self.ballast)}"
        self.ballast.append(path)
        with open(path, "ab", buffering=0) as out:
            for chunk in (1 << 20, 1 << 16, 1 << 12, 1):
                with contextlib.suppress(OSError):
                    while True:
                        out.write(b"\0" * chunk)

    def free(self) -> None:
        self.fail_at = None
        for path in self.ballast:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        self.ballast.clear()


def _eio(what: str) -> Exception:
    # rocksdict's form of a failed native write: a bare Exception with RocksDB's status text.
    return Exception(f"IO error: While {what}: Input/output error (injected EIO)")


@contextlib.contextmanager
def failing_disk(disk: Disk, monkeypatch: pytest.MonkeyPatch) -> Iterator[Disk]:
    """Route every write of the engines and of the kit's own files through ``disk``."""
    def hooked(owner: Any, name: str, what: str, raw_eio: bool) -> None:
        original = getattr(owner, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                disk.before_write(what)
            except Exception as exc:
                if not raw_eio:
                    raise OSError(errno.EIO, str(exc)) from None
                raise
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, wrapper)

    with monkeypatch.context() as patch:
        monkeypatch = patch
        hooked(RocksDBEngine, "write", "writing a batch", True)
        hooked(RocksDBEngine, "flush", "flushing", True)
        hooked(RocksDBEngine, "create_column_family", "creating a column family", True)
        hooked(segments_module, "write_segment_list", "writing the segment list", False)
        yield disk


# --- one family's store, its records and its check ---------------------------------------------------------------


@dataclass(frozen=True)
class Family:
    """How to open, write, read and restore one store type for these tests."""

    store_type: StoreType
    options: dict[str, Any] | None
    write: Callable[[Any, int, int], None]
    present: Callable[[Any], set[int]]


def _value(store_type: StoreType) -> bytes:
    if store_type in (StoreType.TIMESTAMPED_KV, StoreType.TIMESTAMPED_WINDOW):
        return bytes(8) + PAYLOAD
    if store_type in (StoreType.TIMESTAMPED_KV_WITH_HEADERS, StoreType.TIMESTAMPED_WINDOW_WITH_HEADERS,
                      StoreType.SESSION_WITH_HEADERS):
        return b"\x00" + (b"" if store_type is StoreType.SESSION_WITH_HEADERS else bytes(8)) + PAYLOAD
    return PAYLOAD


def _key(i: int) -> bytes:
    return b"k%05d" % i


#: Window and session records spread over segments of 1000 ms: record i lands in segment (i // 20) % 4.
def _time(i: int) -> int:
    return ((i // 20) % 4) * 1000 + i % 20


def _window_write(store: Any, i: int, time: int) -> None:
    store.put(_key(i), _value(store.store_type), time)


def _window_present(store: Any) -> set[int]:
    return {int(key[1:]) for key, _, _ in store.all()}


def _session_write(store: Any, i: int, time: int) -> None:
    store.put(_key(i), time, time, _value(store.store_type))


def _session_present(store: Any) -> set[int]:
    return {int(entry[0][1:]) for entry in store.all()}


def _kv_write(store: Any, i: int, time: int) -> None:
    store.put(_key(i), _value(store.store_type))


def _kv_present(store: Any) -> set[int]:
    return {int(key[1:]) for key, _ in store.all()}


WINDOW_OPTIONS = {"retention_ms": 100_000, "window_size_ms": 10, "segment_interval_ms": 1000}
SESSION_OPTIONS = {"retention_ms": 100_000, "segment_interval_ms": 1000}

SEGMENTED = [
    Family(StoreType.WINDOW, WINDOW_OPTIONS, _window_write, _window_present),
    Family(StoreType.TIMESTAMPED_WINDOW, WINDOW_OPTIONS, _window_write, _window_present),
    Family(StoreType.TIMESTAMPED_WINDOW_WITH_HEADERS, WINDOW_OPTIONS, _window_write, _window_present),
    Family(StoreType.SESSION, SESSION_OPTIONS, _session_write, _session_present),
    Family(StoreType.SESSION_WITH_HEADERS, SESSION_OPTIONS, _session_write, _session_present),
]


def _open(family: Family, state_dir: Path, **kwargs: Any) -> Any:
    return open_bytes_store(family.store_type, Backend.ROCKSDB, name="s", state_dir=state_dir,
                            options=family.options, **kwargs)


def _reopen(family: Family, state_dir: Path) -> Any:
    """Open what the fault left: a store whose close failed is left OPEN, opened as after a crash (KV-52)."""
    try:
        return _open(family, state_dir)
    except KStateError as exc:
        if "Invalid state during store open" not in str(exc):
            raise
        return _open(family, state_dir, ignore_invalid_state=True)


def _check_durable(family: Family, state_dir: Path, acknowledged: int | None) -> tuple[int | None, set[int]]:
    """Reopen and check OFF-23: every record at or below the committed offset is on disk, and so is every
    record of the last commit that returned (``acknowledged``); answer the committed offset and the records."""
    store = _reopen(family, state_dir)
    try:
        committed = store.committed_offset(TP)
        present = family.present(store)
    finally:
        store.close()
    if committed is not None:
        missing = sorted(set(range(committed + 1)) - present)
        assert not missing, f"committed offset {committed} is ahead of its data: records {missing[:10]} missing"
    if acknowledged is not None:
        lost = sorted(set(range(acknowledged + 1)) - present)
        assert not lost, f"acknowledged records {lost[:10]} lost"
        assert committed is not None and committed >= acknowledged
    return committed, present


# --- C1: a commit that fails after the older segments took the new offset ------------------------------------------


@pytest.mark.parametrize("family", SEGMENTED, ids=lambda f: f.store_type.value)
def test_a_commit_failing_in_its_last_segment_leaves_no_offset_ahead_of_data(
        small_disk: Path, monkeypatch: pytest.MonkeyPatch, family: Family) -> None:
    """Records 0..79 committed at 79 over four segments; records 80..99 go to a new, fifth segment (the newest)
    and the disk fills just before that segment's write: the older segments must not claim offset 99 while the
    new segment's records are missing (OFF-23, WS-28, SS-23)."""
    state = small_disk / "state"
    store = _open(family, state)
    for i in range(80):
        family.write(store, i, _time(i))
    store.commit({TP: 79})
    for i in range(80, 100):
        family.write(store, i, 4000 + i)
    disk = Disk(small_disk)
    with failing_disk(disk, monkeypatch):
        newest = max(store.segment_names(), key=lambda name: int(name.rsplit(".", 1)[1]))
        original = RocksDBEngine.write

        def fill_before_newest(engine: RocksDBEngine, batch: Any) -> None:
            if engine.path.name == newest and not disk.failed:
                disk.failed = True
                disk.fill()
            original(engine, batch)

        monkeypatch.setattr(RocksDBEngine, "write", fill_before_newest)
        with pytest.raises(KStateError):
            store.commit({TP: 99})
        assert disk.failed
    disk.free()
    store.simulate_crash()  # the failed task is closed dirty
    _check_durable(family, state, acknowledged=79)
