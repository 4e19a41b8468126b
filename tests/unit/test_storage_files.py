"""Unit tests of the on-disk checkpoint and position files (OFF-13 to OFF-20)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kstate import storage_files as sf
from kstate.errors import DecodeError, EncodeError


def test_write_then_read(tmp_path: Path) -> None:
    path = tmp_path / ".checkpoint"
    assert sf.write_checkpoint_file(path, {("t", 0): 5, ("u", 1): -4}) is True
    assert path.read_bytes() == b"0\n2\nt 0 5\nu 1 -4\n"
    assert sf.read_checkpoint_file(path) == {("t", 0): 5, ("u", 1): -4}
    assert sf.read_checkpoint_file(path, unknown_as_none=True) == {("t", 0): 5, ("u", 1): None}
    assert not (tmp_path / ".checkpoint.tmp").exists()


def test_empty_map_deletes_and_missing_reads_empty(tmp_path: Path) -> None:
    path = tmp_path / ".checkpoint"
    assert sf.write_checkpoint_file(path, []) is False and not path.exists()
    sf.write_checkpoint_file(path, [("t", 0, 1)])
    assert sf.write_checkpoint_file(path, {}) is False and not path.exists()
    assert sf.read_checkpoint_file(path) == {}
    sf.delete_checkpoint_file(path)


def test_refused_write_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    path = tmp_path / ".checkpoint"
    sf.write_checkpoint_file(path, [("t", 0, 1)])
    with pytest.raises(EncodeError):
        sf.write_checkpoint_file(path, [("t", 0, 2), ("u", 0, -1)])
    assert path.read_bytes() == b"0\n1\nt 0 1\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".checkpoint"]


def test_a_stale_fixed_name_temp_file_is_never_written_through(tmp_path: Path) -> None:
    # The temporary file has a random name (LAY-15): Kafka's fixed <file>.tmp left by a crash is not opened.
    path = tmp_path / ".checkpoint"
    (tmp_path / ".checkpoint.tmp").write_bytes(b"garbage that is longer than the new file")
    sf.write_checkpoint_file(path, [("t", 0, 1)])
    assert path.read_bytes() == b"0\n1\nt 0 1\n"
    assert (tmp_path / ".checkpoint.tmp").read_bytes() == b"garbage that is longer than the new file"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".checkpoint", ".checkpoint.tmp"]


def test_write_is_fsynced_before_the_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append("fsync")
        real_fsync(fd)

    def replace(src: str | Path, dst: str | Path) -> None:
        events.append("replace")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    sf.write_checkpoint_file(tmp_path / ".checkpoint", [("t", 0, 1)])
    assert events[:2] == ["fsync", "replace"]


def test_corrupt_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / ".checkpoint"
    path.write_bytes(b"0\n2\nt 0 1\n")
    with pytest.raises(DecodeError):
        sf.read_checkpoint_file(path)


def test_position_files(tmp_path: Path) -> None:
    assert sf.write_position_file(tmp_path, "s", {"in": {0: 5, 1: 6}}) is True
    assert sf.position_file_path(tmp_path, "s").name == "s.position"
    assert sf.read_position_file(tmp_path, "s") == {"in": {0: 5, 1: 6}}
    assert sf.write_position_file(tmp_path, "s", {"in": {}}) is False
    assert not sf.position_file_path(tmp_path, "s").exists()
    assert sf.read_position_file(tmp_path, "s") == {}


def test_downgrade_checkpoint(tmp_path: Path) -> None:
    assert sf.write_downgrade_checkpoint(tmp_path, {("t", 0): None, ("t", 1): 9}) is True
    assert sf.task_checkpoint_path(tmp_path).read_bytes() == b"0\n2\nt 0 -4\nt 1 9\n"
    assert sf.write_downgrade_checkpoint(tmp_path, {}) is False
    assert not sf.task_checkpoint_path(tmp_path).exists()
