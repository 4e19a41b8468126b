"""Every spec rule is cited by a conformance test, every citation names a rule, every test cites one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kstate_conformance import traceability
from kstate_conformance.mutants import Mutant
from kstate_conformance.spec_rules import Rule, SpecFormatError, load_rules, parse_document
from kstate_conformance.traceability import (
    INDEPENDENT_EVIDENCE_PREFIXES,
    MUTANT_COVERED_PREFIXES,
    analyse,
    mutant_coverage,
    rules_without_independent_evidence,
)


def test_every_rule_has_a_test_and_every_test_a_rule() -> None:
    trace = analyse()
    assert trace.rules, "no spec rules found"
    assert trace.uncovered == [], f"rules no test cites: {trace.uncovered}"
    assert trace.unknown == {}, f"citations of rules that do not exist: {sorted(trace.unknown)}"
    assert trace.untagged_tests == [], f"conformance tests citing no rule: {trace.untagged_tests}"


def test_the_instance_rules_are_cited_by_the_checkout_tests_found_beside_the_package_or_the_working_dir(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checkout = analyse()
    assert checkout.not_checkable == [] and any(r.startswith("INST-") for r in checkout.cited_by)
    # An installed kit run from a checkout (tox): the tests are found under the working directory.
    monkeypatch.setattr(traceability, "TESTS_DIR", tmp_path / "site-packages" / "kstate_conformance" / "tests")
    assert analyse().not_checkable == []
    # Outside any checkout: the INST rules cannot be checked, and are listed as such, not as uncited.
    monkeypatch.chdir(tmp_path)
    installed = analyse()
    assert installed.not_checkable and all(r.startswith("INST-") for r in installed.not_checkable)
    assert not set(installed.not_checkable) & set(installed.uncovered)


def test_every_required_rule_of_the_checked_families_is_broken_by_a_mutant() -> None:
    # A citation proves nothing until a broken implementation fails it (issue 15); tests/test_mutants.py kills them.
    trace = analyse()
    assert trace.without_mutant == [], f"required rules no mutant breaks: {trace.without_mutant}"
    assert trace.unknown_mutant_rules == {}, f"mutants citing rules that do not exist: {trace.unknown_mutant_rules}"


def _rule(rule_id: str, level: str = "required") -> Rule:
    return Rule(rule_id, "t", level, "s", "4.3", "x.md", "text")


def test_mutant_coverage_names_uncovered_required_rules_and_unknown_citations() -> None:
    assert "KV" in MUTANT_COVERED_PREFIXES and "UPG" in MUTANT_COVERED_PREFIXES
    rules = {r.id: r for r in (_rule("KV-1"), _rule("KV-2"), _rule("KV-3", "tentative"), _rule("ZZ-1"))}
    mutants = {"m": Mutant("m", "d", "kv", {}, ("KV-1", "KV-99"))}
    without, unknown = mutant_coverage(rules, mutants)
    assert without == ["KV-2"]  # KV-3 is not required, ZZ is not a checked family
    assert unknown == {"m": ["KV-99"]}


def test_every_required_codec_rule_has_a_case_not_computed_by_the_reference() -> None:
    missing = analyse().without_independent_evidence
    assert missing == [], f"required rules with no kafka-jvm or spec fixture case: {missing}"


def test_a_rule_cited_only_by_reference_cases_is_listed() -> None:
    levels = {"PRIM-1": "required", "PRIM-2": "required", "PRIM-3": "recommended", "PRIM-4": "required",
              "TP-1": "required"}
    cited = {"PRIM-1": {"reference.primitives.a", "spec.primitives.b"}, "PRIM-2": {"reference.primitives.c"},
             "PRIM-4": {"kafka-jvm.varint.d"}}
    # PRIM-2 only by the reference, PRIM-3 not required, TP outside the prefixes, PRIM-4 from Kafka.
    assert rules_without_independent_evidence(levels, cited) == ["PRIM-2"]
    assert rules_without_independent_evidence(levels, cited, prefixes=("TP",)) == ["TP-1"]


def test_every_rule_states_level_source_and_kafka_version() -> None:
    for rule in load_rules().values():
        assert rule.level in ("required", "recommended", "hardened", "tentative")
        assert rule.source and rule.kafka and rule.text, rule.id


def test_a_rule_without_metadata_is_refused(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text("### XX-1: a rule\n\nno metadata line\n")
    with pytest.raises(SpecFormatError, match="XX-1"):
        parse_document(doc)


def test_a_duplicate_rule_id_is_refused(tmp_path: Path) -> None:
    for name in ("a.md", "b.md"):
        (tmp_path / name).write_text("### XX-1: a rule\nlevel: required | source: s | kafka: 4.3\n\ntext\n")
    with pytest.raises(SpecFormatError, match="XX-1"):
        load_rules(tmp_path)


def test_reference_cases_do_not_count_as_independent(tmp_path: Path) -> None:
    # The store families are checked too; relabelled as reference cases, their hand-worked cases count for nothing.
    from kstate_conformance.data import fixtures_dir

    assert {"KV", "UPG", "CACHE", "RST"} <= set(INDEPENDENT_EVIDENCE_PREFIXES)
    for path in fixtures_dir().glob("*/*.json"):
        document = json.loads(path.read_text(encoding="utf-8"))
        for case in document["cases"]:
            case["evidence"] = "reference"
            case["id"] = "reference." + case["id"].split(".", 1)[1]
        (tmp_path / path.parent.name).mkdir(exist_ok=True)
        (tmp_path / path.parent.name / path.name).write_text(json.dumps(document), encoding="utf-8")
    assert "KV-1" in analyse(tmp_path).without_independent_evidence


def test_required_rules_naming_a_store_without_a_store_case_are_listed_not_failed() -> None:
    """Issue 25: a rule checked only on a pure operation is reported; the listing never fails the check."""
    store_rule = Rule("VER-1", "t", "required", "s", "4.3", "x.md", "A store opened without an interval files ...")
    pure_rule = Rule("VER-2", "t", "required", "s", "4.3", "x.md", "The codec encodes the row.")
    process_rule = Rule("INST-1", "t", "required", "s", "4.3", "x.md", "The instance opens its store.")
    rules = {r.id: r for r in (store_rule, pure_rule, process_rule, _rule("VER-3"))}
    assert traceability.rules_without_store_case(rules, {}) == ["VER-1"]
    assert traceability.rules_without_store_case(rules, {"VER-1": {"t::x"}}) == []
    trace = analyse()
    assert "VER-23" not in trace.without_store_case  # store cases open versioned stores without an interval
    listed_only = traceability.Traceability(rules={"VER-1"}, cited_by={"VER-1": {"t::x"}}, without_store_case=["VER-1"])
    assert listed_only.ok
