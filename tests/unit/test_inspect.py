"""``kstate inspect``: the read-only state-directory inspector (LAY-1..LAY-5, LAY-7, LAY-8, LAY-10, OFF-3, OFF-6, OFF-22).

Key-value stores are written by the reference stores; window, session and versioned stores, which the
reference does not build yet, are written directly with rocksdict from the codecs, at the LAY-2/LAY-3 paths.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from kstate.cli import main
from kstate.codecs import header_values, session_keys, timestamped, versioned, window_keys
from kstate.codecs.offsets import encode_offset_value, encode_status, write_checkpoint_text
from kstate.codecs.segments import segment_dir
from kstate.codecs.store_types import StoreType
from kstate.inspect import InspectError, NotAStateDirectoryError, dump_store, inspect_state_dir
from kstate.stores.api import Backend
from kstate.stores.engine import rocksdb_options
from kstate.stores.factory import open_kv_store

Rows = Mapping[str, Mapping[bytes, bytes]]
CLOSED = {b"status": encode_status(False)}


def write_db(path: Path, families: Rows) -> None:
    """A RocksDB with exactly these column families and rows (``default`` always exists)."""
    import rocksdict as rd

    path.mkdir(parents=True, exist_ok=True)
    names = set(families) | {"default"}
    db = rd.Rdict(str(path), rocksdb_options(), column_families={cf: rocksdb_options() for cf in names})
    for cf in names:
        handle = db.get_column_family(cf)
        for key, value in families.get(cf, {}).items():
            handle[key] = value
        del handle
    db.close()
    del db


def kv_store(state_dir: Path, store_type: StoreType, rows: dict[bytes, bytes], name: str = "s", task: str = "0_0",
             offset: int = 7) -> None:
    store = open_kv_store(store_type, Backend.ROCKSDB, name=name, state_dir=state_dir, task_id=task)
    for key, value in rows.items():
        store.put(key, value)
    store.commit({(f"app-{name}-changelog", int(task.split("_")[1])): offset})  # type: ignore[attr-defined]
    store.close()


def snapshot(root: Path) -> dict[str, tuple[str, int, str]]:
    """Every entry under ``root``: kind, mtime and content hash (files) or sorted listing (directories)."""
    out: dict[str, tuple[str, int, str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        d = Path(dirpath)
        out[str(d)] = ("dir", d.stat().st_mtime_ns, ",".join(sorted(dirnames + filenames)))
        for name in filenames:
            p = d / name
            out[str(p)] = ("file", p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
    return out


def task_dir(root: Path, task: str = "0_0") -> Path:
    return root / "app" / task


def window_dir(root: Path, name: str, families_by_segment: dict[int, Rows], interval: int = 60_000) -> None:
    for segment_id, families in families_by_segment.items():
        write_db(task_dir(root) / segment_dir(name, segment_id, interval), families)


def by_name(report: Any) -> dict[str, Any]:
    return {s.name: s for t in report.tasks for s in t.stores}


# --- directories of every store type ----------------------------------------------------------------


def build_all_types(root: Path) -> None:
    kv_store(root, StoreType.KEY_VALUE, {b"a": b"1", b"b": b"2"}, name="plain")
    kv_store(root, StoreType.TIMESTAMPED_KV, {b"a": timestamped.encode_value_and_timestamp(b"1", 5) or b""}, name="ts")
    kv_store(root, StoreType.TIMESTAMPED_KV_WITH_HEADERS,
             {b"a": header_values.encode_value_timestamp_headers(b"1", 5, [("h", b"x")]) or b""}, name="hdr")
    config = versioned.store_config(10_000, 1_000)
    key = versioned.KeyVersions(config)
    key.put(b"v1", 100)
    key.put(b"v2", 2_500)
    write_db(task_dir(root) / "rocksdb" / "ver", {"default": dict(key.physical_rows(b"k")), "offsets": CLOSED})
    plain_window = window_keys.PLAIN.to_store_key(b"k", 60_500, 0)
    window_dir(root, "win", {1: {"default": {plain_window: b"w"}, "offsets": CLOSED}})
    window_dir(root, "twin", {1: {"keyValueWithTimestamp": {
        plain_window: timestamped.encode_value_and_timestamp(b"w", 60_500) or b""}, "offsets": CLOSED}})
    window_dir(root, "hwin", {1: {"keyValueWithTimestampAndHeaders": {
        plain_window: header_values.encode_value_timestamp_headers(b"w", 60_500, [("h", b"y")]) or b""}}})
    ordered = window_keys.TIME_FIRST.to_store_key(b"k", 60_500, 0)
    window_dir(root, "owin", {1: {"windowKeyValueWithHeaders": {
        ordered: header_values.encode_aggregation_with_headers(b"w", [("h", None)]) or b""}}})
    session = session_keys.PLAIN.to_store_key(b"k", 60_100, 61_000)
    window_dir(root, "sess", {1: {"default": {session: b"agg"}, "offsets": CLOSED}})
    window_dir(root, "hsess", {1: {"sessionKeyValueWithHeaders": {
        session: header_values.encode_aggregation_with_headers(b"agg", [("h", b"z")]) or b""}}})


EXPECTED_TYPES = {
    "plain": "kv", "ts": "timestamped_kv", "hdr": "timestamped_kv_with_headers", "ver": "versioned_kv",
    "win": "window", "twin": "timestamped_window", "hwin": "timestamped_window_with_headers",
    "owin": "time_ordered_window_with_headers", "sess": "session", "hsess": "session_with_headers",
}


@pytest.fixture(scope="module")
def all_types(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("all-types")
    build_all_types(root)
    return root


def test_detects_every_store_type(all_types: Path) -> None:
    """LAY-2, LAY-3, LAY-5: each type from its families, segment directories and value formats."""
    report = inspect_state_dir(all_types)
    assert {name: s.store_type for name, s in by_name(report).items()} == EXPECTED_TYPES
    assert report.clean, report.violations
    stores = by_name(report)
    assert [db.segment_start for db in stores["win"].databases] == [60_000]
    assert stores["plain"].rows == 2
    assert stores["plain"].databases[0].committed_offsets == {"app-plain-changelog-0": 7}
    assert stores["plain"].databases[0].status == "closed"


def test_dump_decodes_each_type(all_types: Path) -> None:
    """LAY-2, LAY-3: rows decoded per type: timestamp, headers, window, session, versions."""
    rows = {name: list(dump_store(all_types, name)) for name in EXPECTED_TYPES}
    assert rows["hdr"][0]["headers"] == [["h", "x"]] and rows["hdr"][0]["timestamp"] == 5
    assert rows["twin"][0]["window"] == {"start": 60_500} and rows["twin"][0]["timestamp"] == 60_500
    assert rows["owin"][0]["key"] == "k" and rows["owin"][0]["headers"] == [["h", None]]
    assert rows["sess"][0]["session"] == {"start": 60_100, "end": 61_000} and rows["sess"][0]["value"] == "agg"
    assert rows["hsess"][0]["headers"] == [["h", "z"]]
    ver = {r["segment"]: r for r in rows["ver"]}
    assert ver["latest"]["value"] == "v2" and ver["latest"]["timestamp"] == 2_500
    segment_rows = [r for s, r in ver.items() if s != "latest"]
    assert segment_rows[0]["versions"] == [{"valid_from": 100, "valid_to": 2_500, "value": "v1"}]
    assert all("error" not in r for rs in rows.values() for r in rs)


def test_never_writes_to_the_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The inspector opens copies: names, bytes and mtimes of every entry are unchanged."""
    build_all_types(tmp_path)
    (task_dir(tmp_path) / "s.position").write_bytes(write_checkpoint_text([("in", 0, 3)]) or b"")
    before = snapshot(tmp_path)
    inspect_state_dir(tmp_path)
    for name in EXPECTED_TYPES:
        list(dump_store(tmp_path, name))
    main(["inspect", str(tmp_path), "--json"])
    main(["inspect", str(tmp_path), "--dump", "hdr"])
    capsys.readouterr()
    assert snapshot(tmp_path) == before


