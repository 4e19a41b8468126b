"""Fault injection into RocksDB stores: corrupt and missing RocksDB files, legacy files of the wrong kind,
paths that are files, read-only directories with privileges dropped, offsets the data does not back, and
refused opens hashed before and after (spec/kv-stores.md KV-22..KV-26, KV-52, KV-57; issue 15).

Every refused open here is checked to leave the state directory byte for byte as it found it (KV-23).
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kstate.codecs.offsets import UncleanShutdownError
from kstate.codecs.store_types import BUILT_KV_TYPES, StoreType
from kstate.errors import InvalidArgumentError
from kstate.storage_files import directory_digest
from kstate.stores.api import (
    Backend,
    InvalidStoreNameError,
    ProcessorStateError,
    StoreCorruptedError,
    StoreStorageError,
    TopicPartition,
)
from kstate.stores.engine import BLOCK_CACHE_SIZE, MemoryEngine, list_column_families
from kstate.stores.factory import open_bytes_store, open_kv_store, store_directory, task_directory, wipe_store
from kstate.stores.families import store_classes
from kstate.stores.kv import RocksDBStore
from kstate_conformance.raw_rocksdb import drop_column_family, lose_current, put_rows, truncate_manifest
from kstate_conformance.wrong_paths import make_dangling_link, make_file

TP = TopicPartition("app-s-changelog", 0)
NOBODY = 65534



def _open(state_dir: Path, store_type: StoreType = StoreType.KEY_VALUE, **kwargs: Any) -> RocksDBStore:
    store = open_kv_store(store_type, Backend.ROCKSDB, name="s", state_dir=state_dir, **kwargs)
    assert isinstance(store, RocksDBStore)
    return store


def _value(store_type: StoreType, payload: bytes) -> bytes:
    if store_type is StoreType.KEY_VALUE:
        return payload
    if store_type is StoreType.TIMESTAMPED_KV:
        return bytes(8) + payload
    return b"\x00" + bytes(8) + payload  # no headers, timestamp 0


def _filled(state_dir: Path, store_type: StoreType = StoreType.KEY_VALUE, n: int = 10, offset: int = 99) -> Path:
    """A store of ``n`` entries, committed at ``offset``, flushed to table files and closed cleanly."""
    store = _open(state_dir, store_type)
    for i in range(n):
        store.put(b"k%05d" % i, _value(store_type, b"v" * 100))
    store.commit({TP: offset})
    store.engine.flush()
    store.close()
    return store_directory(state_dir, "app", "0_0", "s")


def _refused(state_dir: Path, error: type[BaseException], match: str, **kwargs: Any) -> None:
    """Open, expect ``error`` matching ``match``, and check that nothing under ``state_dir`` changed (KV-23)."""
    before = directory_digest(state_dir)
    with pytest.raises(error, match=match):
        _open(state_dir, **kwargs)
    assert directory_digest(state_dir) == before


# --- 1: a refused open changes nothing ----------------------------------------------------------------------


def test_a_refused_open_leaves_the_store_openable(tmp_path: Path) -> None:
    """An unreadable ``.checkpoint`` refuses the open before OPEN is written; once it is gone the store opens (KV-23, KV-52)."""
    _filled(tmp_path)
    checkpoint = task_directory(tmp_path, "app", "0_0") / ".checkpoint"
    checkpoint.write_bytes(b"")
    _refused(tmp_path, ProcessorStateError, "Error migrating checkpoint file")
    checkpoint.unlink()
    store = _open(tmp_path)
    assert store.committed_offset(TP) == 99
    assert len(list(store.all())) == 10
    store.close()


def test_a_refused_unclean_open_changes_nothing(tmp_path: Path) -> None:
    """A store left OPEN is refused by a read-only look: no file of the database is rewritten (KV-23, KV-52)."""
    store = _open(tmp_path)
    store.put(b"k", b"v")
    store.commit({TP: 1})
    store.simulate_crash()
    _refused(tmp_path, ProcessorStateError, "Invalid state during store open")
    # The refusal names its cause, so an application host can apply its unclean-shutdown policy (KV-52).
    with pytest.raises(ProcessorStateError) as refused:
        _open(tmp_path)
    assert isinstance(refused.value.__cause__, UncleanShutdownError)
    recovered = _open(tmp_path, ignore_invalid_state=True)
    assert recovered.get(b"k") == b"v"
    recovered.close()


def test_a_refused_first_open_creates_no_directory(tmp_path: Path) -> None:
    """A first open refused by the task's legacy files leaves no ``rocksdb/`` behind (KV-23)."""
    task = task_directory(tmp_path, "app", "0_0")
    task.mkdir(parents=True)
    (task / ".checkpoint").write_bytes(b"0\n1\napp-s-changelog 0\n")  # the entry is truncated
    _refused(tmp_path, ProcessorStateError, "Error migrating checkpoint file")
    assert not (task / "rocksdb").exists()


