"""Rule attribution (issue 31): a case's outcome counts against the rules it checks; a rule is ``xfail`` only where
an expected-failure entry names it (else ``not verified``); an allowed departure from Kafka (OPS-4, HV-5's "MAY
refuse ... with a typed error instead") is ``departs from Kafka``, listed, and fails neither the run nor a rule."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from suite_runner import child_env, module_dir, run_suite

from kstate_conformance import report as report_module
from kstate_conformance.expectations import ENTRY_CLASSES, KAFKA_BUG, Entry, ExpectedFailures, entry_class
from kstate_conformance.report import (
    DEPARTS,
    NOT_VERIFIED,
    RunReport,
    TestOutcome,
    headline,
    unnamed_xfail_rules,
)

#: A porter's in-process testee: Kafka's codecs as the reference answers them, except that it refuses HV-5's
#: lenient header bytes with a typed error (which HV-5 allows), and, as ``one_wrong``, answers one case wrongly.
PORTER = '''
from kstate.ops import call, load_all
from kstate_conformance.adapter import ImplementationAdapter

WRONG_INPUT = "0206e282ac01"  # one header keyed with the euro sign: its one case cites HV-1, 2, 4, 5 and 13


class Porter(ImplementationAdapter):
    name = "porter"

    def __init__(self, wrong=False):
        self.wrong = wrong

    def supports(self, op):
        return op.startswith("header_values.")

    def call(self, op, payload):
        from kstate_conformance.adapter import Unsupported
        if not self.supports(op):
            raise Unsupported(op)
        spec = load_all()[op]
        if op == "header_values.deserialize_headers" and spec.lenient is not None and spec.lenient(dict(payload)):
            return {"error": {"type": "InvalidHeaders", "message": "malformed header bytes refused (HV-5 allows it)"}}
        answer = call(op, payload)
        if self.wrong and op == "header_values.deserialize_headers" and payload.get("bytes") == WRONG_INPUT:
            return {"headers": [["b", None]]}
        return answer


def strict():
    return Porter()


def one_wrong():
    return Porter(wrong=True)
'''
HEADER_TESTS = ("-k", "headers_state_store or test_header_values_properties", "--kstate-profile", "quick")


@pytest.fixture(scope="module")
def porter_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return module_dir(tmp_path_factory, "porter_impl", PORTER)


def test_a_porter_refusing_hv5s_lenient_input_departs_from_kafka_and_fails_nothing(porter_dir: Path,
                                                                                   tmp_path: Path) -> None:
    run = run_suite("porter_impl:strict", tmp_path / "r", *HEADER_TESTS, env=child_env(porter_dir))
    assert run.returncode == 0, run.stdout[-3000:]
    verdicts, report = run.verdicts()
    assert verdicts["HV-5"] == DEPARTS
    # The other rules the lenient cases cite pass on their other cases (partial where the porter lacks an operation).
    counts = report.by_rule()
    for rule in ("HV-1", "HV-2", "HV-4", "HV-13"):
        assert verdicts[rule] in ("pass", "partial") and counts[rule]["passed"], (rule, verdicts[rule], counts[rule])
        assert not counts[rule]["failed"] and not counts[rule][report_module.DEPARTED], (rule, counts[rule])
    assert "FAIL" not in verdicts.values()
    departed = [o for o in report.outcomes if o.outcome == "departed"]
    assert departed and all(o.departs == ["HV-5"] for o in departed if "headers_deserialize" in o.test_id)
    # Listed in the console summary, the headline and the report.
    assert "rules departing from Kafka, as they allow (OPS-4; no failure)" in run.stdout
    assert "departing from Kafka)" in headline(report)
    markdown = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    assert "## Departures from Kafka" in markdown and "HV-5" in markdown.split("## Departures from Kafka")[1]


def test_an_xfailed_case_is_xfail_only_for_the_rules_its_entry_names(porter_dir: Path, tmp_path: Path) -> None:
    listing = tmp_path / "expected.txt"
    listing.write_text("test_golden.py::test_golden[kafka-jvm.headers_state_store.headers_deserialize_24]  "
                       "# [TESTEE] HV-13: a wrong key for one header\n", encoding="utf-8")
    run = run_suite("porter_impl:one_wrong", tmp_path / "r", *HEADER_TESTS,
                    f"--kstate-expected-failures={listing}", env=child_env(porter_dir))
    assert run.returncode == 0, run.stdout[-3000:]
    verdicts, report = run.verdicts()
    xfailed = [o for o in report.outcomes if o.outcome == "xfailed"]
    assert xfailed and all(set(o.rules) >= {"HV-1", "HV-2", "HV-4", "HV-13"} for o in xfailed)
    assert verdicts["HV-13"] == "xfail"
    assert all(verdicts[rule] != "xfail" for rule in ("HV-1", "HV-2", "HV-4")), verdicts
    # Each xfailed rule is named by an entry; the same run under the old attribution ("every rule of the test")
    # is caught by that check.
    assert unnamed_xfail_rules(report) == []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(report_module, "attributed", _every_rule_of_the_test)
        assert {"HV-1", "HV-2", "HV-4"} <= set(unnamed_xfail_rules(report))


def _every_rule_of_the_test(outcome: TestOutcome, rule: str) -> str:
    """The attribution before issue 31 (the mutant): an outcome counts as itself for every rule of its test."""
    return outcome.outcome


def _outcome(test_id: str, result: str, rules: list[str], **extra: object) -> TestOutcome:
    return TestOutcome(test_id, result, rules, "required", **extra)  # type: ignore[arg-type]


@pytest.mark.parametrize("mutant", [_every_rule_of_the_test,
                                    lambda o, r: "xfailed" if o.outcome == "xfailed" else report_module.DEPARTED
                                    if o.outcome == "departed" else o.outcome])
def test_the_attribution_check_kills_attribution_mutants(mutant: Callable[[TestOutcome, str], str]) -> None:
    report = RunReport("porter", [
        _outcome("a", "xfailed", ["AA-1", "AA-2"], expected_reason="[KAFKA] AA-1: differs"),
        _outcome("b", "passed", ["AA-2"]), _outcome("c", "xfailed", ["BB-1"], expected_reason="[SPEC] CC-9: another"),
        _outcome("d", "departed", ["DD-1", "DD-2"], departs=["DD-1"]), _outcome("e", "passed", ["DD-2"]),
    ])
    verdicts = report.rule_verdicts()
    assert verdicts == {"AA-1": "xfail", "AA-2": "partial", "BB-1": NOT_VERIFIED, "DD-1": DEPARTS, "DD-2": "pass"}
    assert unnamed_xfail_rules(report) == []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(report_module, "attributed", mutant)
        assert unnamed_xfail_rules(report) or report.rule_verdicts()["DD-2"] != "pass"


def test_the_headline_counts_rules_and_kafka_bugs() -> None:
    report = RunReport("kafka-jvm:4.4.0", [
        _outcome("a", "passed", ["AA-1"]), _outcome("b", "passed", ["AA-2"]),
        _outcome("c", "xfailed", ["AA-3"], expected_reason="[KAFKA-BUG] AA-3: Kafka's bug"),
        _outcome("d", "xfailed", ["AA-4", "AA-5"], expected_reason="[KAFKA] AA-4: a difference"),
        _outcome("e", "skipped", ["AA-6"], skip_kind="unsupported", unsupported="op.x"),
        _outcome("f", "passed", ["AA-7"]), _outcome("g", "skipped", ["AA-7"], skip_kind="unsupported"),
        _outcome("h", "skipped", ["AA-8"], skip_kind="not applicable"),
    ])
    assert headline(report) == ("Kafka 4.4.0 passes every case of 2 of 7 applicable rules; 2 listed differences "
                                "(1 Kafka bugs); 3 not reached (1 partly)")
    report.implementation = "cmd:./porter"
    assert headline(report).startswith("cmd:./porter passes every case of 2 of 7 applicable rules; 2 listed "
                                       "differences; 3 not reached")


def test_entry_classes_are_one_list_and_unknown_well_formed_classes_are_read() -> None:
    assert KAFKA_BUG in ENTRY_CLASSES and entry_class("[KAFKA-BUG] KV-25: shortened scan") == KAFKA_BUG
    assert entry_class("  [TESTEE] x") == "TESTEE" and entry_class("no class") == "" and entry_class("[bad] x") == ""
    listing = ExpectedFailures(Path("x.txt"), [Entry("a", "[KAFKA] KV-1/KV-2: x"), Entry("b", "[NEW-CLASS] KV-3: y")])
    assert [e.tag for e in listing.unknown_classes()] == ["NEW-CLASS"]
    assert listing.entries[0].rules == ["KV-1", "KV-2"]


def test_the_shipped_kafka_lists_name_a_rule_in_every_entry() -> None:
    """Every entry of the kafka-jvm expected-failure files names at least one rule: else its tests' rules would be
    ``not verified``, never ``xfail``, and the entry would excuse nothing."""
    root = Path(__file__).resolve().parents[1] / "testees" / "kafka-jvm"
    for path in sorted(root.glob("expected-failures-*.txt")):
        unnamed = [e.pattern for e in ExpectedFailures.load(path).entries if not e.rules]
        assert not unnamed, f"{path.name}: entries naming no rule: {unnamed}"
        assert json.dumps([e.tag for e in ExpectedFailures.load(path).entries if e.tag not in ENTRY_CLASSES]) == "[]"


def test_a_parameter_carries_its_own_rules_before_the_tests_marker() -> None:
    """``pytest.param(..., marks=rules(...))`` names the rules of that case; the test's ``@rules`` is the rest's."""
    from types import SimpleNamespace

    from kstate_conformance.plugin import item_rules

    function_mark = pytest.mark.rules("KV-1", "KV-2", "KV-3").mark
    param = SimpleNamespace(callspec=SimpleNamespace(marks=[pytest.mark.kstate_level("required").mark,
                                                            pytest.mark.rules("KV-2").mark]),
                            get_closest_marker=lambda name: function_mark if name == "rules" else None)
    plain = SimpleNamespace(callspec=SimpleNamespace(marks=[]),
                            get_closest_marker=lambda name: function_mark if name == "rules" else None)
    assert item_rules(param) == ["KV-2"]  # type: ignore[arg-type]
    assert item_rules(plain) == ["KV-1", "KV-2", "KV-3"]  # type: ignore[arg-type]


def test_a_store_type_the_implementation_lacks_is_absent_not_a_shortfall() -> None:
    """A case on a store type or backend the implementation does not have is ``absent``: a rule met on every type
    it has passes, a rule reached only through what it lacks is ``unsupported``, and the headline names what was
    lacking (docs/verdicts.md)."""
    from kstate_conformance.capabilities import Capabilities, lacks_reason
    from kstate_conformance.report import ABSENT, classify_skip

    caps = Capabilities.parse({"store_types": ["kv", "versioned_kv"], "backends": ["rocksdb", "memory"],
                               "store_backends": {"versioned_kv": ["rocksdb"]}})
    assert caps.lacks("versioned_kv", "rocksdb") is None and caps.offers("kv", "memory")
    assert caps.lacks("versioned_kv", "memory") == "the versioned_kv store on memory"
    assert caps.lacks("window", "rocksdb") == "the window store"
    assert not caps.offers("versioned_kv", "memory")
    lacked = lacks_reason("kafka", "the versioned_kv store on memory")
    assert classify_skip(f"Skipped: {lacked}") == (ABSENT, "versioned_kv store on memory")
    assert classify_skip("Skipped: the implementation lacks the memory backend") == (ABSENT, "memory backend")
    # An operation answered unsupported stays unsupported, whatever it is called.
    assert classify_skip("Skipped: x does not support operation store.open")[0] == "unsupported"
    assert classify_skip("Skipped: the model lacks the operation store.open")[0] != ABSENT

    report = RunReport("kafka-jvm:4.4.0", [
        _outcome("a", "passed", ["VS-3"]),
        _outcome("b", "skipped", ["VS-3"], skip_kind=ABSENT, unsupported="versioned_kv store on memory"),
        _outcome("c", "skipped", ["VS-25"], skip_kind=ABSENT, unsupported="versioned_kv_with_headers store"),
        _outcome("d", "passed", ["KV-1"]), _outcome("e", "skipped", ["KV-1"], skip_kind="unsupported", unsupported="op"),
    ])
    assert report.rule_verdicts() == {"KV-1": "partial", "VS-3": "pass", "VS-25": "unsupported"}
    assert report.absent_only_rules() == ["VS-25"]
    assert headline(report) == (
        "Kafka 4.4.0 passes every case of 1 of 3 applicable rules; 0 listed differences (0 Kafka bugs); 2 not reached "
        "(1 partly; 1 only on what it lacks: the versioned_kv store on memory, the versioned_kv_with_headers store)")


def test_a_malformed_store_backends_answer_is_named() -> None:
    from kstate_conformance.capabilities import Capabilities, CapabilitiesError

    with pytest.raises(CapabilitiesError, match="store_backends"):
        Capabilities.parse({"store_types": ["kv"], "backends": ["rocksdb"], "store_backends": {"kv": "rocksdb"}})


def test_a_stricter_case_that_fails_is_no_evidence_for_the_required_rules_it_cites() -> None:
    """A hardened case listed for its hardened rule (KV-67) also cites the required KV-50: a ``--level required``
    run would not run it, so it neither passes nor leaves KV-50 unverified; a required case would (docs/verdicts.md)."""
    listed = "[KAFKA] KV-67 (hardened): Kafka's commit is not durable"
    report = RunReport("kafka-jvm:4.4.0", [
        TestOutcome("hard", "xfailed", ["KV-50", "KV-67", "KV-52"], "hardened", expected_reason=listed),
        TestOutcome("req", "passed", ["KV-50"], "required"),
        TestOutcome("req-bug", "xfailed", ["KV-53", "KV-25"], "required", expected_reason="[KAFKA-BUG] KV-25: x"),
        TestOutcome("req-ok", "passed", ["KV-53"], "required"),
    ])
    assert report.rule_verdicts() == {"KV-25": "xfail", "KV-50": "pass", "KV-52": NOT_VERIFIED, "KV-53": "partial",
                                      "KV-67": "xfail"}


def test_a_finished_report_counts_its_rules_once_and_as_before() -> None:
    """``RunReport.finished`` (issue 35): the counts it keeps are those of a fresh count, a caller's edit of the
    answer does not reach the kept counts, and before it an outcome changed later (a teardown's failure) is seen."""
    passed = TestOutcome("t.py::a", "passed", ["KV-1", "KV-2"], "required")
    later = TestOutcome("t.py::b", "passed", ["KV-2"], "required")
    report = RunReport("x", [passed, later])
    assert report.by_rule()["KV-2"]["passed"] == 2
    later.outcome = "failed"  # as the plugin records a teardown failure on the call's outcome
    fresh = report.by_rule()
    assert fresh["KV-2"]["failed"] == 1
    report.finished()
    kept = report.by_rule()
    assert kept == fresh
    kept["KV-1"]["passed"] += 5
    assert report.by_rule() == fresh
    assert report.rule_verdicts() == {"KV-1": "pass", "KV-2": "FAIL"}
