"""What ``kstate inspect`` and the audit's store-type detection tell an operator about a real application's state
directory (issue 34): an application directory holding Kafka Streams' ``.lock`` and process metadata is inspected
whole or task by task without a crash, its note says what it is, and a damaged table is named as the user's file,
said once, on a page of sane width (LAY-1, LAY-2, LAY-5)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kstate.codecs.layout import LOCK_FILE, PROCESS_METADATA_FILE
from kstate.codecs.store_types import StoreType
from kstate.inspect import inspect_state_dir
from kstate.spark.audit_command import _detect_audit_store_type
from kstate.stores.api import Backend
from kstate.stores.factory import open_kv_store
from kstate.terminal import TABLE_WIDTH
from kstate_conformance import rules

PROCESS_ID = "4c0d2a5e-0e5e-4a57-9ad1-1c0c1bfc4ea2"


def _application(state_dir: Path, application_id: str = "opkv", tasks: tuple[str, ...] = ("0_0", "0_1")) -> Path:
    """A state directory as a Kafka Streams instance leaves it: the application directory with its ``.lock`` and
    ``kafka-streams-process-metadata`` (StateDirectory), one timestamped store ``counts`` per task."""
    app = state_dir / application_id
    app.mkdir(parents=True)
    (app / LOCK_FILE).write_bytes(b"")
    (app / PROCESS_METADATA_FILE).write_text(json.dumps({"version": 0, "processId": PROCESS_ID}))
    for task in tasks:
        store = open_kv_store(StoreType.TIMESTAMPED_KV, Backend.ROCKSDB, name="counts", state_dir=state_dir,
                              task_id=task, application_id=application_id)
        for i in range(20):
            store.put(f"k{i}".encode(), bytes(8) + b"v")
        store.commit({(f"{application_id}-counts-changelog", int(task.split("_")[1])): 19})  # type: ignore[attr-defined]
        store.close()
    return app


@rules("LAY-5", "LAY-1")
@pytest.mark.parametrize("absolute", [False, True], ids=["relative", "absolute"])
def test_the_audit_detects_the_store_type_beside_kafka_streams_lock_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, absolute: bool) -> None:
    """The README's audit example without ``--store-type``: it crashed with a ValueError from the application
    directory's note, for a relative and an absolute ``--state-dir`` alike."""
    _application(tmp_path / "op" / "state")
    monkeypatch.chdir(tmp_path)
    state_dir = str(tmp_path / "op" / "state") if absolute else "op/state"
    store_type, evidence = _detect_audit_store_type([state_dir], "opkv", "counts")
    assert store_type == "timestamped_kv", evidence


@rules("LAY-1")
def test_a_task_directory_is_inspected_alone_and_its_application_is_named(tmp_path: Path) -> None:
    app = _application(tmp_path)
    report = inspect_state_dir(app / "0_1")
    assert [t.task for t in report.tasks] == ["0_1"]
    assert any(str(app) in note for note in report.notes), report.notes


@rules("LAY-1")
def test_the_application_note_says_what_the_directory_is(tmp_path: Path) -> None:
    _application(tmp_path)
    (note,) = inspect_state_dir(tmp_path).notes
    assert note.startswith("opkv: application.id 'opkv'"), note
    assert PROCESS_ID in note and "2 tasks: 0_0, 0_1" in note and "--application-id opkv" in note, note


def _short_table(tmp_path: Path) -> Path:
    """An application whose task 0_0 store has its table file cut short."""
    _application(tmp_path, tasks=("0_0",))
    db = tmp_path / "opkv" / "0_0" / "rocksdb" / "counts"
    tables = sorted(db.glob("*.sst"))
    assert tables, f"no table file in {db}: {sorted(p.name for p in db.iterdir())}"
    with tables[0].open("r+b") as table:
        table.truncate(tables[0].stat().st_size // 2)
    return tables[0]


@rules("LAY-2")
def test_a_short_table_file_is_named_as_the_users_file_once(tmp_path: Path) -> None:
    short = _short_table(tmp_path)
    report = inspect_state_dir(tmp_path)
    (violation,) = [v for v in report.violations if v.kind == "unreadable-store"]
    assert "kstate-read-" not in violation.message, violation.message
    assert str(short) in violation.message, violation.message
    assert "may be corrupted" not in violation.message, violation.message
    assert "truncated" in violation.message, violation.message


@rules("LAY-2")
def test_the_table_written_to_a_file_is_a_page_wide(tmp_path: Path) -> None:
    _short_table(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    done = subprocess.run([sys.executable, "-m", "kstate.cli", "inspect", str(tmp_path)], capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= TABLE_WIDTH, "\n".join(lines)
    assert any("opkv: application.id" in line for line in lines), done.stdout