# --- 2: corruption is a typed error, never a short answer ---------------------------------------------------


@pytest.mark.parametrize("store_type", list(BUILT_KV_TYPES))
def test_a_corrupt_table_file_fails_scans_and_gets_with_a_typed_error(tmp_path: Path, store_type: StoreType) -> None:
    """64 flipped bytes in a table file: ``all`` and ``reverse_all`` raise, no scan returns fewer entries,
    and every ``get`` either answers or raises a typed error naming the store (KV-25)."""
    path = _filled(tmp_path, store_type, n=2000)
    table = max(path.glob("*.sst"), key=lambda file: file.stat().st_size)
    data = bytearray(table.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(b ^ 0xFF for b in data[middle : middle + 64])
    table.write_bytes(bytes(data))
    store = _open(tmp_path, store_type)
    for scan in (store.all, store.reverse_all):
        with pytest.raises(StoreCorruptedError, match=r"Corruption.*store s|store s.*Corruption"):
            list(scan())
    failed = 0
    for i in range(2000):
        try:
            store.get(b"k%05d" % i)
        except StoreCorruptedError as exc:
            assert exc.store == "s" and "Corruption" in str(exc)
            failed += 1
    assert failed > 0
    store.close()


# --- 3: a refused upgrade adds no column family -------------------------------------------------------------


def test_a_refused_upgrade_adds_no_column_family(tmp_path: Path) -> None:
    """A timestamped store killed while open, opened as a header store: refused before any family is created,
    so it still opens as a timestamped store (KV-23, KV-52, UPG-6)."""
    store = _open(tmp_path, StoreType.TIMESTAMPED_KV)
    store.put(b"k", bytes(8) + b"v")
    store.commit({TP: 1})
    store.simulate_crash()
    path = store_directory(tmp_path, "app", "0_0", "s")
    families = sorted(list_column_families(path))
    _refused(tmp_path, ProcessorStateError, "Invalid state during store open", store_type=StoreType.TIMESTAMPED_KV_WITH_HEADERS)
    assert sorted(list_column_families(path)) == families
    _refused(tmp_path, ProcessorStateError, "Invalid state during store open", store_type=StoreType.TIMESTAMPED_KV)
    back = _open(tmp_path, StoreType.TIMESTAMPED_KV, ignore_invalid_state=True)
    assert back.get(b"k") == bytes(8) + b"v"
    back.close()


def test_a_refused_upgrade_over_any_engine_adds_no_column_family() -> None:
    """The same order over an engine given to the store: the status is read before any family is created (KV-23)."""
    engine = MemoryEngine(["keyValueWithTimestamp", "offsets"])
    engine.put("keyValueWithTimestamp", b"k", bytes(8) + b"v")
    engine.put("offsets", b"status", (1).to_bytes(8, "big"))
    with pytest.raises(ProcessorStateError, match="Invalid state during store open"):
        store_classes(StoreType.TIMESTAMPED_KV_WITH_HEADERS).rocksdb("s", engine=engine)
    assert sorted(engine.column_families()) == ["default", "keyValueWithTimestamp", "offsets"]


# --- 5: paths of the wrong kind -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("where", "make", "match"),
    [
        ("app/0_0/rocksdb/s", make_file, "store directory .* is a file"),
        ("app/0_0/rocksdb/s", make_dangling_link, "store directory .* is a dangling symbolic link"),
        ("app/0_0", make_file, "task directory .* is a file"),
        ("app/0_0/rocksdb", make_file, "rocksdb directory .* is a file"),
        ("app", make_file, "creating the directory|is a file"),
    ],
)
def test_a_path_of_the_wrong_kind_is_a_typed_error(tmp_path: Path, where: str, make: Any, match: str) -> None:
    """A store, ``rocksdb/`` or task directory that is a file or a dangling link: a typed error, nothing written (KV-25)."""
    make(tmp_path / where)
    _refused(tmp_path, StoreStorageError, match)


