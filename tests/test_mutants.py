"""The suite proves its worth: it fails on every deliberately broken implementation."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from kstate_conformance import mutation
from kstate_conformance.mutants import Mutant, all_mutants
from kstate_conformance.mutation import MutantResult, describe_result, run_all, write_mutation_report


def _announce(config: pytest.Config) -> object:
    """A callback printing each mutant as it is decided, past pytest's output capture (issue 14)."""
    capture = config.pluginmanager.getplugin("capturemanager")
    reporter = config.pluginmanager.getplugin("terminalreporter")

    def announce(result: MutantResult) -> None:
        line = describe_result(result)
        if capture is not None and reporter is not None:
            with capture.global_and_fixture_disabled():
                reporter.write_line(line)
                reporter.flush()
        elif sys.__stderr__ is not None:
            sys.__stderr__.write(line + "\n")
            sys.__stderr__.flush()

    return announce


def test_the_suite_kills_every_mutant(pytestconfig: pytest.Config) -> None:
    results = run_all(workers=2, on_result=_announce(pytestconfig))  # type: ignore[arg-type]
    survivors = [f"{r.name}: {r.description} ({r.first_failure})" for r in results if not r.killed]
    assert not survivors, "mutants the suite did not catch:\n" + "\n".join(survivors)
    assert len(results) == len(all_mutants()) >= 2


def test_the_reference_itself_passes_the_suite() -> None:
    # The control: the same harness on the unmutated reference must pass, or "killed" means nothing.
    import subprocess

    from kstate_conformance.mutation import _suite_command

    proc = subprocess.run(_suite_command("reference", []), capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:]


def test_mutants_are_heard_as_decided_and_reported_with_their_rules(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    # The harness only (the suite runs are faked): the slow first mutant is heard last, results keep the order asked.
    names = ["kv-get-absent-empty", "kv-delete-returns-null", "kv-put-all-first-wins"]

    def fake_run(m: Mutant, extra: list[str] | None = None, timeout: float = 600) -> MutantResult:
        time.sleep(0.5 if m.name == names[0] else 0)
        return MutantResult(m.name, m.family, m.description, True, 0.1, "FAILED t::x", m.rules)

    monkeypatch.setattr(mutation, "run_one", fake_run)
    heard: list[MutantResult] = []
    results = run_all(names, workers=2, on_result=heard.append)
    assert [r.name for r in results] == names
    assert [r.name for r in heard][-1] == names[0] and sorted(r.name for r in heard) == sorted(names)
    assert describe_result(results[0]) == "mutant kv-get-absent-empty [KV-5]: killed in 0.1 s by FAILED t::x"
    write_mutation_report(results, tmp_path, ["KV-99"])
    document = json.loads((tmp_path / "mutation.json").read_text(encoding="utf-8"))
    assert document["mutants"][0]["rules"] == ["KV-5"]
    assert document["required_rules_without_mutant"] == ["KV-99"]
    markdown = (tmp_path / "mutation.md").read_text(encoding="utf-8")
    assert "| kv-get-absent-empty | kv | KV-5 | killed |" in markdown and "KV-99" in markdown
    with pytest.raises(LookupError, match="no-such-mutant"):
        run_all(["no-such-mutant"])