def test_plain_window_and_session_are_told_apart_by_their_keys(tmp_path: Path) -> None:
    """LAY-3: [key][ts][seqnum] against [key][end][start], each read inside its segment's range."""
    keys = [window_keys.PLAIN.to_store_key(b"key%d" % i, 120_000 + i, 1)
            for i in range(3)]
    window_dir(tmp_path, "a", {2: {"default": dict.fromkeys(keys, b"v")}})
    sessions = [session_keys.PLAIN.to_store_key(b"key%d" % i, 100 + i, 120_000 + i)
                for i in range(3)]
    window_dir(tmp_path, "b", {2: {"default": dict.fromkeys(sessions, b"v")}})
    stores = by_name(inspect_state_dir(tmp_path))
    assert stores["a"].store_type == "window"
    assert stores["b"].store_type == "session"


def test_plain_kv_with_non_versioned_rows_is_kv(tmp_path: Path) -> None:
    """LAY-2, VER-1: a default-only database is versioned only if every key and row reads as VER-1..VER-3."""
    write_db(task_dir(tmp_path) / "rocksdb" / "x", {"default": {b"\xff" * 8 + b"k": b"\x00" * 8,
                                                               b"short": b"v"}})
    assert by_name(inspect_state_dir(tmp_path))["x"].store_type == "kv"


