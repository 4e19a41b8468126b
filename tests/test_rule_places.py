"""The rule x place matrix of ``kstate spec check`` (issue 32 E): which places a rule applies at, and which a test
reaches, read statically from a test's body and decorators."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from kstate_conformance import rule_places as rp
from kstate_conformance.spec_rules import Rule

TESTS = '''
from kstate_conformance import rules

def _filled(kit):
    store = kit.open("window", "rocksdb")
    store.close()

@rules("WS-1")
def test_crashes_and_reopens(kit):
    store = kit.open("window", "rocksdb")
    store.crash()
    kit.open("window", "rocksdb")

@rules("WS-1")
def test_helper_then_open(kit):
    _filled(kit)
    kit.open_refused("window", "rocksdb")

@rules("WS-2")
@pytest.mark.kstate_places("restore")
def test_one_session(kit):
    kit.open("session", "rocksdb").ok("session_store.put")

@rules("WIN-1")
def test_pure(implementation):
    implementation.call("window.encode_key", {})
'''


def _rule(rule_id: str, text: str) -> Rule:
    return Rule(rule_id, "t", "required", "s", "4.3", "d.md", text)


def test_places_a_test_reaches(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(TESTS, encoding="utf-8")
    covered = rp.marker_places(tmp_path)
    assert set(covered["WS-1"]) == {"store:window", "crash", "reopen"}
    assert covered["WS-1"]["crash"] == {"test_sample::test_crashes_and_reopens"}
    assert covered["WS-1"]["reopen"] == {"test_sample::test_crashes_and_reopens", "test_sample::test_helper_then_open"}
    assert set(covered["WS-2"]) == {"store:session", "restore"}  # the explicit marker adds what the body hides
    assert set(covered["WIN-1"]) == {"pure"}


def test_places_a_rule_applies_at() -> None:
    applies, excused = rp.applicable_places(_rule("WS-9", "After a restart the window store restores ..."), {"WS-9"})
    assert applies == {"pure", "store:window", "reopen", "restore"} and excused == {}
    applies, _ = rp.applicable_places(_rule("OFF-99", "Every session store keeps ..."), set())
    assert applies == {"store:session"}  # a shared prefix narrowed to the family its text names
    applies, _ = rp.applicable_places(_rule("OFF-98", "Every store keeps ..."), set())
    assert applies == {f"store:{f}" for f in rp.FAMILIES}
    applies, excused = rp.applicable_places(_rule("LAY-12", "A window or session store reopened ..."), set())
    assert "store:kv" not in applies and "store:kv" in excused and excused["store:kv"]


def test_fixture_cases_give_their_store_family_and_steps(tmp_path: Path) -> None:
    (tmp_path / "spec").mkdir()
    cases = [{"id": "spec.a", "op": "store.scenario", "rules": ["SS-1"],
              "input": {"store_type": "session", "steps": [{"op": "store.crash"}, {"op": "store.open"},
                                                           {"op": "store.open"}]}},
             {"id": "spec.b", "op": "session.encode_key", "rules": ["SS-1"], "input": {}}]
    (tmp_path / "spec" / "x.json").write_text(json.dumps({"cases": cases}), encoding="utf-8")
    assert {p: sorted(ids) for p, ids in rp.fixture_places(tmp_path)["SS-1"].items()} == {
        "store:session": ["spec.a"], "crash": ["spec.a"], "reopen": ["spec.a"], "pure": ["spec.b"]}


def test_a_gap_is_reported_and_the_shipped_matrix_names_every_place() -> None:
    matrix = rp.PlaceMatrix(applies={"WS-1": {"store:window", "crash"}}, covered={"WS-1": {"store:window": {"t"}}},
                            excused={"WS-1": {"restore": "why"}})
    assert matrix.gaps("WS-1") == ["crash"] and matrix.rules_with_gaps == ["WS-1"]
    assert [matrix.cell("WS-1", p) for p in ("store:window", "crash", "restore", "pure")] == ["ok", "GAP", "n/a*", ""]
    text = rp.matrix_markdown(matrix)
    assert "| WS-1 |" in text and "- WS-1 at restore: why" in text
    ast.parse(Path(rp.__file__).read_text(encoding="utf-8"))
    shipped = rp.build_matrix()
    # issue 32 E's holes: each now reached at its place
    for rule, place in (("WS-29", "crash"), ("SS-21", "crash"), ("LAY-13", "crash"), ("UPG-3", "store:session"),
                        ("SS-24", "restore"), ("WS-23", "restore"), ("LAY-12", "store:window")):
        assert shipped.covered[rule].get(place), (rule, place)


PER_PARAMETER = '''
import pytest

from kstate_conformance import rules

POSITION_RULES = {"kv": ("KV-54",), "versioned": ("KV-54", "VS-38")}


@rules("KV-54", "VS-38", "OFF-8")
@pytest.mark.kstate_places("store:kv", "store:versioned", "reopen")
@pytest.mark.parametrize("name", [pytest.param(n, marks=rules(*POSITION_RULES[n])) for n in POSITION_RULES])
def test_per_family(kit, name):
    kit.open("kv", "rocksdb")


@rules("WS-1")
@pytest.mark.parametrize("name", ["window", "session"])
def test_plain_parameters(kit, name):
    kit.open("window", "rocksdb")
'''


def test_a_parameters_own_rules_count_at_the_family_it_names(tmp_path: Path) -> None:
    """Issue 31: a case carries its parameter's rules (``pytest.param(..., marks=rules(...))``), as the run's
    attribution reads them: VS-38 only at the versioned store, and OFF-8, which no parameter cites, nowhere."""
    (tmp_path / "test_params.py").write_text(PER_PARAMETER, encoding="utf-8")
    covered = rp.marker_places(tmp_path)
    assert set(covered["VS-38"]) == {"store:versioned", "reopen"}
    assert set(covered["KV-54"]) == {"store:kv", "store:versioned", "reopen"}
    assert "OFF-8" not in covered
    assert set(covered["WS-1"]) == {"store:window", "store:session"}  # no rule marks: the test's @rules, as before