@pytest.mark.parametrize("name", [".checkpoint", "s.position"])
def test_a_legacy_file_that_is_a_directory_is_refused_before_open_is_written(tmp_path: Path, name: str) -> None:
    """``.checkpoint`` or ``<store>.position`` a directory: refused before the status is touched (KV-23, KV-25)."""
    _filled(tmp_path)
    (task_directory(tmp_path, "app", "0_0") / name).mkdir()
    _refused(tmp_path, StoreStorageError, "is not a regular file")
    shutil.rmtree(task_directory(tmp_path, "app", "0_0") / name)
    _open(tmp_path).close()  # status still CLOSED: no unclean-shutdown refusal


def _open_as(uid: int | None, state_dir: Path) -> tuple[int, str]:
    """Open the store in a forked child, as ``uid`` (None: unchanged); the child's exit code and message.

    Forked rather than executed: the dropped user may not be able to read the interpreter's installation.
    """
    import kstate.stores.offsets  # noqa: F401  (imported before the fork: the child may not read it)

    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code, message = 5, ""
        try:
            os.close(reader)
            signal.alarm(20)
            if uid is not None:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
            try:
                open_kv_store(StoreType.KEY_VALUE, Backend.ROCKSDB, name="s", state_dir=state_dir).close()
                code, message = 0, "opened"
            except StoreStorageError as exc:
                code, message = 3, f"refused: {exc}"
            except BaseException as exc:
                code, message = 4, f"untyped: {type(exc).__name__}: {exc}"
        except BaseException as exc:
            code, message = 6, f"cannot drop privileges: {exc}"
        finally:
            os.write(writer, message.encode("utf-8", "replace"))
            os._exit(code)
    os.close(writer)
    with os.fdopen(reader, "rb") as pipe:
        message = pipe.read().decode()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), message


def test_a_read_only_task_directory_refuses_migration_before_anything_moves(tmp_path: Path) -> None:
    """Legacy offsets to migrate into a task directory the process cannot write: refused before the offsets
    reach the store, the files untouched (KV-25, KV-55). Privileges are dropped, since root ignores modes."""
    base = Path(tempfile.mkdtemp(prefix="kstate-ro-"))
    try:
        base.chmod(0o755)
        _filled(base, offset=5)
        task = task_directory(base, "app", "0_0")
        (task / ".checkpoint").write_bytes(b"0\n1\napp-s-changelog 0 42\n")
        uid: int | None = None
        if os.geteuid() == 0:
            # The database stays writable by the dropped user; the task directory (root's, 0755) does not.
            uid = NOBODY
            for dirpath, _, filenames in os.walk(task / "rocksdb"):
                os.chown(dirpath, NOBODY, NOBODY)
                for name in filenames:
                    os.chown(os.path.join(dirpath, name), NOBODY, NOBODY)
        else:
            task.chmod(0o555)
        before = directory_digest(base)
        code, message = _open_as(uid, base)
        if code == 6:
            pytest.skip(f"dropping privileges is impossible here: {message}")
        assert code == 3, message
        assert "not writable" in message
        assert directory_digest(base) == before
    finally:
        task = task_directory(base, "app", "0_0")
        if task.exists():
            task.chmod(0o755)
        shutil.rmtree(base, ignore_errors=True)


