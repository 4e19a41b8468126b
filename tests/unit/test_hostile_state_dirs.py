"""A hostile or damaged state directory (issue 32 B): links, FIFOs, links to ``/dev/zero``, leftovers of the wrong
kind and names no file system holds, planted where the kit reads or writes (LAY-11, LAY-15, LAY-16, UPG-3, OFF-24).

Every probe that could hang (a FIFO), exhaust memory or fill a disk (``/dev/zero``) runs in a child process with
a timeout, an address-space limit and a file-size limit, so a regression fails the test instead of hanging the run
or filling the shared tmpfs. Every probe asserts a typed kstate error (or a report), and nothing written outside.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kstate import ops
from kstate.codecs.store_types import StoreType
from kstate.errors import InvalidArgumentError, KStateError
from kstate.storage_files import directory_digest
from kstate.store_dump import DatabaseReadError, read_database
from kstate.stores.api import Backend, StoreCorruptedError, StoreStorageError, TopicPartition
from kstate.stores.factory import open_bytes_store, wipe_store

T = StoreType
MINUTE = 60_000
TP = TopicPartition("app-s-changelog", 0)
SEGMENTED = [T.WINDOW, T.SESSION]
#: What a child probe may use: enough for Python, RocksDB and the kit; far below what /dev/zero would take.
PROBE_MEMORY = 3 << 30
PROBE_FILE_SIZE = 64 << 20
PROBE_TIMEOUT = 60


def _options(store_type: StoreType) -> dict[str, Any]:
    if store_type in (T.SESSION, T.SESSION_WITH_HEADERS):
        return {"retention_ms": 10 * MINUTE, "segment_interval_ms": MINUTE}
    if store_type in (T.WINDOW, T.TIMESTAMPED_WINDOW_WITH_HEADERS):
        return {"retention_ms": 10 * MINUTE, "window_size_ms": 1000, "segment_interval_ms": MINUTE}
    return {}


def _open(state_dir: Path, store_type: StoreType = T.KEY_VALUE, **kwargs: Any) -> Any:
    return open_bytes_store(store_type, Backend.ROCKSDB, name="s", state_dir=state_dir,
                            options=_options(store_type), **kwargs)


def _put(store: Any, store_type: StoreType, key: bytes, time: int) -> None:
    if store_type in (T.SESSION, T.SESSION_WITH_HEADERS):
        store.put(key, time, time, key)
    elif store_type in (T.WINDOW, T.TIMESTAMPED_WINDOW_WITH_HEADERS):
        store.put(key, key, time)
    else:
        store.put(key, key)


def _filled(state_dir: Path, store_type: StoreType = T.KEY_VALUE) -> Path:
    """A closed store with a row (in two segments for a segmented type), committed at 7; its directory."""
    store = _open(state_dir, store_type)
    _put(store, store_type, b"a", 0)
    _put(store, store_type, b"b", MINUTE)
    store.commit({TP: 7})
    store.close()
    task = state_dir / "app" / "0_0"
    return task / "s" if store_type in SEGMENTED else task / "rocksdb" / "s"


def _victim(tmp_path: Path) -> Path:
    """A file outside the state directory that no operation may write."""
    victim = tmp_path / "outside" / "victim.txt"
    victim.parent.mkdir(exist_ok=True)
    victim.write_bytes(b"outside the state directory\n")
    return victim


def _probe(tmp_path: Path, body: str) -> dict[str, Any]:
    """Run ``body`` in a child with bounded time, memory and file size; it sets ``result`` (JSON). A typed error
    escaping ``body`` is reported as ``{"error": <type>, "message": ...}``; anything else fails the test."""
    scratch = tmp_path / "probe-tmp"
    scratch.mkdir(exist_ok=True)
    script = textwrap.dedent("""
        import json, resource, signal, sys
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write fails with EFBIG, visibly
        resource.setrlimit(resource.RLIMIT_AS, ({mem}, {mem}))
        resource.setrlimit(resource.RLIMIT_FSIZE, ({fsize}, {fsize}))
        from kstate.errors import KStateError
        state_dir = sys.argv[1]
        result = None
        try:
        {body}
        except KStateError as exc:
            result = {{"error": type(exc).__name__, "message": str(exc)}}
        print(json.dumps(result))
    """).format(mem=PROBE_MEMORY, fsize=PROBE_FILE_SIZE, body=textwrap.indent(textwrap.dedent(body), "    "))
    env = dict(os.environ, TMPDIR=str(scratch), PYTHONPATH=os.pathsep.join(sys.path))
    try:
        done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "state")], capture_output=True,
                              text=True, timeout=PROBE_TIMEOUT, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the probe hung for {PROBE_TIMEOUT} s")
    assert done.returncode == 0, f"the probe died (rc {done.returncode}): {done.stderr[-2000:]}"
    leftovers = [p.name for p in scratch.iterdir() if p.name.startswith("kstate-read-")]
    assert not leftovers, f"temporary copies left behind: {leftovers}"
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


# --- the safe reader and writer (LAY-15) --------------------------------------------------------------------------


def test_the_writer_replaces_a_link_and_never_writes_its_target(tmp_path: Path) -> None:
    from kstate.storage_files import write_state_file

    victim = _victim(tmp_path)
    target = tmp_path / "f"
    target.symlink_to(victim)
    (tmp_path / "f.tmp").symlink_to(victim)  # Kafka's fixed temporary name, planted
    write_state_file(target, b"new")
    assert victim.read_bytes() == b"outside the state directory\n"
    assert not target.is_symlink() and target.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f", "f.tmp", "outside"]


def test_the_writer_refuses_a_directory_and_a_name_over_name_max(tmp_path: Path) -> None:
    from kstate.storage_files import write_state_file

    (tmp_path / "d").mkdir()
    with pytest.raises(KStateError, match="a directory"):
        write_state_file(tmp_path / "d", b"x")
    with pytest.raises(KStateError, match="NAME_MAX"):
        write_state_file(tmp_path / ("n" * 256), b"x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]


def test_the_reader_refuses_links_fifos_devices_and_oversized_files(tmp_path: Path) -> None:
    from kstate.storage_files import read_state_file

    victim = _victim(tmp_path)
    (tmp_path / "link").symlink_to(victim)
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "zero").symlink_to("/dev/zero")
    (tmp_path / "big").write_bytes(b"x" * 101)
    for name, match in (("link", "symbolic link"), ("fifo", "FIFO"), ("zero", "symbolic link")):
        with pytest.raises(KStateError, match=match):
            read_state_file(tmp_path / name)
    with pytest.raises(KStateError, match="cap of 100 bytes"):
        read_state_file(tmp_path / "big", cap=100)
    assert read_state_file(tmp_path / "missing") is None


# --- B1: writes outside the state directory -----------------------------------------------------------------------


@pytest.mark.parametrize("store_type", SEGMENTED)
def test_a_segment_list_temp_link_is_never_written_through(tmp_path: Path, store_type: StoreType) -> None:
    """LAY-15: the segment list's temporary file has a random name; a link planted as kstate-segments.tmp in a
    segment directory of an open store is not followed by its commit and close. (Planted before the open, it is
    refused by the open: LAY-16.)"""
    victim = _victim(tmp_path)
    state = tmp_path / "state"
    directory = _filled(state, store_type)
    store = _open(state, store_type)
    planted = sorted(directory.iterdir())
    for segment in planted:
        (segment / "kstate-segments.tmp").symlink_to(victim)
    _put(store, store_type, b"c", 2 * MINUTE)
    store.commit({TP: 9})
    store.close()
    assert victim.read_bytes() == b"outside the state directory\n"
    listed = [segment / "kstate-segments" for segment in directory.iterdir()]
    assert len(listed) == 3 and all(p.is_file() and not p.is_symlink() for p in listed)
    assert len(planted) == 2 and all((segment / "kstate-segments.tmp").is_symlink() for segment in planted)
    with pytest.raises(StoreStorageError, match=r"kstate-segments\.tmp is not a regular file"):
        _open(state, store_type)


def test_a_checkpoint_temp_link_is_never_written_through_by_the_migration(tmp_path: Path) -> None:
    """LAY-15, KV-55: the open migrates this store's offset out of ``.checkpoint`` and rewrites the file with the
    other store's entry; a link planted as ``.checkpoint.tmp`` is not written, ``.checkpoint`` stays a file."""
    victim = _victim(tmp_path)
    task = tmp_path / "state" / "app" / "0_0"
    task.mkdir(parents=True)
    (task / ".checkpoint").write_text("0\n2\napp-s-changelog 0 5\nother 0 3\n")
    (task / ".checkpoint.tmp").symlink_to(victim)
    store = _open(tmp_path / "state")
    assert store.committed_offset(TP) == 5
    store.close()
    assert victim.read_bytes() == b"outside the state directory\n"
    assert not (task / ".checkpoint").is_symlink()
    assert (task / ".checkpoint").read_text() == "0\n1\nother 0 3\n"


