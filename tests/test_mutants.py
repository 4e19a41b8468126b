"""The mutation analysis itself: honest verdicts however the kill map is, heard as decided, reported.

The analysis of every mutant runs as its own command (``kstate mutants``, in tox's ``py`` environment); these tests
check its machinery on a few mutants and a selection of the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kstate_conformance import mutation
from kstate_conformance.mutants import all_mutants
from kstate_conformance.mutation import MutantResult, describe_result, read_kill_map, run_all, write_mutation_report
from kstate_conformance.pytest_args import suite_args

SUPPORT = Path(__file__).resolve().parent / "support"
FIXTURE_MODULE = "mutation_fixtures"
#: A small part of the suite: the primitives' properties (the mutants below die there, or survive all of it).
MODULE = "kstate_conformance.tests.test_primitives_properties"
MUTANTS = ["unsigned-varints", "floor-segment-ids", "noop-survivor"]


@pytest.fixture
def fixture_mutants(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test-only mutants importable here and in the analysis's worker process."""
    monkeypatch.syspath_prepend(str(SUPPORT))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(SUPPORT), os.environ.get("PYTHONPATH")) if p))


def _selected_count() -> int:
    """How many tests the selection holds, counted by pytest itself, apart from the analysis."""
    args = suite_args()
    args[args.index("kstate_conformance.tests")] = MODULE
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", *args],
                          capture_output=True, text=True, check=False)
    return sum(1 for line in proc.stdout.splitlines() if "::" in line)


def _analyse(kill_map: Path) -> dict[str, MutantResult]:
    results = run_all(MUTANTS, kill_map=kill_map, mutant_modules=(FIXTURE_MODULE,), modules=(MODULE,))
    return {r.name: r for r in results}


@pytest.mark.usefixtures("fixture_mutants")
def test_a_stale_or_missing_kill_map_changes_the_time_never_the_verdict(tmp_path: Path) -> None:
    absent = _analyse(tmp_path / "absent.json")
    # The map's only use is the order: record the true killers, then name a test that passes on every mutant.
    honest = tmp_path / "honest.json"
    honest.write_text(json.dumps({n: r.killing_test for n, r in absent.items() if r.killed}), encoding="utf-8")
    # A wrong map: each mutant first runs the other's killer (a test it passes), the survivor a test that is gone.
    killers = {n: r.killing_test for n, r in absent.items()}
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"unsigned-varints": killers["floor-segment-ids"],
                                 "floor-segment-ids": killers["unsigned-varints"],
                                 "noop-survivor": "test_primitives_properties.py::test_gone"}), encoding="utf-8")
    runs = {"absent": absent, "honest": _analyse(honest), "wrong": _analyse(wrong)}
    selected = _selected_count()
    for label, results in runs.items():
        verdicts = {n: r.killed for n, r in results.items()}
        assert verdicts == {"unsigned-varints": True, "floor-segment-ids": True, "noop-survivor": False}, label
        # A survivor is reported alive only after every selected test ran against it.
        assert results["noop-survivor"].tests_run == selected > 2, label
    # With the true killers first, a killed mutant is decided by its first test; with a wrong one, by its second.
    assert all(runs["honest"][n].tests_run == 1 for n in ("unsigned-varints", "floor-segment-ids"))
    assert all(runs["wrong"][n].tests_run >= 2 for n in ("unsigned-varints", "floor-segment-ids"))


@pytest.mark.usefixtures("fixture_mutants")
def test_a_kill_by_a_test_that_fails_on_the_reference_too_is_no_kill(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    monkeypatch.setenv("KSTATE_TEST_BREAK_REFERENCE", "1")
    results = {r.name: r for r in run_all(["unsigned-varints"], kill_map=tmp_path / "none.json",
                                          mutant_modules=(FIXTURE_MODULE,), modules=(MODULE,))}
    result = results["unsigned-varints"]
    assert not result.killed
    assert "fails on the unmutated reference too" in result.first_failure


def test_mutants_are_heard_as_decided_and_reported_with_their_rules(tmp_path: Path) -> None:
    heard: list[MutantResult] = []
    results = run_all(["unsigned-varints", "floor-segment-ids"], on_result=heard.append,
                      kill_map=tmp_path / "none.json", modules=(MODULE,))
    assert [r.name for r in results] == ["unsigned-varints", "floor-segment-ids"]
    assert sorted(r.name for r in heard) == sorted(r.name for r in results)
    first = results[0]
    assert first.killed and first.killing_test.startswith("test_primitives_properties.py::")
    assert describe_result(first).startswith(f"mutant unsigned-varints [PRIM-6]: killed in {first.seconds:.1f} s by ")
    write_mutation_report(results, tmp_path, ["KV-99"])
    document = json.loads((tmp_path / "mutation.json").read_text(encoding="utf-8"))
    assert document["mutants"][0]["rules"] == ["PRIM-6"]
    assert document["mutants"][0]["killing_test"] == first.killing_test
    assert document["required_rules_without_mutant"] == ["KV-99"]
    markdown = (tmp_path / "mutation.md").read_text(encoding="utf-8")
    assert "| unsigned-varints | varint | PRIM-6 | killed |" in markdown and "KV-99" in markdown
    assert "Slowest mutants" in markdown
    with pytest.raises(LookupError, match="no-such-mutant"):
        run_all(["no-such-mutant"])


def test_the_kill_map_records_killers_and_forgets_survivors(tmp_path: Path) -> None:
    path = tmp_path / "kill_map.json"
    path.write_text(json.dumps({"old": "test_x.py::test_y", "gone": "test_x.py::test_z"}), encoding="utf-8")
    killed = MutantResult("new", "kv", "", True, 0.1, "FAILED t", (), "test_a.py::test_b", 1)
    alive = MutantResult("gone", "kv", "", False, 0.1, "", (), "", 9)
    mutation.write_kill_map([killed, alive], path)
    assert read_kill_map(path) == {"new": "test_a.py::test_b", "old": "test_x.py::test_y"}
    path.write_text("not json", encoding="utf-8")
    assert read_kill_map(path) == {}


def test_the_shipped_kill_map_names_only_known_mutants() -> None:
    assert set(read_kill_map()) <= set(all_mutants())


def test_mutants_list_groups_every_mutant_by_family_with_its_rules(capsys: pytest.CaptureFixture[str]) -> None:
    from kstate.cli import main

    assert main(["mutants", "--list"]) == 0
    listing = capsys.readouterr().out
    known = all_mutants()
    for name, item in known.items():
        line = next((row for row in listing.splitlines() if row.strip().startswith(f"{name}  [")), None)
        assert line is not None, f"{name} is not listed"
        assert all(rule in line for rule in item.rules), (name, item.rules, line)
    families = {item.family for item in known.values()}
    headings = [row for row in listing.splitlines() if row and not row.startswith(" ") and "mutant" in row]
    assert {h.split(" (")[0] for h in headings[:-1]} == families
    assert main(["mutants", "--list", "unsigned-varints"]) == 0
    assert "unsigned-varints" in capsys.readouterr().out


def test_mutants_help_mentions_the_list(capsys: pytest.CaptureFixture[str]) -> None:
    from kstate.cli import main

    with pytest.raises(SystemExit):
        main(["mutants", "--help"])
    assert "--list" in capsys.readouterr().out
