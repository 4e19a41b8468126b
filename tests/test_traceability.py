"""Every spec rule is cited by a conformance test, every citation names a rule, every test cites one."""

from __future__ import annotations

from pathlib import Path

import pytest

from kstate_conformance.spec_rules import SpecFormatError, load_rules, parse_document
from kstate_conformance.traceability import analyse, rules_without_independent_evidence


def test_every_rule_has_a_test_and_every_test_a_rule() -> None:
    trace = analyse()
    assert trace.rules, "no spec rules found"
    assert trace.uncovered == [], f"rules no test cites: {trace.uncovered}"
    assert trace.unknown == {}, f"citations of rules that do not exist: {sorted(trace.unknown)}"
    assert trace.untagged_tests == [], f"conformance tests citing no rule: {trace.untagged_tests}"


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
        assert rule.level in ("required", "recommended", "tentative")
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
