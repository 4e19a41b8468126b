"""What ``kstate audit`` prints when the changelog lost its records (issue 34): the verdict first, then once per
partition that the changelog partition is empty or that its log-start offset is above 0 (deleted by retention?),
not one "unexpected" line per entry of the store; and a count on each progress stage."""

from __future__ import annotations

from pathlib import Path

import pytest

from kstate.cli import main
from kstate.spark.audit_command import changelog_notes
from kstate.spark.oracle import AuditReport, Difference
from kstate_conformance import rules


def _unexpected(partition: int, n: int) -> list[Difference]:
    return [Difference(partition, f"key-{i:05d}".encode(), None, b"\0" * 8 + b"v") for i in range(n)]


def _audit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, offsets: dict[int, tuple[int, int]],
           report: AuditReport) -> list[str]:
    monkeypatch.setattr("kstate.kafka.client_config.check_reachable", lambda *a, **k: sorted(offsets))
    monkeypatch.setattr("kstate.kafka.client_config.partition_offsets", lambda *a, **k: offsets)
    monkeypatch.setattr("kstate.spark.oracle.audit", lambda *a, **k: report)
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    return ["audit", "--bootstrap", "127.0.0.1:1", "--application-id", "app", "--store", "s", "--store-type",
            "timestamped_kv", "--state-dir", str(state), "--engine", "python"]


@rules("CL-16")
def test_an_emptied_changelog_is_said_once_after_the_verdict(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    report = AuditReport("python", 0, 0, 3000, [*_unexpected(0, 1500), *_unexpected(1, 1500)])
    assert main(_audit(tmp_path, monkeypatch, {0: (1500, 1500), 1: (1400, 1500)}, report)) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("python oracle: 0 changelog records"), out[:3]
    assert out[2].startswith("partition 0: the changelog partition is empty: its log-start offset is 1500"), out[2]
    assert "deleted by retention" in out[2] or "deleted (by retention" in out[2], out[2]
    assert "1500 entries of it read as unexpected (not listed)" in out[2], out[2]
    assert out[3].startswith("partition 1: the changelog partition's log-start offset is 1400, above 0"), out[3]
    assert not [line for line in out if "(unexpected)" in line], out[:10]
    assert len(out) == 4, out


def test_differences_the_offsets_do_not_explain_are_still_listed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    missing = Difference(0, b"k", b"\0" * 8 + b"v", None)
    report = AuditReport("python", 10, 1, 2, [missing, *_unexpected(0, 1)])
    assert main(_audit(tmp_path, monkeypatch, {0: (0, 10)}, report)) == 1
    out = capsys.readouterr().out.splitlines()
    assert [line for line in out if line.startswith("partition")] == [str(d) for d in report.differences], out


def test_the_notes_tell_empty_from_truncated_from_whole() -> None:
    notes = changelog_notes({0: (0, 0), 1: (7, 7), 2: (3, 9), 3: (0, 9)})
    assert notes[0].startswith("the changelog partition is empty: no record was ever written")
    assert "log-start offset is 7, its end offset" in notes[1]
    assert "log-start offset is 3, above 0" in notes[2]
    assert 3 not in notes


def test_each_progress_stage_shows_a_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    def fake_audit(*args: object, progress: object = None, **kwargs: object) -> AuditReport:
        assert callable(progress)
        progress("reading the changelog")
        progress("computing the expected state")
        progress.note("1200 changelog records read")  # type: ignore[attr-defined]
        return AuditReport("python", 1200, 0, 0)

    _audit(tmp_path, monkeypatch, {0: (0, 700), 1: (200, 900)}, AuditReport("python", 0, 0, 0))
    monkeypatch.setattr("kstate.spark.oracle.audit", fake_audit)
    args = _audit(tmp_path, monkeypatch, {0: (0, 700), 1: (200, 900)}, AuditReport("python", 0, 0, 0))
    monkeypatch.setattr("kstate.spark.oracle.audit", fake_audit)
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "audit s: reading the changelog (2 partitions, up to 1400 records by their offsets)" in err, err
    assert "audit s: computing the expected state (1200 changelog records read)" in err, err
    assert "audit s: reading stores (0 entries from 0 partitions)" in err, err