@pytest.mark.parametrize("planted", [".checkpoint.tmp", ".checkpoint"])
def test_write_task_file_never_writes_through_a_planted_link(tmp_path: Path, planted: str) -> None:
    victim = _victim(tmp_path)
    task = tmp_path / "state" / "app" / "0_0"
    task.mkdir(parents=True)
    (task / planted).symlink_to(victim)
    out = ops.call("store.write_task_file", {"state_dir": str(tmp_path / "state"), "file": ".checkpoint",
                                             "text": "0\n0\n"})
    assert out == {}
    assert victim.read_bytes() == b"outside the state directory\n"
    assert (task / ".checkpoint").read_text() == "0\n0\n" and not (task / ".checkpoint").is_symlink()


@pytest.mark.parametrize("linked", ["app", "app/0_0"])
def test_write_task_file_refuses_a_linked_application_or_task_directory(tmp_path: Path, linked: str) -> None:
    """LAY-15: a task file is never written through an application or task directory that is a link out of the
    state directory (before the fix the link was followed and the file landed in its target)."""
    state = tmp_path / "state"
    planted = state / linked
    target = tmp_path / "outside" / planted.name
    target.mkdir(parents=True)
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.symlink_to(target, target_is_directory=True)
    out = ops.call("store.write_task_file", {"state_dir": str(state), "file": ".checkpoint", "text": "0\n0\n"})
    assert out["error"]["type"] == "StoreStorageError"
    assert "LAY-15" in out["error"]["message"] and str(planted) in out["error"]["message"]
    assert list(target.iterdir()) == [] and planted.is_symlink()