# --- 6: RocksDB metadata lost ------------------------------------------------------------------------------


def _current_names_nothing(path: Path) -> None:
    (path / "CURRENT").write_bytes(b"MANIFEST-999999\n")


@pytest.mark.parametrize("damage", [lose_current, truncate_manifest, _current_names_nothing])
def test_table_files_without_readable_metadata_are_refused_not_recreated(tmp_path: Path, damage: Any) -> None:
    """No ``CURRENT``, a ``CURRENT`` naming no file, or a truncated ``MANIFEST`` beside table files: refused as
    corrupt, twice, and neither open writes a new ``CURRENT`` or ``MANIFEST`` (KV-24)."""
    path = _filled(tmp_path, n=500)
    assert list(path.glob("*.sst"))
    damage(path)
    _refused(tmp_path, StoreCorruptedError, "store s")
    _refused(tmp_path, StoreCorruptedError, "store s")


@pytest.mark.parametrize("keep", [0.25, 0.5, 0.75, 0.97])
def test_a_manifest_that_lost_its_tail_is_refused(tmp_path: Path, keep: float) -> None:
    """A ``MANIFEST`` cut short reads as an older one (RocksDB takes a torn tail for the end): table files it
    does not list and no offsets status are refused, not opened without their data (KV-24)."""
    store = _open(tmp_path)
    for flush in range(3):
        for i in range(300):
            store.put(b"k%d-%05d" % (flush, i), b"v" * 100)
        store.commit({TP: flush})
        store.engine.flush()
    store.close()
    path = store_directory(tmp_path, "app", "0_0", "s")
    manifest = path / (path / "CURRENT").read_text().strip()
    data = manifest.read_bytes()
    manifest.write_bytes(data[: int(len(data) * keep)])
    _refused(tmp_path, StoreCorruptedError, "store s")


def test_an_empty_store_directory_is_created(tmp_path: Path) -> None:
    """An existing but empty directory is a new store, as an absent one (KV-24)."""
    store_directory(tmp_path, "app", "0_0", "s").mkdir(parents=True)
    store = _open(tmp_path)
    assert list(store.all()) == []
    store.close()


# --- 7: offsets the store cannot stand behind --------------------------------------------------------------


@pytest.mark.parametrize("store_type", [StoreType.TIMESTAMPED_KV, StoreType.TIMESTAMPED_KV_WITH_HEADERS])
def test_committed_offsets_without_their_data_family_are_refused(tmp_path: Path, store_type: StoreType) -> None:
    """The data family dropped, the offset 99 still committed, no family holding data: refused (KV-57)."""
    path = _filled(tmp_path, store_type)
    data_cf = "keyValueWithTimestamp" if store_type is StoreType.TIMESTAMPED_KV else "keyValueWithTimestampAndHeaders"
    drop_column_family(path, data_cf)
    _refused(tmp_path, StoreCorruptedError, "offsets ahead of data", store_type=store_type)


def test_an_empty_store_with_committed_offsets_still_opens(tmp_path: Path) -> None:
    """A store whose data family exists but is empty is not offsets ahead of data (KV-57)."""
    store = _open(tmp_path, StoreType.TIMESTAMPED_KV)
    store.commit({TP: 99})
    store.close()
    store = _open(tmp_path, StoreType.TIMESTAMPED_KV)
    assert store.committed_offset(TP) == 99
    store.close()


def test_a_committed_offset_that_is_not_a_long_is_refused_at_open(tmp_path: Path) -> None:
    """A 3-byte committed offset: refused when the store opens, not when the offset is read (KV-57, OFF-3)."""
    path = _filled(tmp_path)
    put_rows(path, {"offsets": {b"app-s-changelog-0": b"\x00\x00\x63"}})
    _refused(tmp_path, StoreCorruptedError, "is 3 bytes, not an 8-byte long")
    _refused(tmp_path, StoreCorruptedError, "is 3 bytes", ignore_invalid_state=True)