# --- violations and states --------------------------------------------------------------------------


def kinds(report: Any) -> set[tuple[str, str]]:
    return {(v.rule, v.kind) for v in report.violations}


def test_unknown_column_family(tmp_path: Path) -> None:
    """LAY-5: a family Kafka does not open is reported."""
    write_db(task_dir(tmp_path) / "rocksdb" / "s", {"default": {b"k": b"v"}, "__offsets": {}})
    assert ("LAY-5", "unknown-column-family") in kinds(inspect_state_dir(tmp_path))


def test_mixed_plain_and_timestamped_data(tmp_path: Path) -> None:
    """LAY-8: a headers store with data in `default` and a `keyValueWithTimestamp` family is refused."""
    write_db(task_dir(tmp_path) / "rocksdb" / "s", {
        "default": {b"k": b"plain"},
        "keyValueWithTimestamp": {},
        "keyValueWithTimestampAndHeaders": {b"j": header_values.encode_value_timestamp_headers(b"v", 1, None) or b""},
    })
    report = inspect_state_dir(tmp_path)
    assert ("LAY-8", "mixed-plain-and-timestamped") in kinds(report)
    assert main(["inspect", str(tmp_path)]) == 1


def test_upgrade_mode_is_reported_not_refused(tmp_path: Path) -> None:
    """LAY-7: a timestamped store with legacy rows in `default` opens in upgrade mode; no violation."""
    write_db(task_dir(tmp_path) / "rocksdb" / "s", {"default": {b"k": b"plain"}, "keyValueWithTimestamp": {}})
    report = inspect_state_dir(tmp_path)
    assert report.clean and by_name(report)["s"].mode == "upgrade"


def test_stale_legacy_files(tmp_path: Path) -> None:
    """LAY-1, LAY-4, OFF-22: a task-level .lock, a position file and a per-store checkpoint beside an offsets CF."""
    kv_store(tmp_path, StoreType.KEY_VALUE, {b"a": b"1"})
    (task_dir(tmp_path) / ".lock").write_bytes(b"")
    (task_dir(tmp_path) / "s.position").write_bytes(write_checkpoint_text([("in", 0, 3)]) or b"")
    (task_dir(tmp_path) / ".checkpoint_s").write_bytes(write_checkpoint_text([("app-s-changelog", 0, 3)]) or b"")
    report = inspect_state_dir(tmp_path)
    assert {("LAY-1", "stale-legacy-file"), ("OFF-22", "stale-legacy-file"), ("LAY-4", "stale-legacy-file")} \
        <= kinds(report)
    assert by_name(report)["s"].position_file == {"in": {0: 3}}


def test_pre_43_store_with_legacy_files_is_clean(tmp_path: Path) -> None:
    """LAY-4, OFF-13: a store without `offsets`, with .checkpoint and .position, is a valid pre-4.3 layout."""
    write_db(task_dir(tmp_path) / "rocksdb" / "s", {"default": {b"k": b"v"}})
    (task_dir(tmp_path) / ".checkpoint").write_bytes(write_checkpoint_text([("app-s-changelog", 0, 9)]) or b"")
    (task_dir(tmp_path) / "s.position").write_bytes(write_checkpoint_text([("in", 0, 3)]) or b"")
    report = inspect_state_dir(tmp_path)
    assert report.clean, report.violations
    assert report.tasks[0].checkpoint == {"app-s-changelog-0": 9}


