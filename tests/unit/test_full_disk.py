"""A full disk and a failing disk under every store family (spec/offsets.md OFF-23; issue 32 section C).

Each test runs its store on a small tmpfs of its own (``mount -t tmpfs -o size=...``; skipped with the reason
where mounting is not allowed). A :class:`Disk` counts the writes of the store's engine and files, and at the
chosen write fills the tmpfs to the brim just before it (ENOSPC from then on, for real), or makes that one write
fail with ``EIO``. Device-mapper (``dm-error``) is not in this kernel (no ``/dev/mapper/control``) and a FUSE
file system would need libfuse and a binding the project does not depend on, so EIO is injected where a write
enters RocksDB (a batch, a flush, a new column family, the flush at close), as rocksdict reports a failed
native write; the kit's own files (segment lists, ``.checkpoint``) are written by Python and get ENOSPC only.

After the fault the disk is freed, the store is closed (or abandoned), reopened, and checked: the committed
offset is never ahead of the data on disk (every record at or below it is there, OFF-23), and nothing
acknowledged is lost (every record of a commit that returned is there). A refused or failed operation raises
a typed error (:class:`kstate.errors.KStateError`).
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kstate.codecs.store_types import StoreType
from kstate.errors import KStateError
from kstate.stores import offsets as offsets_module
from kstate.stores import segments as segments_module
from kstate.stores.api import Backend, TopicPartition
from kstate.stores.engine import RocksDBEngine
from kstate.stores.factory import open_bytes_store
from kstate_conformance import rules
from kstate_conformance.full_disk import small_tmpfs

TP = TopicPartition("app-s-changelog", 0)
#: Values large enough that a commit's WAL append needs fresh pages (a tmpfs page of slack absorbs small ones).
PAYLOAD = b"v" * 1500


# --- the tmpfs and the disk that fails ------------------------------------------------------------------------


@pytest.fixture
def small_disk() -> Iterator[Path]:
    """A fresh, empty tmpfs of TMPFS_SIZE (the conformance suite's, OFF-23), unmounted again after the test."""
    with small_tmpfs(pytest.skip) as target:
        yield target


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
    def hooked(patch: pytest.MonkeyPatch, owner: Any, name: str, what: str) -> None:
        original = getattr(owner, name)

        def wrapper(engine: RocksDBEngine, *args: Any, **kwargs: Any) -> Any:
            try:
                disk.before_write(what)
            except Exception as exc:
                # Where RocksDB's own call would have failed, and as the engine sees such a failure.
                raise engine._error(what, exc) from exc
            return original(engine, *args, **kwargs)

        patch.setattr(owner, name, wrapper)

    def file_write(patch: pytest.MonkeyPatch, owner: Any, name: str) -> None:
        original = getattr(owner, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if disk.kind == "ENOSPC":  # a kit's file is written by Python: EIO cannot be injected inside it
                disk.before_write(name)
            return original(*args, **kwargs)

        patch.setattr(owner, name, wrapper)

    original_close = RocksDBEngine.close

    def close(engine: RocksDBEngine) -> None:
        # A close flushes the memtables: the fill comes before it; an EIO fails that flush once released.
        try:
            disk.before_write("closing the database")
        except Exception as exc:
            original_close(engine)
            raise engine._error("closing the database", exc) from exc
        original_close(engine)

    with monkeypatch.context() as patch:
        hooked(patch, RocksDBEngine, "write", "writing a batch")
        hooked(patch, RocksDBEngine, "flush", "flushing")
        hooked(patch, RocksDBEngine, "create_column_family", "creating a column family")
        patch.setattr(RocksDBEngine, "close", close)
        file_write(patch, segments_module, "write_segment_list")
        file_write(patch, offsets_module, "write_checkpoint_file")
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


#: Window and session records spread over segments of 1000 ms: record i lands in segment (i // 20) % 2.
def _time(i: int) -> int:
    return ((i // 20) % 2) * 1000 + i % 20


def _window_write(store: Any, i: int, time: int) -> None:
    store.put(_key(i), _value(store.store_type), time)


def _window_present(store: Any) -> set[int]:
    return {int(key[1:]) for key, _, _ in store.all()}


def _session_write(store: Any, i: int, time: int) -> None:
    store.put(_key(i), time, time, _value(store.store_type))


def _session_present(store: Any) -> set[int]:
    sessions = store.fetch_range(None, None)
    try:
        return {int(session.key[1:]) for session in sessions}
    finally:
        sessions.close()


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


def _check_durable(family: Family, state_dir: Path, acknowledged: int | None,
                   offset_acknowledged: bool = True) -> tuple[int | None, set[int]]:
    """Reopen and check OFF-23: every record at or below the committed offset is on disk, and so is every
    record of the last commit that returned (``acknowledged``), whose offset is still committed unless
    ``offset_acknowledged`` is False; answer the committed offset and the records."""
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
        if offset_acknowledged:
            assert committed is not None and committed >= acknowledged, f"acknowledged offset {acknowledged} lost"
    return committed, present


# --- C1: a commit that fails after the older segments took the new offset ------------------------------------------


@rules("OFF-23", "WS-28", "SS-21")
@pytest.mark.parametrize("family", SEGMENTED, ids=lambda f: f.store_type.value)
def test_a_commit_failing_in_its_last_segment_leaves_no_offset_ahead_of_data(
        small_disk: Path, monkeypatch: pytest.MonkeyPatch, family: Family) -> None:
    """Records 0..79 committed at 79 over two segments; records 80..99 go to a new, third segment (the newest)
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


# --- every family: a fault at each write of a commit, a close, a restore and a migration ---------------------------


def _versioned_write(store: Any, i: int, time: int) -> None:
    store.put(_key(i), PAYLOAD, time)


def _versioned_present(store: Any) -> set[int]:
    return {i for i in range(RECORDS) if store.get(_key(i)) is not None}


#: Records per scenario: 0..ACKED committed first, the rest written by the operation that fails.
RECORDS = 100
ACKED = 59

FAMILIES = [
    Family(StoreType.KEY_VALUE, None, _kv_write, _kv_present),
    Family(StoreType.TIMESTAMPED_KV, None, _kv_write, _kv_present),
    Family(StoreType.TIMESTAMPED_KV_WITH_HEADERS, None, _kv_write, _kv_present),
    Family(StoreType.VERSIONED_KV, {"history_retention_ms": 100_000}, _versioned_write, _versioned_present),
    Family(StoreType.VERSIONED_KV_WITH_HEADERS, {"history_retention_ms": 100_000}, _versioned_write,
           _versioned_present),
    *SEGMENTED,
]
OPERATIONS = ["commit", "close", "restore", "migration"]
MIGRATES_CHECKPOINT = (StoreType.KEY_VALUE, StoreType.TIMESTAMPED_KV, StoreType.TIMESTAMPED_KV_WITH_HEADERS)
#: At most this many write indices per scenario, spread over the writes it makes, the first and last among them.
#: A full disk costs RocksDB about a second of waiting at each database's close (its error recovery), so
#: ENOSPC, which fails every later write too, takes fewer (CI time, issue 32).
MAX_INDICES = {"EIO": 4, "ENOSPC": 2}


def _changelog(family: Family, indices: range) -> list[Any]:
    """The changelog records of records ``indices`` as the family's logging layer writes them (CL-*, WS-22)."""
    from kstate.codecs import session_keys, window_keys
    from kstate.codecs.changelog import ChangelogRecord

    records = []
    for i in indices:
        time = _time(i) + (4000 if i > ACKED else 0)
        if "window" in family.store_type.value:
            key = window_keys.PLAIN.to_store_key(_key(i), time, 1)
        elif "session" in family.store_type.value:
            key = session_keys.PLAIN.to_store_key(_key(i), time, time)
        else:
            key = _key(i)
        records.append(ChangelogRecord(key, PAYLOAD, time))
    return records


def _write(family: Family, store: Any, indices: range) -> None:
    for i in indices:
        family.write(store, i, _time(i) + (4000 if i > ACKED else 0))


def _prepare(family: Family, operation: str, state: Path) -> Any:
    """The store before the operation, and the acknowledged records on disk: 0..ACKED committed at ACKED
    (a pre-4.3 store closed with a legacy ``.checkpoint`` for the migration; nothing for the restore)."""
    if operation == "restore":
        return _open(family, state)
    if operation == "migration":
        from kstate.storage_files import write_checkpoint_file
        from kstate.stores.factory import task_directory

        store = _open(family, state, manage_offsets=False)
        _write(family, store, range(ACKED + 1))
        store.commit({TP: ACKED})
        store.close()
        write_checkpoint_file(task_directory(state, "app", "0_0") / ".checkpoint", {(TP.topic, TP.partition): ACKED})
        return None
    store = _open(family, state)
    _write(family, store, range(ACKED + 1))
    store.commit({TP: ACKED})
    _write(family, store, range(ACKED + 1, RECORDS))
    return store


def _operate(family: Family, operation: str, state: Path, store: Any) -> tuple[Any, int | None]:
    """Run the operation; the store still open after it (None: closed), and the last offset acknowledged."""
    acknowledged: int | None = None if operation == "restore" else ACKED
    if operation == "commit":
        store.commit({TP: RECORDS - 1})
        return store, RECORDS - 1
    if operation == "close":
        store.close()
        return None, acknowledged
    if operation == "migration":
        return _open(family, state), acknowledged
    from kstate.stores.restore import restore

    done: list[int] = []

    def commit_batch(result: Any) -> None:
        store.commit({TP: result.records - 1})
        done.append(result.records - 1)

    # A commit that returned within the restore acknowledges its batch only once the restore's flush at its
    # end returned (RST-8): a failure raised here acknowledged nothing the test relies on.
    restore(store, family.store_type, _changelog(family, range(RECORDS)), batch_size=25, after_batch=commit_batch)
    return store, done[-1] if done else None


def _scenario(family: Family, operation: str, root: Path, disk: Disk, monkeypatch: pytest.MonkeyPatch) -> int:
    """One run of the operation with the disk failing at ``disk.fail_at`` (None: never); the writes it made."""
    state = root / "state"
    shutil.rmtree(state, ignore_errors=True)
    store = _prepare(family, operation, state)
    acknowledged: int | None = None if operation == "restore" else ACKED
    with failing_disk(disk, monkeypatch):
        disk.count = 0
        try:
            store, acknowledged = _operate(family, operation, state, store)
        except KStateError:
            assert disk.failed, "a typed error without a fault"
        except Exception as exc:  # the point: nothing untyped escapes
            pytest.fail(f"{operation} on {family.store_type.value} at write {disk.fail_at} ({disk.kind}): "
                        f"untyped {type(exc).__name__}: {exc}")
        else:
            if operation == "restore" and acknowledged is not None and acknowledged < RECORDS - 1:
                pytest.fail("a restore that returned without restoring every batch")
        writes, failed_at = disk.count, disk.fail_at
        if operation in ("restore", "migration"):
            disk.free()  # the close after them on a healthy disk; a commit's and a close's on the full one
        if store is not None:
            # The close after the fault, on the disk still full (ENOSPC) or healthy again (EIO): typed if it fails.
            try:
                store.close()
            except KStateError:
                assert disk.failed
            except Exception as exc:
                pytest.fail(f"close after {operation} on {family.store_type.value} at write {disk.fail_at}: "
                            f"untyped {type(exc).__name__}: {exc}")
    disk.free()
    # Only key-value stores read a legacy .checkpoint (KV-55); the others keep the data and commit no offset.
    offset_acknowledged = operation != "migration" or family.store_type in MIGRATES_CHECKPOINT
    try:
        _check_durable(family, state, acknowledged, offset_acknowledged)
    except AssertionError as exc:
        raise AssertionError(f"{operation} on {family.store_type.value}, {disk.kind} at write {failed_at} "
                             f"of {writes}: {exc}") from None
    return writes


def _indices(writes: int, most: int) -> list[int]:
    """Up to ``most`` write indices from 1 to ``writes``, the first and the last always among them."""
    if writes <= most:
        return list(range(1, writes + 1))
    step = (writes - 1) / (most - 1)
    return sorted({1 + round(step * n) for n in range(most)})


@rules("OFF-23", "OFF-4", "WS-30", "SS-21", "KV-25")
@pytest.mark.parametrize("operation", OPERATIONS)
@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.store_type.value)
def test_a_disk_failing_at_each_write_loses_nothing_acknowledged(
        small_disk: Path, monkeypatch: pytest.MonkeyPatch, family: Family, operation: str) -> None:
    """The operation once without a fault to count its writes, then with the disk full (ENOSPC, filled to the
    brim just before the write) or failing (EIO) at each write index in turn: a typed error or success, and
    after a reopen the committed offset is never ahead of the data and no acknowledged record is lost (OFF-23)."""
    writes = _scenario(family, operation, small_disk, Disk(small_disk), monkeypatch)
    assert writes > 0
    for kind in ("ENOSPC", "EIO"):
        for index in _indices(writes, MAX_INDICES[kind]):
            _scenario(family, operation, small_disk, Disk(small_disk, fail_at=index, kind=kind), monkeypatch)


# --- a failed write changes nothing the store answers ----------------------------------------------------------------


@rules("OFF-23", "KV-50", "WS-28")
@pytest.mark.parametrize("kind", ["ENOSPC", "EIO"])
@pytest.mark.parametrize("family", [FAMILIES[0], FAMILIES[3], SEGMENTED[0], SEGMENTED[4]],
                         ids=lambda f: f.store_type.value)
def test_a_commit_retried_after_a_failed_write_writes_what_the_failed_one_staged(
        small_disk: Path, monkeypatch: pytest.MonkeyPatch, family: Family, kind: str) -> None:
    """The commit of records 60..99 fails at the write of the newest database's data; the disk is freed and
    the commit retried. The failed commit answers the old offset, and the retry either writes the records with
    the offset or fails typed: it never acknowledges offset 99 without them (a failed write used to drop the
    staged writes and keep the new offsets in memory, so the retry wrote nothing and returned)."""
    state = small_disk / "state"
    store = _prepare(family, "commit", state)
    names = store.segment_names() if hasattr(store, "segment_names") else ["s"]
    newest = max(names, key=lambda name: int(name.rsplit(".", 1)[1]) if "." in name else 0)
    disk = Disk(small_disk, kind=kind)
    original = RocksDBEngine.write

    def fail_newest(engine: RocksDBEngine, batch: Any) -> None:
        if engine.path.name == newest and not disk.failed:
            disk.failed = True
            if kind == "EIO":
                raise engine._error("writing a batch", _eio("writing a batch"))
            disk.fill()
        original(engine, batch)

    with monkeypatch.context() as patch:
        patch.setattr(RocksDBEngine, "write", fail_newest)
        with pytest.raises(KStateError):
            store.commit({TP: RECORDS - 1})
    assert disk.failed
    assert store.committed_offset(TP) == ACKED, "a failed commit answers the offset it did not write"
    disk.free()
    acknowledged = ACKED
    try:
        store.commit({TP: RECORDS - 1})
        acknowledged = RECORDS - 1
    except KStateError:
        assert kind == "ENOSPC"  # RocksDB refuses every write after a failed WAL write: typed, nothing acknowledged
    with contextlib.suppress(KStateError):
        store.close()
    _check_durable(family, state, acknowledged)


@rules("OFF-23", "OFF-4", "RST-8")
@pytest.mark.parametrize("family", [SEGMENTED[0], SEGMENTED[3]], ids=lambda f: f.store_type.value)
def test_the_commits_of_a_segmented_restore_add_up_as_they_would_one_by_one(tmp_path: Path, family: Family) -> None:
    """A restore's commits are written when it ends (OFF-23), with the meaning they have one by one (OFF-4): a
    partition an earlier commit wrote keeps its offset, an empty map wipes what came before it, a null offset
    deletes; during the restore and after a reopen ``committedOffset`` answers them so."""
    from kstate.stores.restore import restore

    other = TopicPartition("app-s-changelog", 1)
    rounds: list[tuple[list[dict[TopicPartition, int | None]], int | None, int | None]] = [
        ([{TP: 24, other: 7}, {other: 9}], 24, 9),
        ([{}, {other: 3}], None, 3),
        ([{TP: 5}, {TP: None}], None, 3),
        ([{TP: 1}, {}, {TP: 2}], 2, None),
    ]
    done = 0
    for commits, expected_tp, expected_other in rounds:
        store = _open(family, tmp_path)
        records = _changelog(family, range(done, done + 5 * len(commits)))
        done += len(records)

        def commit(result: Any, store: Any = store, commits: list[dict[TopicPartition, int | None]] = commits) -> None:
            store.commit(commits[result.batches - 1])

        restore(store, family.store_type, records, batch_size=5, after_batch=commit)
        assert (store.committed_offset(TP), store.committed_offset(other)) == (expected_tp, expected_other), commits
        store.close()
        reopened = _open(family, tmp_path)
        assert (reopened.committed_offset(TP), reopened.committed_offset(other)) == (expected_tp, expected_other)
        assert family.present(reopened) == set(range(done))
        reopened.close()