@pytest.mark.parametrize("status", [b"\x07", (2).to_bytes(8, "big"), b""])
def test_a_garbage_status_has_its_own_message(tmp_path: Path, status: bytes) -> None:
    """A status neither OPEN nor CLOSED is refused as damaged, not as an unclean shutdown (KV-57, OFF-6)."""
    path = _filled(tmp_path)
    put_rows(path, {"offsets": {b"status": status}})
    before = directory_digest(tmp_path)
    with pytest.raises(StoreCorruptedError, match="neither OPEN nor CLOSED") as info:
        _open(tmp_path)
    assert "Invalid state" not in str(info.value)
    assert directory_digest(tmp_path) == before


@pytest.mark.parametrize(
    "name", ["../../escape", "a/b", "", ".", "..", "x" * 250, "caf\u00e9", "a b", "a\\b", "a:b", "a\x00b"]
)
@pytest.mark.parametrize("backend", list(Backend))
def test_store_names_follow_kafkas_rule(tmp_path: Path, name: str, backend: Backend) -> None:
    """Names Kafka's ``Named.validate`` refuses are refused, and nothing is created (KV-26)."""
    before = directory_digest(tmp_path)
    with pytest.raises(InvalidStoreNameError):
        open_kv_store(StoreType.KEY_VALUE, backend, name=name, state_dir=tmp_path)
    assert directory_digest(tmp_path) == before
    assert not (tmp_path.parent / "escape").exists()


@pytest.mark.parametrize("name", ["a.b_c-D9", "x" * 249, "...", "-"])
def test_store_names_kafka_accepts_open(tmp_path: Path, name: str) -> None:
    """ASCII letters, digits, ``.``, ``_`` and ``-`` up to 249 characters, ``.`` and ``..`` excepted (KV-26)."""
    store = open_kv_store(StoreType.KEY_VALUE, Backend.ROCKSDB, name=name, state_dir=tmp_path)
    store.close()
    assert (tmp_path / "app" / "0_0" / "rocksdb" / name).is_dir()


#: Application ids that are not one path component Kafka's naming rule allows: each would reach outside
#: ``state.dir`` or into another directory of it (LAY-11).
BAD_APPLICATION_IDS = ["..", ".", "", "../esc", "a/b", "/abs", "a b", "caf\u00e9", "x" * 250]
#: Task ids that are not a task directory Kafka lists (``[0-9]+_[0-9]+``, Java ints; LAY-1, LAY-11).
BAD_TASK_IDS = ["../../esc", "..", ".", "", "0_0/..", "/0_0", "0", "0_", "_0", "-1_0", "+1_0", "0_0_0",
                "topo__0_0", "2147483648_0", "0_2147483648", "\u0661_0"]


@pytest.mark.parametrize("backend", list(Backend))
@pytest.mark.parametrize(("argument", "value"), [("application_id", v) for v in BAD_APPLICATION_IDS]
                         + [("task_id", v) for v in BAD_TASK_IDS])
def test_a_location_outside_the_state_directory_is_refused_before_anything_is_made(
        tmp_path: Path, backend: Backend, argument: str, value: str) -> None:
    """An application id or task id that is not one path component as Kafka names it: a typed error naming the
    argument, and nothing created anywhere, on every backend (LAY-11)."""
    state_dir = tmp_path / "root" / "state"
    state_dir.mkdir(parents=True)
    before = directory_digest(tmp_path)
    with pytest.raises(InvalidArgumentError) as info:
        open_kv_store(StoreType.KEY_VALUE, backend, name="s", state_dir=state_dir, **{argument: value})
    assert info.value.argument == argument
    assert directory_digest(tmp_path) == before