def test_undecodable_rows_and_bad_offsets(tmp_path: Path) -> None:
    """LAY-5, OFF-3: a timestamped row shorter than its timestamp; an offset that is not 8 bytes."""
    write_db(task_dir(tmp_path) / "rocksdb" / "s", {"keyValueWithTimestamp": {b"k": b"abc"},
                                                   "offsets": {b"t-0": b"\x01"}})
    assert {("LAY-5", "undecodable-row"), ("OFF-3", "bad-offsets-entry")} <= kinds(inspect_state_dir(tmp_path))


def test_unclean_shutdown(tmp_path: Path) -> None:
    """OFF-6: status OPEN is an unclean shutdown, reported per database."""
    write_db(task_dir(tmp_path) / "rocksdb" / "s", {"default": {b"k": b"v"},
                                                   "offsets": {b"status": encode_status(True),
                                                               b"app-s-changelog-0": encode_offset_value(4)}})
    store = by_name(inspect_state_dir(tmp_path))["s"]
    assert store.databases[0].unclean
    assert store.databases[0].committed_offsets == {"app-s-changelog-0": 4}


def test_bad_segment_name_and_corrupt_database_are_reported_per_store(tmp_path: Path) -> None:
    """LAY-3: a segment name Kafka skips; a corrupt database is reported and the walk continues."""
    window_dir(tmp_path, "w", {1: {"default": {}}})
    (task_dir(tmp_path) / "w" / "w-notadate").mkdir()
    write_db(task_dir(tmp_path) / "rocksdb" / "broken", {"default": {b"k": b"v"}})
    (task_dir(tmp_path) / "rocksdb" / "broken" / "CURRENT").write_bytes(b"MANIFEST-999999\n")
    kv_store(tmp_path, StoreType.KEY_VALUE, {b"a": b"1"}, name="fine")
    report = inspect_state_dir(tmp_path)
    assert {("LAY-3", "bad-segment-name"), ("LAY-2", "unreadable-store")} <= kinds(report)
    assert by_name(report)["fine"].store_type == "kv"
    assert by_name(report)["broken"].databases[0].error


