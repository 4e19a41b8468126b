"""``kstate vectors check``: the recorded Kafka vectors all replay; bad files and mismatches are reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kstate.cli import main


def test_every_recorded_kafka_vector_matches(shared_vectors: Path, tmp_path: Path) -> None:
    junit = tmp_path / "vectors.xml"
    assert main(["vectors", "check", str(shared_vectors), "--junit", str(junit)]) == 0
    assert "<testsuite" in junit.read_text()


def _vector_file(tmp_path: Path, vectors: list[dict[str, object]]) -> Path:
    path = tmp_path / "v.json"
    path.write_text(json.dumps({"schema_version": 1, "vectors": vectors}))
    return path


def test_a_wrong_output_is_a_mismatch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _vector_file(tmp_path, [{"group": "varint", "case": "c", "op": "ByteUtils.writeVarint",
                                    "input": {"value": 1}, "output": {"bytes": "01", "size": 1}}])
    assert main(["vectors", "check", str(path)]) == 1
    assert "mismatched" in capsys.readouterr().out


def test_an_unknown_java_method_is_unsupported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _vector_file(tmp_path, [{"group": "x", "case": "c", "op": "Nope.nothing", "input": {}, "output": {}}])
    assert main(["vectors", "check", str(path)]) == 1
    assert "unsupported" in capsys.readouterr().out


def test_an_expected_exception_matches_a_typed_refusal(tmp_path: Path) -> None:
    path = _vector_file(tmp_path, [{"group": "varint", "case": "c", "op": "ByteUtils.readVarint",
                                    "input": {"bytes": "80"}, "output": {"exception": "java.nio.BufferUnderflowException"}}])
    assert main(["vectors", "check", str(path)]) == 0


def test_a_reference_crash_is_reported_not_raised(tmp_path: Path) -> None:
    path = _vector_file(tmp_path, [{"group": "varint", "case": "c", "op": "ByteUtils.writeVarint",
                                    "input": {"wrong_field": 1}, "output": {"bytes": "02", "size": 1}}])
    assert main(["vectors", "check", str(path)]) == 1


@pytest.mark.parametrize("content", ["not json", "[]", '{"vectors": [{"group": "g"}]}'])
def test_a_malformed_vector_file_is_a_clear_error(tmp_path: Path, content: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    assert main(["vectors", "check", str(path)]) == 2
    assert "error" in capsys.readouterr().err


def test_a_file_without_vectors_is_a_setup_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _vector_file(tmp_path, [])
    assert main(["vectors", "check", str(path)]) == 2
    assert "holds no vectors" in capsys.readouterr().err


def test_the_table_is_not_cut_outside_a_terminal(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = _vector_file(tmp_path, [{"group": "a-rather-long-group-name-for-a-narrow-log", "case": "c",
                                    "op": "ByteUtils.writeUnsignedVarlong", "input": {"value": 1},
                                    "output": {"bytes": "01", "size": 1}}])
    env = {k: v for k, v in __import__("os").environ.items() if k != "COLUMNS"}
    result = subprocess.run([sys.executable, "-m", "kstate.cli", "vectors", "check", str(path)], capture_output=True,
                            text=True, env=env, check=False)
    assert result.returncode == 0, result.stderr
    assert "a-rather-long-group-name-for-a-narrow-log" in result.stdout and "ByteUtils.writeUnsignedVarlong" in result.stdout


def test_no_file_at_the_default_location_is_a_skip_with_a_notice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # A bare clone: no ../shared beside the working directory, no KSTATE_VECTORS.
    (tmp_path / "clone").mkdir()
    monkeypatch.chdir(tmp_path / "clone")
    monkeypatch.delenv("KSTATE_VECTORS", raising=False)
    junit = tmp_path / "vectors.xml"
    assert main(["vectors", "check", "--junit", str(junit)]) == 0
    out = capsys.readouterr().out
    assert "vectors check skipped" in out and len(out.strip().splitlines()) == 1
    assert "<skipped" in junit.read_text()


def test_the_default_location_named_by_the_environment_is_a_skip_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # tox passes the same location as an absolute path.
    (tmp_path / "clone").mkdir()
    monkeypatch.chdir(tmp_path / "clone")
    monkeypatch.setenv("KSTATE_VECTORS", str(tmp_path / "clone" / ".." / "shared" / "jvm-vectors" / "kafka-jvm-vectors.json"))
    assert main(["vectors", "check"]) == 0


@pytest.mark.parametrize("via_environment", [False, True])
def test_a_missing_file_elsewhere_is_still_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, via_environment: bool,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    missing = tmp_path / "elsewhere.json"
    if via_environment:
        monkeypatch.setenv("KSTATE_VECTORS", str(missing))
    assert main(["vectors", "check"] if via_environment else ["vectors", "check", str(missing)]) == 2
    assert "elsewhere.json" in capsys.readouterr().err


def test_the_environment_names_the_file_when_none_is_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _vector_file(tmp_path, [{"group": "varint", "case": "c", "op": "ByteUtils.writeVarint",
                                    "input": {"value": 1}, "output": {"bytes": "01", "size": 1}}])
    monkeypatch.setenv("KSTATE_VECTORS", str(path))
    assert main(["vectors", "check"]) == 1


@pytest.mark.parametrize(("command", "words"), [
    (["vectors"], "recorded by running Apache Kafka's own Java classes"),
    (["vectors", "check"], "Exit 0 all matched"),
    (["fixtures"], "The golden fixtures"),
    (["spec"], "The normative spec"),
    (["spec", "check"], "every spec rule is cited by a test"),
    (["testee"], "out-of-process testee: JSON lines on stdin and stdout"),
])
def test_command_groups_and_the_testee_say_what_they_do(command: list[str], words: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    assert words in " ".join(capsys.readouterr().out.split())