@pytest.mark.parametrize(("argument", "value"), [("application_id", v) for v in BAD_APPLICATION_IDS]
                         + [("task_id", v) for v in BAD_TASK_IDS])
def test_wiping_a_location_outside_the_state_directory_is_refused_and_deletes_nothing(
        tmp_path: Path, argument: str, value: str) -> None:
    """A wipe by an application id or task id that is not one path component deletes nothing, wherever the
    path would lead: ``..`` as application id named ``<state>/../0_0/rocksdb/s`` (LAY-11)."""
    state_dir = tmp_path / "state"
    for task_dir in (tmp_path / "0_0", tmp_path / "v", state_dir / "app" / "0_0", state_dir / "0_0"):
        (task_dir / "rocksdb" / "s").mkdir(parents=True)
        (task_dir / "rocksdb" / "s" / "CURRENT").write_text("MANIFEST-000001\n")
        (task_dir / "s.position").write_text("0\n0\n")
    (state_dir / "app" / "0_0" / "x" / "y").mkdir(parents=True)
    before = directory_digest(tmp_path)
    with pytest.raises(InvalidArgumentError) as info:
        wipe_store(state_dir, name="s", **{argument: value})
    assert info.value.argument == argument
    assert directory_digest(tmp_path) == before


@pytest.mark.parametrize(("application_id", "task_id"), [("my-app.v2_1", "0_0"), ("x" * 249, "12_345"),
                                                         ("app", "00_7"), ("app", "2147483647_2147483647")])
def test_locations_kafka_writes_open_where_kafka_puts_them(tmp_path: Path, application_id: str, task_id: str) -> None:
    """An application id of topic-name characters and a task id Kafka lists: ``<state>/<app>/<task>`` (LAY-1, LAY-11)."""
    store = open_kv_store(StoreType.KEY_VALUE, Backend.ROCKSDB, name="s", state_dir=tmp_path,
                          application_id=application_id, task_id=task_id)
    store.close()
    assert (tmp_path / application_id / task_id / "rocksdb" / "s").is_dir()
    assert task_directory(tmp_path, application_id, task_id) == tmp_path / application_id / task_id


def _stores(tmp_path: Path) -> Iterator[Any]:
    for backend in Backend:
        yield open_kv_store(StoreType.KEY_VALUE, backend, name="s", state_dir=tmp_path / backend.value)


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda s: s.commit({"t-0": 1}), "changelog_offsets"),
        (lambda s: s.commit({TP: "1"}), "changelog_offsets"),
        (lambda s: s.commit({TP: True}), "changelog_offsets"),
        (lambda s: s.commit([(TP, 1)]), "changelog_offsets"),
        (lambda s: s.commit({("t", "0"): 1}), "changelog_offsets"),
        (lambda s: s.committed_offset(None), "partition"),
        (lambda s: s.committed_offset("t-0"), "partition"),
        (lambda s: s.put(1, b"v"), "key"),
        (lambda s: s.put(b"k", "v"), "value"),
    ],
)
def test_wrong_argument_types_are_typed_errors_naming_the_argument(tmp_path: Path, call: Any, argument: str) -> None:
    """Wrong Python types: an :class:`InvalidArgumentError` naming the argument, and the store unchanged (KV-26)."""
    for store in _stores(tmp_path):
        store.put(b"k", b"v")
        with pytest.raises(InvalidArgumentError) as info:
            call(store)
        assert info.value.argument == argument
        assert list(store.all()) == [(b"k", b"v")]
        store.close()


@pytest.mark.parametrize(("kwargs", "argument"), [({"store_type": "kv2"}, "store_type"), ({"backend": "lmdb"}, "backend")])
def test_unknown_factory_enums_name_the_argument(tmp_path: Path, kwargs: dict[str, str], argument: str) -> None:
    """An unknown store type or backend string: a typed error naming the argument and the accepted values (KV-26)."""
    arguments: dict[str, Any] = {"store_type": "kv", "backend": "rocksdb", **kwargs}
    with pytest.raises(InvalidArgumentError, match="expected one of") as info:
        open_kv_store(arguments["store_type"], arguments["backend"], name="s", state_dir=tmp_path)
    assert info.value.argument == argument
    assert directory_digest(tmp_path) == {}