def test_a_store_held_open_by_another_process_is_read(tmp_path: Path) -> None:
    """A running instance holds the LOCK; the inspector reads a copy and does not need it."""
    kv_store(tmp_path, StoreType.KEY_VALUE, {b"a": b"1"})
    holder = textwrap.dedent(f"""
        import sys, rocksdict as rd
        from kstate.stores.engine import RocksDBEngine
        engine = RocksDBEngine({str(task_dir(tmp_path) / 'rocksdb' / 's')!r})
        print('ready', flush=True)
        sys.stdin.read()
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen([sys.executable, "-c", holder], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        report = inspect_state_dir(tmp_path)
        assert by_name(report)["s"].rows == 1 and report.clean
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)


# --- the command ------------------------------------------------------------------------------------


def test_json_output_and_exit_codes(all_types: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--json`` is one document; exit 0 clean, 1 violations, 2 not a state directory."""
    assert main(["inspect", str(all_types), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    types = {s["name"]: s["type"] for t in document["tasks"] for s in t["stores"]}
    assert types == EXPECTED_TYPES and document["clean"] is True
    assert main(["inspect", str(tmp_path)]) == 2
    (tmp_path / "nothing").mkdir()
    with pytest.raises(NotAStateDirectoryError):
        inspect_state_dir(tmp_path / "nothing")
    assert main(["inspect", str(tmp_path / "missing")]) == 2
    write_db(task_dir(tmp_path) / "rocksdb" / "s", {"default": {}, "bogus": {}})
    capsys.readouterr()
    assert main(["inspect", str(tmp_path), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["violations"][0]["kind"] == "unknown-column-family"


def test_dump_json_lines_and_table(all_types: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--dump STORE --json`` prints one decoded row per line; the table names the columns; unknown store: 2."""
    assert main(["inspect", str(all_types), "--dump", "hsess", "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1
    row = json.loads(lines[0])
    assert row["session"] == {"start": 60_100, "end": 61_000} and row["headers"] == [["h", "z"]]
    assert main(["inspect", str(all_types), "--dump", "ts"]) == 0
    out = capsys.readouterr().out
    assert "timestamp" in out and "keyValueWithTimestamp" in out
    assert main(["inspect", str(all_types), "--dump", "nope"]) == 2


def test_global_stores_named_topologies_and_legacy_segment_names(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """LAY-1: global/ and __topology__/ task directories are walked; LAY-3: a date-form segment is a note."""
    write_db(tmp_path / "app" / "global" / "rocksdb" / "g", {"default": {b"k": b"v"}})
    write_db(tmp_path / "app" / "__t__" / "1_2" / "rocksdb" / "n", {"default": {b"k": b"v"}})
    write_db(task_dir(tmp_path) / "w" / "w-202601010000", {"default": {}})
    report = inspect_state_dir(tmp_path)
    assert {(t.task, s.name) for t in report.tasks for s in t.stores} == {("global", "g"), ("1_2", "n"), ("0_0", "w")}
    assert any("w-202601010000" in note and "renames" in note for note in report.notes)
    assert report.clean
    assert main(["inspect", str(tmp_path), "--dump", "n", "--task", "0_0"]) == 2
    assert main(["inspect", str(tmp_path), "--dump", "n", "--task", "1_2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["value"] == "v"


def test_plain_time_ordered_window_store(tmp_path: Path) -> None:
    """LAY-3, LAY-5: a default-only window store with time-first base and key-first index rows (WIN-2, WIN-3)."""
    base = window_keys.TIME_FIRST.to_store_key(b"key", 180_001, 0)
    index = window_keys.KEY_FIRST.to_store_key(b"key", 180_001, 0)
    window_dir(tmp_path, "o", {3: {"default": {base: b"v", index: b""}}})
    report = inspect_state_dir(tmp_path)
    assert by_name(report)["o"].store_type == "time_ordered_window" and report.clean
    rows = list(dump_store(tmp_path, "o"))
    assert [(r["key"], r["window"], r["value"]) for r in rows] == [("key", {"start": 180_001}, "v"),
                                                                    ("key", {"start": 180_001}, "")]


def test_a_missing_path_does_not_exist_and_a_file_is_not_a_directory(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(tmp_path / "absent")]) == 2
    assert "absent does not exist" in capsys.readouterr().err
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotAStateDirectoryError, match="is not a directory"):
        list(dump_store(tmp_path / "file", "store"))


@pytest.mark.rules("UPG-7", "LAY-8")
def test_the_state_a_refused_kafka_headers_open_leaves_is_named_with_the_way_out(tmp_path: Path) -> None:
    """Kafka 4.4.0 creates an empty keyValueWithTimestampAndHeaders before it refuses a half-migrated directory as the
    header store; inspect names that state, that Kafka now refuses it as the timestamped store too, and the way out."""
    families: dict[str, dict[bytes, bytes]] = {"default": {b"a": b"1"}, "keyValueWithTimestamp": {b"b": bytes(8) + b"2"},
                                               "offsets": {b"status": encode_status(False)}}
    write_db(task_dir(tmp_path) / "rocksdb" / "half", families)
    assert not any("half-migrated" in w for w in inspect_state_dir(tmp_path).warnings)  # before the refused open
    write_db(task_dir(tmp_path) / "rocksdb" / "s", {**families, "keyValueWithTimestampAndHeaders": {}})
    report = inspect_state_dir(tmp_path)
    warning = next(w for w in report.warnings if "rocksdb/s:" in w)
    assert "half-migrated" in warning and "empty keyValueWithTimestampAndHeaders" in warning, warning
    assert "timestamped store" in warning and "headers-aware store" in warning, warning
    assert "restore it from its changelog topic" in warning and "drop_column_family" in warning, warning


def test_json_line_is_json_dumps_sorted(all_types: Path) -> None:
    """``--dump --json`` writes rows with json_line (issue 35): the bytes of ``json.dumps(row, sort_keys=True)`` for
    every decoded row of every store type, and for the field kinds rows may hold (non-ASCII and control text, big
    and negative integers, booleans, floats, nested lists and dicts)."""
    from kstate.inspect import json_line

    rows: list[dict[str, Any]] = [row for name in EXPECTED_TYPES for row in dump_store(all_types, name)]
    assert len(rows) >= len(EXPECTED_TYPES)
    rows += [
        {"key": "é\u2028\"\\\n\x00😀", "timestamp": -(1 << 63), "b": True, "f": 1.5, "n": None,
         "headers": [["h", None], ["ü", "0x00"]], "window": {"start": 3, "end": 1 << 70}, "z": [], "a": {}},
        {}, {"value": ""}, {"x": 2**64, "y": False, "nan": float("inf")}, {1: "a", 2: None},
        {"key": 1, "value": "a"}, {"key": "1", "value": ["a"]},  # one shape, other kinds of value
    ]
    for row in rows:
        assert json_line(row) == json.dumps(row, sort_keys=True), row


def test_dump_text_of_binary_keys_is_hex() -> None:
    """A dumped key or value that is not printable UTF-8 shows as ``0x`` and hex (LAY-5), encoded surrogates and
    truncated sequences included; printable text as itself, unless it starts with ``0x``."""
    from kstate.inspect.state_dir import display_text as _text

    assert _text(b"abc") == "abc" and _text("é😀".encode()) == "é😀"
    for raw in (b"\xff\x00", b"\xed\xa0\x80", b"\xc3", b"a\x00", b"0x12", b"\xe2\x82"):
        assert _text(raw) == "0x" + raw.hex()
    assert _text(None) is None


def test_dump_text_skips_decoding_only_where_a_control_byte_rules_it_out() -> None:
    """The hex form given without decoding (a C0 control or DEL byte, issue 35) is the decoding's own answer: for
    every byte after every lead, and for random byte strings, _text equals the decode-and-check it replaces."""
    import random

    from kstate.inspect.state_dir import display_text as _text

    def decoded(data: bytes) -> str:
        text = data.decode("utf-8", "surrogateescape")
        return text if text.isprintable() and not text.startswith("0x") else "0x" + data.hex()

    rng = random.Random(35)
    samples = [bytes([a, b]) for a in range(256) for b in (0x00, 0x1f, 0x20, 0x7f, 0x80, 0xbf, 0xc3, 0xff)]
    samples += [rng.randbytes(rng.randrange(1, 24)) for _ in range(3000)]
    samples += [b"x" * n + bytes([c]) for n in (0, 3) for c in range(0x80)]
    for data in samples:
        assert _text(data) == decoded(data), data


def test_dump_reads_no_database_whole(all_types: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dump streams every store type's rows and detects its type holding one row at a time (issue 35): it never
    lists a database's rows (read_database), and prints what it printed before."""
    from kstate.inspect import dump_store_lines, state_dir

    before = {name: list(dump_store_lines(all_types, name)) for name in EXPECTED_TYPES}
    monkeypatch.setattr(state_dir, "read_database", lambda *_: pytest.fail("a dump listed a database's rows"))
    assert {name: list(dump_store_lines(all_types, name)) for name in EXPECTED_TYPES} == before


def test_dump_store_lines_are_json_lines_of_the_rows(all_types: Path, tmp_path: Path) -> None:
    """``--dump --json`` prints dump_store_lines (issue 35): json_line of each dump_store row, in order, for every
    store type, and for timestamped key-value rows written straight from their bytes: binary, ``0x`` and non-ASCII
    keys and values, negative timestamps, and a value too short for its timestamp (its error row, TSKV-1, LAY-5)."""
    from kstate.inspect import dump_store_lines, json_line

    for name in EXPECTED_TYPES:
        assert list(dump_store_lines(all_types, name)) == [json_line(r) for r in dump_store(all_types, name)], name
    rows = {b"k": b"\x00" * 8 + b"v", b"\xff\x00": b"\x80" * 8 + b"\xfe", b"0x1": b"\x01" * 8 + b"0xab",
            "ü\"".encode(): b"\x00" * 8 + "é\n".encode(), b"short": b"\x00\x01", b"": b"\x00" * 8}
    for task in ("0_0", "1_3"):
        write_db(tmp_path / "app" / task / "rocksdb" / "t", {"keyValueWithTimestamp": rows})
    lines = list(dump_store_lines(tmp_path, "t"))
    assert lines == [json_line(r) for r in dump_store(tmp_path, "t")]
    assert len(lines) == 2 * len(rows) and sum('"error": ' in line for line in lines) == 2
    assert list(dump_store_lines(tmp_path, "t", task="1_3")) == lines[len(rows):]
    with pytest.raises(InspectError):
        list(dump_store_lines(tmp_path, "nope"))