@pytest.mark.parametrize("store_type", [T.KEY_VALUE, T.WINDOW])
@pytest.mark.parametrize("name", ["LOCK", "CURRENT", "IDENTITY", "LOG", "OPTIONS-999999", "000999.log"])
def test_a_database_file_that_is_a_link_is_refused_before_rocksdb_opens(
        tmp_path: Path, store_type: StoreType, name: str) -> None:
    """LAY-16: a dangling ``LOCK`` link would make RocksDB create its target outside; any database file that is a
    link is refused, typed, before RocksDB opens, and nothing is created or changed."""
    state = tmp_path / "state"
    directory = _filled(state, store_type)
    database = next(p for p in sorted(directory.iterdir()) if p.is_dir()) if store_type in SEGMENTED else directory
    outside = tmp_path / "outside" / "created-by-rocksdb"
    outside.parent.mkdir()
    if os.path.lexists(database / name):
        os.unlink(database / name)
    (database / name).symlink_to(outside)
    before = directory_digest(state)
    with pytest.raises(StoreStorageError, match=f"{name} is not a regular file: a symbolic link"):
        _open(state, store_type)
    assert not outside.exists(), "RocksDB followed the link out of the state directory"
    assert directory_digest(state) == before


# --- B2: unbounded reads ------------------------------------------------------------------------------------------


_DUMP = """
from kstate.store_dump import read_database
result = read_database(state_dir + "/app/0_0/rocksdb/s")
"""

_INSPECT = """
from kstate.inspect.state_dir import inspect_state_dir
report = inspect_state_dir(state_dir)
result = {"violations": [[v.rule, v.path, v.message] for v in report.violations],
          "json": json.dumps(report.to_json())}
"""

_OPEN = """
from kstate.stores.api import Backend
from kstate.stores.factory import open_bytes_store
open_bytes_store("kv", Backend.ROCKSDB, name="s", state_dir=state_dir).close()
result = "opened"
"""