# --- RocksDB options ------------------------------------------------------------------------------------------


def test_table_options_are_kafkas(tmp_path: Path) -> None:
    """The data family: a 50 MiB LRU block cache, 4 KiB blocks, a full 10-bit bloom filter, ``optimize_filters_for_hits``;
    the offsets family: Kafka's offsets options; both with the reference's own ``format_version`` 5, and atomic flush
    (KV-22, KV-21)."""
    store = _open(tmp_path)
    for i in range(3000):
        store.put(b"k%05d" % i, b"v" * 50)
    store.commit({})
    store.engine.flush()
    db = store.engine._db  # type: ignore[attr-defined]
    assert int(db.property_value("rocksdb.block-cache-capacity")) == BLOCK_CACHE_SIZE
    table = dict(
        part.strip().split("=", 1) for part in db.property_value("rocksdb.aggregated-table-properties").split(";") if "=" in part
    )
    entries = int(table["# entries for filter"])
    bits_per_key = int(table["filter block size"]) * 8 / entries
    assert entries == 3000 and 9.5 <= bits_per_key <= 11, table
    store.close()
    path = store_directory(tmp_path, "app", "0_0", "s")
    options = max(path.glob("OPTIONS-*"), key=lambda file: int(file.name.split("-")[1])).read_text()
    def settings(section: str) -> dict[str, str]:
        body = options.split(section)[1].split("\n[")[0]
        return dict(line.strip().split("=", 1) for line in body.splitlines() if "=" in line)

    data_table, data_cf = settings('[TableOptions/BlockBasedTable "default"]'), settings('[CFOptions "default"]')
    assert data_table["block_size"] == "4096" and data_table["format_version"] == "5"
    assert data_table["filter_policy"].startswith("bloomfilter") and data_table["partition_filters"] == "false"
    assert data_cf["optimize_filters_for_hits"] == "true" and data_cf["compression"] == "kNoCompression"
    assert data_cf["write_buffer_size"] == "16777216" and data_cf["max_write_buffer_number"] == "3"
    assert data_cf["compaction_style"] == "kCompactionStyleUniversal"
    # The offsets family: RocksDBStore.openDB's offsetsCfOptions, no compression, a 1 MiB write buffer, the
    # default table (no filter), with the reference's format_version 5.
    offsets_table, offsets_cf = settings('[TableOptions/BlockBasedTable "offsets"]'), settings('[CFOptions "offsets"]')
    assert offsets_table["filter_policy"] == "nullptr" and offsets_table["format_version"] == "5", offsets_table
    assert offsets_cf["optimize_filters_for_hits"] == "false" and offsets_cf["compression"] == "kNoCompression"
    assert offsets_cf["write_buffer_size"] == "1048576" and offsets_cf["compaction_style"] == "kCompactionStyleLevel"
    assert "  atomic_flush=true\n" in options.split("[DBOptions]")[1].split("[")[0]


def _offsets_family_settings(state_dir: Path) -> dict[str, str]:
    """The ``offsets`` family's block-based table and column-family settings in the store's newest OPTIONS file."""
    path = store_directory(state_dir, "app", "0_0", "s")
    options = max(path.glob("OPTIONS-*"), key=lambda file: int(file.name.split("-")[1])).read_text()
    settings: dict[str, str] = {}
    for section in ('[TableOptions/BlockBasedTable "offsets"]', '[CFOptions "offsets"]'):
        body = options.split(section)[1].split("\n[")[0]
        settings.update(line.strip().split("=", 1) for line in body.splitlines() if "=" in line)
    return settings


