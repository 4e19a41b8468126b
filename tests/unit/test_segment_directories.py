"""The segment directory of RocksDB window and session stores, read by one shared open (issue 25, items 3, 4, 10):
stray entries are skipped and logged, entries the store would not open under their own name are refused, and a
refused open changes no file of any segment (LAY-3, LAY-12, WS-31, SS-20, KV-23)."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

import pytest

from kstate.codecs.header_values import encode_value_timestamp_headers
from kstate.codecs.layout import SEGMENT_LIST_SIDECAR
from kstate.codecs.store_types import StoreType
from kstate.storage_files import directory_digest
from kstate.stores.api import Backend, ProcessorStateError, StoreCorruptedError, StoreStorageError, TopicPartition
from kstate.stores.factory import open_bytes_store
from kstate_conformance.raw_rocksdb import lose_current, put_rows, truncate_manifest

T = StoreType
MINUTE = 60_000
TYPES = [T.WINDOW, T.TIMESTAMPED_WINDOW_WITH_HEADERS, T.SESSION, T.SESSION_WITH_HEADERS]
TIMES = (0, MINUTE, 2 * MINUTE)
TP = TopicPartition("app-s-changelog", 0)


def _options(store_type: StoreType) -> dict[str, Any]:
    if store_type in (T.SESSION, T.SESSION_WITH_HEADERS):
        return {"retention_ms": 10 * MINUTE, "segment_interval_ms": MINUTE}
    return {"retention_ms": 10 * MINUTE, "window_size_ms": 1000, "segment_interval_ms": MINUTE}


def _open(state_dir: Path, store_type: StoreType) -> Any:
    return open_bytes_store(store_type, Backend.ROCKSDB, name="s", state_dir=state_dir, options=_options(store_type))


def _value(store_type: StoreType, payload: bytes) -> bytes:
    if store_type is T.TIMESTAMPED_WINDOW_WITH_HEADERS:
        return encode_value_timestamp_headers(payload, 7, [])  # type: ignore[return-value]
    if store_type is T.SESSION_WITH_HEADERS:
        return b"\x00" + payload  # no headers
    return payload


def _put(store: Any, store_type: StoreType, key: bytes, time: int) -> None:
    if store_type in (T.SESSION, T.SESSION_WITH_HEADERS):
        store.put(key, time, time, _value(store_type, key))
    else:
        store.put(key, _value(store_type, key), time)


def _rows(store: Any, store_type: StoreType) -> list[bytes]:
    """The keys the store answers, over every segment."""
    if store_type in (T.SESSION, T.SESSION_WITH_HEADERS):
        with store.fetch_range(None, None) as found:
            return sorted(record.key for record in found)
    return sorted(key for key, _, _ in store.all())


def _filled(state_dir: Path, store_type: StoreType) -> Path:
    """A store with one row in each of three segments (``s.0``, ``s.60000``, ``s.120000``), committed at 7 and
    closed; answers its segment directory."""
    store = _open(state_dir, store_type)
    for i, time in enumerate(TIMES):
        _put(store, store_type, b"k%d" % i, time)
    store.commit({TP: 7})
    store.close()
    directory = state_dir / "app" / "0_0" / "s"
    assert sorted(p.name for p in directory.iterdir()) == ["s.0", "s.120000", "s.60000"]
    return directory


def _refused(state_dir: Path, store_type: StoreType, error: type[BaseException], match: str | None) -> None:
    """The open is refused with ``error`` and nothing under ``state_dir`` changed (KV-23, SS-20, WS-31)."""
    before = directory_digest(state_dir)
    with pytest.raises(error, match=match):
        _open(state_dir, store_type)
    assert directory_digest(state_dir) == before, "a refused open changed the state directory"


# --- item 3: stray entries ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("store_type", TYPES)
def test_stray_entries_are_skipped_with_a_warning_and_every_segment_opens(
        tmp_path: Path, store_type: StoreType, caplog: pytest.LogCaptureFixture) -> None:
    """LAY-12: ``junk``, ``s.notanumber``, an undated ``s-`` name and regular files name no segment: each is
    skipped with a WARN naming it, the scan goes on, every segment opens and the committed offset stands."""
    directory = _filled(tmp_path, store_type)
    (directory / "junk").mkdir()
    (directory / "s.notanumber").mkdir()
    (directory / "s-nodate").mkdir()
    (directory / "notes.txt").write_text("a file")
    (directory / "x").write_text("shorter than the separator")
    with caplog.at_level(logging.WARNING, logger="kstate.stores"):
        store = _open(tmp_path, store_type)
    assert _rows(store, store_type) == [b"k0", b"k1", b"k2"]
    assert store.committed_offset(TP) == 7
    store.close()
    for entry in ("junk", "s.notanumber", "s-nodate", "notes.txt", "x"):
        assert (directory / entry).exists(), f"{entry} was touched"
        assert any(entry in record.getMessage() for record in caplog.records), f"no warning names {entry}"


def _file_named_as_a_segment(directory: Path) -> None:
    (directory / "s.180000").write_text("not a database")


def _another_interval(directory: Path) -> None:
    (directory / "s.120000").rename(directory / "s.150000")  # segment 2 at interval 60000, not its start


def _two_names_of_one_segment(directory: Path) -> None:
    (directory / "s:60000").mkdir()  # the legacy form of s.60000, which is there too


@pytest.mark.parametrize("store_type", TYPES)
@pytest.mark.parametrize("damage", [_file_named_as_a_segment, _another_interval, _two_names_of_one_segment])
def test_an_entry_the_store_would_not_open_by_its_name_is_refused(tmp_path: Path, store_type: StoreType,
                                                                  damage: Any) -> None:
    """LAY-12: an entry with a segment id that is not a directory, or is not the segment's own ``<store>.<start>``
    name once renamed, would be ignored or overwritten: the open is refused, typed, and changes nothing."""
    damage(_filled(tmp_path, store_type))
    _refused(tmp_path, store_type, StoreStorageError, "store s")


# --- item 10: every segment is checked before any is opened -------------------------------------------------------


def _unknown_family(path: Path) -> None:
    put_rows(path, {"fromTheFuture": {b"k": b"v"}})


def _garbage_status(path: Path) -> None:
    put_rows(path, {"offsets": {b"status": b"\x07"}})


def _unclean(path: Path) -> None:
    put_rows(path, {"offsets": {b"status": (1).to_bytes(8, "big")}})


@pytest.mark.parametrize("store_type", TYPES)
@pytest.mark.parametrize("damage", [lose_current, truncate_manifest, _unknown_family, _garbage_status, _unclean])
def test_a_bad_newest_segment_refuses_the_open_before_any_segment_is_opened(tmp_path: Path, store_type: StoreType,
                                                                            damage: Any) -> None:
    """WS-31, SS-20, KV-23: the newest segment damaged, the store is refused, and no file of the healthy segments
    changed (no new MANIFEST, OPTIONS, LOG or table file)."""
    directory = _filled(tmp_path, store_type)
    damage(directory / "s.120000")
    _refused(tmp_path, store_type, ProcessorStateError, None)


# --- item 4: a deleted segment ------------------------------------------------------------------------------------


@pytest.mark.parametrize("store_type", TYPES)
@pytest.mark.parametrize("lost", ["s.0", "s.60000", "s.120000"])
def test_a_deleted_segment_refuses_the_open_while_offsets_claim_it(tmp_path: Path, store_type: StoreType,
                                                                   lost: str) -> None:
    """LAY-13: a segment named by the others' segment lists is gone while they hold a committed offset: the store
    would claim rows it lost, so the open is refused, typed, and changes nothing; wiped, it opens empty."""
    directory = _filled(tmp_path, store_type)
    shutil.rmtree(directory / lost)
    _refused(tmp_path, store_type, StoreCorruptedError, lost)
    shutil.rmtree(directory)  # what a wipe does (UPG-3); restore then rebuilds every segment
    store = _open(tmp_path, store_type)
    assert store.committed_offset(TP) is None
    store.close()


@pytest.mark.parametrize("store_type", [T.WINDOW, T.SESSION])
def test_a_deleted_segment_no_offset_claims_opens_with_a_warning(tmp_path: Path, store_type: StoreType,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    """LAY-13: with every committed offset wiped (``commit({})``, KV-53) nothing claims the lost rows: the store
    opens, and says which segment it lost."""
    directory = _filled(tmp_path, store_type)
    store = _open(tmp_path, store_type)
    store.commit({})
    store.close()
    shutil.rmtree(directory / "s.60000")
    with caplog.at_level(logging.WARNING, logger="kstate.stores"):
        store = _open(tmp_path, store_type)
    assert store.committed_offset(TP) is None
    assert _rows(store, store_type) == [b"k0", b"k2"]
    store.close()
    assert any("s.60000" in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize("store_type", [T.WINDOW, T.SESSION])
def test_expired_segments_are_not_taken_for_deleted_ones(tmp_path: Path, store_type: StoreType) -> None:
    """LAY-13, WS-8, SS-15: a segment the store dropped as expired leaves every segment list first: the store
    reopens, after a clean close and after a crash opened with ``ignore_invalid_state``."""
    directory = _filled(tmp_path, store_type)
    store = _open(tmp_path, store_type)
    _put(store, store_type, b"k3", 12 * MINUTE)  # earliest live segment: 2
    store.commit({TP: 8})
    assert sorted(p.name for p in directory.iterdir()) == ["s.120000", "s.720000"]
    _put(store, store_type, b"k4", 13 * MINUTE)  # segment 2 expires: dropped before any commit
    store.simulate_crash()
    assert sorted(p.name for p in directory.iterdir()) == ["s.720000", "s.780000"]
    reopened = open_bytes_store(store_type, Backend.ROCKSDB, name="s", state_dir=tmp_path,
                                ignore_invalid_state=True, options=_options(store_type))
    assert reopened.committed_offset(TP) == 8
    reopened.close()
    _open(tmp_path, store_type).close()


def test_segment_lists_name_every_segment(tmp_path: Path) -> None:
    """LAY-13: after a commit each segment holds the names of all, one a line, in id order."""
    directory = _filled(tmp_path, T.WINDOW)
    for name in ("s.0", "s.60000", "s.120000"):
        assert (directory / name / SEGMENT_LIST_SIDECAR).read_text() == "s.0\ns.60000\ns.120000\n"