@pytest.mark.parametrize("name", ["LOG", "OPTIONS-000007"])
def test_a_database_file_linked_to_dev_zero_is_neither_copied_nor_read(tmp_path: Path, name: str) -> None:
    """LAY-16: ``store.dump`` and ``kstate inspect`` refuse, typed and at once, a database whose LOG or OPTIONS
    file is a link to /dev/zero (they copied it without end into $TMPDIR), and leave no temporary copy."""
    directory = _filled(tmp_path / "state")
    for existing in directory.glob(name.split("-")[0] + "*"):
        existing.unlink()
    (directory / name).symlink_to("/dev/zero")
    assert _probe(tmp_path, _DUMP)["error"] == "DatabaseReadError"
    report = _probe(tmp_path, _INSPECT)
    assert any(rule == "LAY-2" and "symbolic link" in message for rule, _, message in report["violations"])


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_an_extra_options_file_that_blocks_or_never_ends_refuses_the_open(tmp_path: Path, kind: str) -> None:
    """LAY-16: an extra ``OPTIONS-999999`` that is a FIFO blocked the open forever; linked to /dev/zero it aborted
    the process (std::bad_alloc). Both are refused, typed, before RocksDB reads them."""
    directory = _filled(tmp_path / "state")
    if kind == "fifo":
        os.mkfifo(directory / "OPTIONS-999999")
    else:
        (directory / "OPTIONS-999999").symlink_to("/dev/zero")
    out = _probe(tmp_path, _OPEN)
    assert out["error"] == "StoreStorageError" and "OPTIONS-999999 is not a regular file" in out["message"]
    assert _probe(tmp_path, _DUMP)["error"] == "DatabaseReadError"


def test_an_oversized_options_file_refuses_the_open(tmp_path: Path) -> None:
    directory = _filled(tmp_path / "state")
    with open(directory / "OPTIONS-999999", "wb") as f:
        f.truncate((16 << 20) + 1)  # sparse: a file RocksDB would read whole
    with pytest.raises(StoreStorageError, match="over the cap"):
        _open(tmp_path / "state")


def test_the_scratch_copy_is_capped_and_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """LAY-15: the dump's scratch copy stops at its cap with a typed error, and is removed."""
    from kstate import store_dump

    directory = _filled(tmp_path / "state")
    monkeypatch.setattr(store_dump, "SCRATCH_COPY_CAP", 64)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr("tempfile.tempdir", None)
    with pytest.raises(DatabaseReadError, match="more than 64 bytes"):
        read_database(directory)
    assert list(scratch.iterdir()) == []
    monkeypatch.setattr(store_dump, "SCRATCH_COPY_CAP", 1 << 30)
    assert read_database(directory)["default"] == [(b"a", b"a"), (b"b", b"b")]


# --- B3: hangs and untyped errors in the task directory -----------------------------------------------------------


@pytest.mark.parametrize("name", ["s.position", ".checkpoint_s", ".checkpoint"])
@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_inspect_reports_a_legacy_file_that_is_a_fifo_or_a_dev_zero_link_without_reading_it(
        tmp_path: Path, name: str, kind: str) -> None:
    """LAY-15: a FIFO named ``<store>.position`` or ``.checkpoint_<x>`` hung ``kstate inspect``; a ``.position``
    linked to /dev/zero exhausted its memory. Each is reported, never opened."""
    directory = _filled(tmp_path / "state")
    planted = directory.parent.parent / name
    if kind == "fifo":
        os.mkfifo(planted)
    else:
        planted.symlink_to("/dev/zero")
    report = _probe(tmp_path, _INSPECT)
    assert any(rule == "LAY-15" and path.endswith(name) and "not read" in message
               for rule, path, message in report["violations"]), report["violations"]


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_position_file_that_is_a_fifo_or_a_dev_zero_link_refuses_the_open(tmp_path: Path, kind: str) -> None:
    directory = _filled(tmp_path / "state")
    planted = directory.parent.parent / "s.position"
    if kind == "fifo":
        os.mkfifo(planted)
    else:
        planted.symlink_to("/dev/zero")
    out = _probe(tmp_path, _OPEN)
    assert out["error"] == "StoreStorageError" and "not a regular file" in out["message"]