def test_a_store_written_with_the_data_options_in_its_offsets_family_reopens_with_kafkas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store whose offsets family was created with the data families' options (the reference before KV-22 was
    corrected) opens, keeps its data and offsets, and has Kafka's offsets options from then on (KV-22)."""
    from kstate.stores import engine

    with monkeypatch.context() as patch:
        patch.setattr(engine, "offsets_options", engine.rocksdb_options)
        store = _open(tmp_path)
        store.put(b"k", b"v")
        store.commit({TP: 7})
        store.close()
    assert _offsets_family_settings(tmp_path)["filter_policy"].startswith("bloomfilter")
    store = _open(tmp_path)
    assert store.get(b"k") == b"v" and store.committed_offset(TP) == 7
    store.close()
    settings = _offsets_family_settings(tmp_path)
    assert settings["filter_policy"] == "nullptr" and settings["write_buffer_size"] == "1048576", settings
    assert settings["optimize_filters_for_hits"] == "false"


def test_a_first_open_failing_after_the_database_was_created_removes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure that no check foresaw, after RocksDB created the store: the created directories go again (KV-23)."""
    from kstate.stores.offsets import StoreOffsets

    def fail(self: StoreOffsets, ignore_invalid_state: bool) -> None:
        raise StoreStorageError("s", "injected failure after the database was created")

    monkeypatch.setattr(StoreOffsets, "open", fail)
    (tmp_path / "state").mkdir()
    before = directory_digest(tmp_path)
    with pytest.raises(StoreStorageError, match="injected"):
        _open(tmp_path / "state")
    assert directory_digest(tmp_path) == before


@pytest.mark.parametrize("store_type", [StoreType.KEY_VALUE, StoreType.WINDOW])
def test_a_wipe_killed_half_way_leaves_the_whole_store_or_none_of_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store_type: StoreType) -> None:
    """A wipe interrupted while it deletes (UPG-3) never leaves a partial store that the next open refuses
    (KV-24): the store is renamed away first; the leftover goes with the next wipe and is no store to inspect."""
    from kstate.inspect.state_dir import inspect_state_dir
    from kstate.stores import factory

    options = {"retention_ms": 60_000, "window_size_ms": 10} if store_type == StoreType.WINDOW else None
    store: Any = open_bytes_store(store_type, Backend.ROCKSDB, name="s", state_dir=tmp_path, options=options)
    if store_type == StoreType.WINDOW:
        store.put(b"k", b"v", 5)  # a segment database inside the store directory
    else:
        store.put(b"k", b"v")
    store.close()
    directory = store_directory(tmp_path, "app", "0_0", "s", store_type)
    assert directory.is_dir()
    real_rmtree = shutil.rmtree
    deleted: list[Path] = []

    def killed_after_one_file(path: Any, ignore_errors: bool = False) -> None:
        path = Path(path)
        if not path.exists():
            return
        victim = next(p for p in sorted(path.rglob("*")) if p.is_file())
        victim.unlink()  # the delete had begun when the "kill" came
        deleted.append(victim)
        raise KeyboardInterrupt

    monkeypatch.setattr(factory.shutil, "rmtree", killed_after_one_file)
    with pytest.raises(KeyboardInterrupt):
        wipe_store(tmp_path, name="s", store_type=store_type)
    monkeypatch.setattr(factory.shutil, "rmtree", real_rmtree)
    assert deleted and not directory.exists()  # gone whole: only the renamed leftover was touched
    leftover = factory.wiping_directory(directory)
    assert leftover.is_dir()
    notes = inspect_state_dir(tmp_path).notes
    assert any("interrupted wipe" in note for note in notes), notes
    assert not any(s.name.endswith("~wiping") for t in inspect_state_dir(tmp_path).tasks for s in t.stores)

    reopened = open_bytes_store(store_type, Backend.ROCKSDB, name="s", state_dir=tmp_path, options=options)
    reopened.close()
    wipe_store(tmp_path, name="s", store_type=store_type)
    assert not directory.exists() and not leftover.exists()