def test_inspect_reports_a_linked_position_file_and_never_quotes_its_target(tmp_path: Path) -> None:
    """LAY-15: a ``.position`` linked to a file outside (say /etc/passwd) was read and quoted in the report."""
    secret = tmp_path / "outside" / "passwd"
    secret.parent.mkdir()
    secret.write_text("root:x:0:0:SECRET-LINE:/root:/bin/sh\n")
    directory = _filled(tmp_path / "state")
    (directory.parent.parent / "s.position").symlink_to(secret)
    from kstate.inspect.state_dir import inspect_state_dir

    report = inspect_state_dir(tmp_path / "state")
    text = json.dumps(report.to_json())
    assert "SECRET-LINE" not in text and "root:x" not in text
    assert any(v.rule == "LAY-15" and v.path.endswith("s.position") for v in report.violations)


@pytest.mark.parametrize("kind", ["file", "link-to-a-directory", "dangling-link", "fifo"])
@pytest.mark.parametrize("store_type", [T.KEY_VALUE, T.WINDOW])
def test_a_wiping_leftover_of_any_kind_is_removed_and_never_followed(
        tmp_path: Path, kind: str, store_type: StoreType) -> None:
    """UPG-3, LAY-15: a ``<store>~wiping`` leftover that is a FIFO blocked ``wipe_store``; a file or a link failed
    every later wipe with NotADirectoryError. Each is removed as one entry, its target untouched."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("keep")
    directory = _filled(tmp_path / "state", store_type)
    leftover = directory.with_name(directory.name + "~wiping")
    if kind == "file":
        leftover.write_text("x")
    elif kind == "link-to-a-directory":
        leftover.symlink_to(outside)
    elif kind == "dangling-link":
        leftover.symlink_to(outside / "nothing")
    else:
        os.mkfifo(leftover)
    body = f"""
from kstate.stores.factory import wipe_store
wipe_store(state_dir, name="s", store_type={store_type.value!r})
wipe_store(state_dir, name="s", store_type={store_type.value!r})
result = "wiped"
"""
    assert _probe(tmp_path, body) == "wiped"
    assert not os.path.lexists(directory) and not os.path.lexists(leftover)
    assert (outside / "keep").read_text() == "keep"


def test_a_store_directory_that_is_a_link_is_wiped_as_a_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("keep")
    rocksdb = tmp_path / "state" / "app" / "0_0" / "rocksdb"
    rocksdb.mkdir(parents=True)
    (rocksdb / "s").symlink_to(outside)
    wipe_store(tmp_path / "state", name="s")
    assert (outside / "keep").read_text() == "keep" and not os.path.lexists(rocksdb / "s")


def test_a_249_character_store_name_can_be_wiped(tmp_path: Path) -> None:
    """UPG-3: the wiping name stays within NAME_MAX (a 249-character name plus ``~wiping`` is 256 bytes)."""
    name = "n" * 249
    store = open_bytes_store(T.KEY_VALUE, Backend.ROCKSDB, name=name, state_dir=tmp_path)
    store.put(b"k", b"v")
    store.close()
    wipe_store(tmp_path, name=name)
    assert list((tmp_path / "app" / "0_0" / "rocksdb").iterdir()) == []


LONG_TASK_ID = "0" * 300 + "_0"


def test_a_task_id_no_file_system_holds_is_refused_typed(tmp_path: Path) -> None:
    """LAY-11: ``"0"*300 + "_0"`` names task 0_0 to Kafka's parser but no directory: every operation given it is
    refused with a typed error naming the task id, and nothing is created."""
    with pytest.raises(InvalidArgumentError, match=r"task_id.*NAME_MAX"):
        open_bytes_store(T.KEY_VALUE, Backend.ROCKSDB, name="s", state_dir=tmp_path, task_id=LONG_TASK_ID)
    with pytest.raises(InvalidArgumentError, match="task_id"):
        wipe_store(tmp_path, name="s", task_id=LONG_TASK_ID)
    location = {"state_dir": str(tmp_path), "task_id": LONG_TASK_ID}
    for name, payload in (("store.task_files", {}), ("store.write_task_file", {"file": ".checkpoint", "text": ""}),
                          ("store.wipe", {"name": "s"}), ("store.dump", {"name": "s"})):
        out = ops.call(name, {**payload, **location})
        assert "error" in out and "task_id" in out["error"]["message"], (name, out)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("store_type", SEGMENTED)
def test_a_segment_list_that_is_a_directory_refuses_the_open_so_no_close_fails(
        tmp_path: Path, store_type: StoreType) -> None:
    """LAY-15, LAY-13: a directory named kstate-segments made every close fail; the open refuses it, typed, and
    changes nothing."""
    directory = _filled(tmp_path / "state", store_type)
    segment = next(p for p in sorted(directory.iterdir()) if p.is_dir())
    (segment / "kstate-segments").unlink(missing_ok=True)
    (segment / "kstate-segments").mkdir()
    before = directory_digest(tmp_path / "state")
    with pytest.raises(StoreStorageError, match="kstate-segments"):
        _open(tmp_path / "state", store_type)
    assert directory_digest(tmp_path / "state") == before


# --- B4: committed offsets that are no offsets (OFF-24) ------------------------------------------------------------


def test_offset_unknown_and_minus_one_are_kept_and_restore_from_the_start(tmp_path: Path) -> None:
    """OFF-24: Kafka 4.4 commits -4 (OFFSET_UNKNOWN) for a logged store with no offset yet and its store answers
    it as stored; its task reads -4 as no offset, and -1 seeks to offset 0: a restore starts at 0 for both."""
    from kstate.codecs.offsets import restore_start_offset

    for offset in (-4, -1):
        store = _open(tmp_path)
        store.commit({TP: offset})
        store.close()
        store = _open(tmp_path)
        assert store.committed_offset(TP) == offset
        store.close()
        assert restore_start_offset(offset) == 0
    assert restore_start_offset(None) == 0 and restore_start_offset(7) == 8


@pytest.mark.parametrize("offset", [-2, -3, -5, -(1 << 63)])
def test_a_negative_committed_offset_that_is_no_offset_is_refused(tmp_path: Path, offset: int) -> None:
    """OFF-25: any other negative value is no changelog offset (Kafka's task would seek to it and fail): a commit
    of it is refused before anything is staged, and an offsets family holding it refuses the open, typed."""
    from kstate_conformance.raw_rocksdb import put_rows

    store = _open(tmp_path)
    store.put(b"k", b"v")
    with pytest.raises(InvalidArgumentError, match="neither -1 nor -4"):
        store.commit({TP: offset})
    store.commit({TP: 3})
    store.close()
    path = tmp_path / "app" / "0_0" / "rocksdb" / "s"
    put_rows(path, {"offsets": {b"app-s-changelog-0": offset.to_bytes(8, "big", signed=True)}})
    before = directory_digest(tmp_path)
    with pytest.raises(StoreCorruptedError, match="neither -1 nor -4"):
        _open(tmp_path)
    assert directory_digest(tmp_path) == before


# --- B3: window and session stores read the task's .checkpoint (KV-55 for every family) ---------------------------


@pytest.mark.parametrize("store_type", SEGMENTED)
@pytest.mark.parametrize("kind", ["garbage", "directory", "link"])
def test_a_segmented_store_refuses_an_unreadable_checkpoint(tmp_path: Path, store_type: StoreType, kind: str) -> None:
    """KV-55, LAY-15: Kafka 4.4's migrateLegacyOffsets reads the task's .checkpoint for every store that manages
    offsets, window and session stores too; garbage, a directory or a link there was accepted silently."""
    victim = _victim(tmp_path)
    state = tmp_path / "state"
    _filled(state, store_type)
    checkpoint = state / "app" / "0_0" / ".checkpoint"
    if kind == "garbage":
        checkpoint.write_text("not a checkpoint\n")
    elif kind == "directory":
        checkpoint.mkdir()
    else:
        checkpoint.symlink_to(victim)
    before = directory_digest(state)
    with pytest.raises(KStateError):
        _open(state, store_type)
    assert directory_digest(state) == before


def test_a_fifo_checkpoint_refuses_a_window_store_open_without_blocking(tmp_path: Path) -> None:
    _filled(tmp_path / "state", T.WINDOW)
    os.mkfifo(tmp_path / "state" / "app" / "0_0" / ".checkpoint")
    body = f"""
from kstate.stores.api import Backend
from kstate.stores.factory import open_bytes_store
open_bytes_store("window", Backend.ROCKSDB, name="s", state_dir=state_dir, options={_options(T.WINDOW)!r}).close()
result = "opened"
"""
    out = _probe(tmp_path, body)
    assert out["error"] == "StoreStorageError" and "FIFO" in out["message"]


@pytest.mark.parametrize("store_type", SEGMENTED)
def test_a_segmented_store_migrates_its_checkpoint_offsets(tmp_path: Path, store_type: StoreType) -> None:
    """KV-55, OFF-19: the store's entry moves into its segments; the other store's entry stays in the file."""
    state = tmp_path / "state"
    _filled(state, store_type)
    checkpoint = state / "app" / "0_0" / ".checkpoint"
    checkpoint.write_text("0\n2\napp-s-changelog 0 42\nother 0 3\n")
    store = _open(state, store_type)
    assert store.committed_offset(TP) == 42
    store.close()
    assert checkpoint.read_text() == "0\n1\nother 0 3\n"
    store = _open(state, store_type)
    assert store.committed_offset(TP) == 42
    store.close()


@pytest.mark.parametrize("name", ["s.position", ".checkpoint_s"])
def test_the_audits_type_detection_does_not_block_on_a_fifo(tmp_path: Path, name: str) -> None:
    """LAY-15: ``kstate audit`` names a store's type with the inspector; a FIFO in the task directory hung it."""
    directory = _filled(tmp_path / "state")
    os.mkfifo(directory.parent.parent / name)
    body = """
from kstate.spark.audit_command import _detect_audit_store_type
result = list(_detect_audit_store_type([state_dir], "app", "s"))
"""
    assert _probe(tmp_path, body)[0] == "kv"


def test_a_linked_segment_directory_is_not_dumped(tmp_path: Path) -> None:
    """LAY-15: a segment directory that is a link to a database elsewhere is not read by store.dump."""
    from kstate.store_dump import segment_databases

    directory = _filled(tmp_path / "state", T.WINDOW)
    elsewhere = tmp_path / "outside" / "s.600000"
    elsewhere.parent.mkdir()
    (directory / "s.0").rename(elsewhere)
    (directory / "s.0").symlink_to(elsewhere)
    assert [path.name for path, _ in segment_databases(directory)] == ["s.60000"]


# --- a link in the middle of a path inside the state directory (LAY-15) --------------------------------------------


@pytest.mark.parametrize(("store_type", "linked"), [
    (T.KEY_VALUE, "app"), (T.KEY_VALUE, "app/0_0"), (T.KEY_VALUE, "app/0_0/rocksdb"), (T.KEY_VALUE, "app/0_0/rocksdb/s"),
    (T.WINDOW, "app/0_0"), (T.WINDOW, "app/0_0/s"), (T.WINDOW, "app/0_0/s/s.0"),
    (T.SESSION, "app/0_0/s"), (T.SESSION, "app/0_0/s/s.60000"),
    (T.TIMESTAMPED_WINDOW_WITH_HEADERS, "app/0_0/s/s.60000"),
])
def test_a_directory_linked_out_of_the_state_directory_refuses_the_open(
        tmp_path: Path, store_type: StoreType, linked: str) -> None:
    """LAY-15: an application, task, ``rocksdb``, store, segments or segment directory that is a symbolic link (here
    out of the state directory, to a good store) is refused typed at open, naming the link and the rule, and nothing
    is written through it: the link's target is byte for byte as it was. Before the fix every one of these opened."""
    state = tmp_path / "state"
    _filled(state, store_type)
    planted = state / linked
    target = tmp_path / "outside" / planted.name
    target.parent.mkdir()
    planted.rename(target)
    planted.symlink_to(target, target_is_directory=True)
    before = directory_digest(target.parent)
    with pytest.raises(StoreStorageError, match="LAY-15") as refused:
        _open(state, store_type)
    assert str(planted) in str(refused.value)
    assert directory_digest(target.parent) == before and planted.is_symlink()


def test_a_task_directory_given_as_a_link_is_refused_by_the_store_class(tmp_path: Path) -> None:
    """LAY-15 below the factory too: a store class handed a task directory that is a link refuses it."""
    from kstate.stores.families import store_classes

    target = tmp_path / "outside" / "0_0"
    target.mkdir(parents=True)
    task = tmp_path / "0_0"
    task.symlink_to(target, target_is_directory=True)
    with pytest.raises(StoreStorageError, match="LAY-15"):
        store_classes(T.KEY_VALUE).rocksdb("s", task)
    assert list(target.iterdir()) == []
