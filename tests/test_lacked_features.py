"""What an implementation lacks is ``absent``, named from its own ``store.capabilities`` (issue 31, OPS-1): an
optional feature Kafka 4.4 lacks (HV-10's ``lazy_headers``), and a store type named by any operation's input (a
``versioned_kv_with_headers`` changelog case), never ``unsupported``; the headline names each. Each check is shown
to catch a mutant of the code it checks."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from suite_runner import child_env, module_dir, run_suite

from kstate_conformance import capabilities as capabilities_module
from kstate_conformance import plugin as plugin_module
from kstate_conformance import report as report_module
from kstate_conformance.adapter import ImplementationAdapter, Unsupported
from kstate_conformance.capabilities import Capabilities, CapabilitiesError, checked_rules, feature_of_rules
from kstate_conformance.report import ABSENT, UNSUPPORTED, RunReport, TestOutcome, classify_skip, headline

#: A port that decodes header bytes eagerly, as Kafka 4.4 does: the reference without ``deserialize_lazy``, declaring
#: ``lazy_headers`` as the factory says (``claims`` declares a feature it does not have: the mutant).
EAGER = '''
from kstate_conformance.adapter import ReferenceAdapter, Unsupported


class Eager(ReferenceAdapter):
    name = "eager"

    def __init__(self, declares):
        super().__init__()
        self.declares = declares

    def supports(self, op):
        return op != "header_values.deserialize_lazy" and super().supports(op)

    def call(self, op, payload):
        if op == "header_values.deserialize_lazy":
            raise Unsupported(op)
        out = super().call(op, payload)
        return {**out, "lazy_headers": self.declares} if op == "store.capabilities" else out


def eager():
    return Eager(False)


def claims():
    return Eager(True)
'''
LAZY_TESTS = ("-k", "test_header_values_properties or test_golden and header_values or headers_facade or "
                    "test_decoders_refuse_or_answer and header_values", "--kstate-profile", "quick")


class _Inner(ImplementationAdapter):
    """Answers ``store.capabilities`` with ``caps``; every other operation is unsupported."""

    name = "inner"

    def __init__(self, caps: dict[str, Any]) -> None:
        self.caps = caps

    def supports(self, op: str) -> bool:
        return op == "store.capabilities"

    def call(self, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        if op == "store.capabilities":
            return self.caps
        raise Unsupported(op)


def _skip_kind(adapter: plugin_module.SkippingAdapter, op: str, payload: dict[str, Any]) -> tuple[str, str]:
    with pytest.raises(pytest.skip.Exception) as skipped:
        adapter.call(op, payload)
    return classify_skip(f"Skipped: {skipped.value.msg}")


KAFKA_LIKE = {"store_types": ["kv", "versioned_kv"], "backends": ["rocksdb", "memory"], "lazy_headers": False}


def test_an_optional_feature_is_a_declared_flag_and_lacking_it_is_absent() -> None:
    caps = Capabilities.parse(KAFKA_LIKE)
    assert caps.lacks(feature="lazy_headers") == "the lazy_headers capability"
    assert Capabilities.parse({**KAFKA_LIKE, "lazy_headers": True}).lacks(feature="lazy_headers") is None
    assert Capabilities.parse({"store_types": ["kv"]}).lacks(feature="lazy_headers") is not None  # missing is false
    with pytest.raises(CapabilitiesError, match="lazy_headers"):
        Capabilities.parse({**KAFKA_LIKE, "lazy_headers": "yes"})
    with pytest.raises(CapabilitiesError, match="no optional feature"):
        caps.lacks(feature="caching")
    assert classify_skip("Skipped: kafka lacks the lazy_headers capability") == (ABSENT, "lazy_headers capability")
    # The mutant: the pattern of store types and backends alone reads a lacked capability as not applicable.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(report_module, "_ABSENT_PATTERN",
                      re.compile(r"lacks (?P<what>the [a-z_]+ (?:store(?: on [a-z]+)?|backend))$"))
        assert classify_skip("Skipped: kafka lacks the lazy_headers capability")[0] != ABSENT


def test_a_wipe_beside_the_tasks_other_stores_is_a_feature_kafka_lacks() -> None:
    """VS-31's cases need ``store_wipe`` (Kafka wipes whole tasks): undeclared, the kit skips them as absent."""
    assert Capabilities.parse(KAFKA_LIKE).lacks(feature="store_wipe") == "the store_wipe capability"
    assert Capabilities.parse({**KAFKA_LIKE, "store_wipe": True}).lacks(feature="store_wipe") is None
    assert capabilities_module.feature_of_rules(["VS-31"]) == "store_wipe"
    # The mutant: without store_wipe among the optional features, VS-31's undeclared wipe is no lacked feature.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(capabilities_module, "OPTIONAL_FEATURES",
                      {k: v for k, v in capabilities_module.OPTIONAL_FEATURES.items() if k != "store_wipe"})
        assert capabilities_module.feature_of_rules(["VS-31"]) is None
        with pytest.raises(CapabilitiesError, match="no optional feature"):
            Capabilities.parse(KAFKA_LIKE).lacks(feature="store_wipe")


def test_a_segment_interval_below_one_needs_the_option_kafkas_stores_lack() -> None:
    """WS-2/WIN-16: only the input that needs a checked segment interval is absent where the option is undeclared;
    the same operation with another input, or declared, is an unsupported operation as before."""
    zero = {"retention": 10, "window_size": 1, "segment_interval": 0}
    undeclared = plugin_module.SkippingAdapter(_Inner(KAFKA_LIKE))
    assert _skip_kind(undeclared, "window.segment_interval", zero) == (ABSENT, "segment_interval_option capability")
    assert _skip_kind(undeclared, "window.segment_interval", {**zero, "segment_interval": 3})[0] == UNSUPPORTED
    assert _skip_kind(undeclared, "window.segment_interval", {**zero, "segment_interval": True})[0] == UNSUPPORTED
    assert capabilities_module.feature_of_input("store.open", {"options": {"segment_interval_ms": 0}}) == (
        "segment_interval_option")
    assert capabilities_module.feature_of_input("store.open", {"options": {"segment_interval_ms": 1}}) is None
    declared = plugin_module.SkippingAdapter(_Inner({**KAFKA_LIKE, "segment_interval_option": True}))
    assert _skip_kind(declared, "window.segment_interval", zero)[0] == UNSUPPORTED
    # The mutant: an adapter that reads no feature from an operation's input reports it unsupported.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plugin_module, "feature_of_input", lambda op, payload: None)
        assert _skip_kind(plugin_module.SkippingAdapter(_Inner(KAFKA_LIKE)), "window.segment_interval", zero)[0] == (
            UNSUPPORTED)


def test_an_operation_of_an_undeclared_feature_is_absent_and_of_a_declared_one_unsupported() -> None:
    """Only the declaration makes a case absent: an implementation that declares lazy_headers and answers
    ``deserialize_lazy`` unsupported is short of an operation (OPS-1)."""
    lazy = {"bytes": "00"}
    assert _skip_kind(plugin_module.SkippingAdapter(_Inner(KAFKA_LIKE)), "header_values.deserialize_lazy", lazy) == (
        ABSENT, "lazy_headers capability")
    declared = plugin_module.SkippingAdapter(_Inner({**KAFKA_LIKE, "lazy_headers": True}))
    assert _skip_kind(declared, "header_values.deserialize_lazy", lazy) == (UNSUPPORTED, "header_values.deserialize_lazy")
    # The mutant: an adapter that knows no optional feature reports the lacked one as an unsupported operation.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plugin_module, "feature_of", lambda op: None)
        assert _skip_kind(plugin_module.SkippingAdapter(_Inner(KAFKA_LIKE)), "header_values.deserialize_lazy",
                          lazy)[0] == UNSUPPORTED


def test_any_operation_on_a_store_type_it_lacks_is_absent() -> None:
    """VS-26's changelog case names ``versioned_kv_with_headers`` in a ``changelog.record_for_write`` input: on an
    implementation without that type it is absent, as the type's store.open is; on a type it declares, unsupported."""
    adapter = plugin_module.SkippingAdapter(_Inner(KAFKA_LIKE))
    write = {"store_type": "versioned_kv_with_headers", "operation": "put", "key": "6b", "value": "76", "timestamp": 1}
    assert _skip_kind(adapter, "changelog.record_for_write", write) == (ABSENT, "versioned_kv_with_headers store")
    assert _skip_kind(adapter, "changelog.record_for_write", {**write, "store_type": "kv"})[0] == UNSUPPORTED
    assert _skip_kind(adapter, "changelog.record_for_write", {**write, "store_type": "no_such_type"})[0] == UNSUPPORTED

    def store_open_only(self: plugin_module.SkippingAdapter, op: str, payload: dict[str, Any]) -> str | None:
        """The mutant: the lookup before this change, for store.open alone."""
        if op != "store.open":
            return None
        return capabilities_module.capabilities_of(self.inner).lacks(payload["store_type"], payload.get("backend"))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plugin_module.SkippingAdapter, "_lacked_by", store_open_only)
        assert _skip_kind(plugin_module.SkippingAdapter(_Inner(KAFKA_LIKE)), "changelog.record_for_write",
                          write)[0] == UNSUPPORTED


def test_a_scenario_needs_a_feature_only_when_it_checks_that_features_rules_alone() -> None:
    """The kafka-jvm header-value vectors cite HV-10 beside HV-6 .. HV-14: Kafka answers them, so they stay."""
    assert feature_of_rules(["HV-10"]) == "lazy_headers"
    assert feature_of_rules(["HV-6", "HV-7", "HV-9", "HV-10", "HV-13", "HV-14"]) is None
    assert feature_of_rules([]) is None
    # The mutant: any rule of the feature would take the eager cases too.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(capabilities_module, "feature_of_rules", lambda rules: next(
            (n for n, f in capabilities_module.OPTIONAL_FEATURES.items() if set(rules) & f.rules), None))
        assert capabilities_module.feature_of_rules(["HV-6", "HV-10"]) is not None


def test_a_golden_case_counts_for_a_features_rule_only_through_the_feature() -> None:
    """The eager ``header_values.deserialize`` vectors cite HV-10 (their operation's rule list): they check HV-9 and
    HV-13, which Kafka meets, so an eager store's HV-10 is what its lazy cases make it (absent), never ``pass``."""
    eager = ["HV-6", "HV-7", "HV-9", "HV-10", "HV-13", "HV-14"]
    assert checked_rules("header_values.deserialize", eager) == ["HV-6", "HV-7", "HV-9", "HV-13", "HV-14"]
    assert checked_rules("header_values.raw_aggregation", ["HV-10", "HV-11"]) == ["HV-11"]
    assert checked_rules("header_values.deserialize_lazy", ["HV-10"]) == ["HV-10"]
    assert checked_rules("store.scenario", ["HV-10"]) == ["HV-10"]
    # The mutant: a case counted for every rule it cites makes an eager port pass HV-10.
    report = RunReport("eager", [TestOutcome("v", "passed", eager, "required"),
                                 TestOutcome("l", "skipped", ["HV-10"], "hardened", skip_kind=ABSENT,
                                             unsupported="lazy_headers capability")])
    assert report.rule_verdicts()["HV-10"] == "pass"
    narrowed = RunReport("eager", [TestOutcome("v", "passed", checked_rules("header_values.deserialize", eager),
                                               "required"), report.outcomes[1]])
    assert narrowed.rule_verdicts()["HV-10"] == "unsupported" and narrowed.absent_only_rules() == ["HV-10"]


def test_the_headline_names_every_lacked_store_type_and_capability() -> None:
    """From the skip reasons the declaration gave, not from names of Kafka's: each lacked feature, most cases first."""
    skips = [("a", ["VS-25"], "kafka lacks the versioned_kv_with_headers store"),
             ("b", ["VS-25"], "kafka lacks the versioned_kv_with_headers store"),
             ("c", ["HV-10"], "kafka lacks the lazy_headers capability"),
             ("d", ["VS-3"], "kafka lacks the versioned_kv store on memory")]

    def outcomes() -> list[TestOutcome]:
        found = []
        for name, rules, reason in skips:
            kind, what = classify_skip(f"Skipped: {reason}")
            found.append(TestOutcome(name, "skipped", rules, "required", skip_kind=kind, unsupported=what))
        return [*found, TestOutcome("e", "passed", ["VS-3"], "required")]

    report = RunReport("kafka-jvm:4.4.0", outcomes())
    assert report.rule_verdicts() == {"HV-10": "unsupported", "VS-25": "unsupported", "VS-3": "pass"}
    assert headline(report).endswith("2 not reached (2 only on what it lacks: the versioned_kv_with_headers store, "
                                     "the lazy_headers capability, the versioned_kv store on memory)")
    with pytest.MonkeyPatch.context() as patch:  # the mutant: capabilities unknown to the absent pattern
        patch.setattr(report_module, "_ABSENT_PATTERN",
                      re.compile(r"lacks (?P<what>the [a-z_]+ (?:store(?: on [a-z]+)?|backend))$"))
        assert "lazy_headers capability" not in headline(RunReport("kafka-jvm:4.4.0", outcomes()))


@pytest.fixture(scope="module")
def eager_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return module_dir(tmp_path_factory, "eager_impl", EAGER)


def test_an_eager_port_passes_the_required_header_rules_and_lacks_only_lazy_decoding(eager_dir: Path,
                                                                                     tmp_path: Path) -> None:
    """A port that decodes as Kafka 4.4 does passes HV-11, HV-13, HV-14 and PRIM-8; HV-10's lazy cases are absent
    and named. The mutant declares lazy_headers without having it: its lazy cases are then unsupported."""
    run = run_suite("eager_impl:eager", tmp_path / "r", *LAZY_TESTS, env=child_env(eager_dir))
    assert run.returncode == 0, run.stdout[-3000:]
    verdicts, report = run.verdicts()
    for rule in ("HV-11", "HV-13", "HV-14", "PRIM-8"):
        assert verdicts[rule] == "pass", (rule, verdicts[rule], report.by_rule()[rule])
    lazy = [o for o in report.outcomes if o.skip_kind == ABSENT]
    assert lazy and {o.unsupported for o in lazy} == {"lazy_headers capability"}
    assert {"test_golden[spec.kv_store.headers_facade_lazy]", "test_golden[spec.header_values.lazy_well_formed]"} <= {
        o.test_id.split("::")[-1] for o in lazy}
    assert any("test_the_headers_facade_parses_headers_only_when_asked" in o.test_id for o in lazy)
    assert not [o for o in report.outcomes if o.skip_kind == UNSUPPORTED], "an eager port lacks no operation"
    # HV-10 is reached only through lazy decoding, which the port lacks (the eager cases citing it check other rules).
    assert verdicts["HV-10"] == "unsupported" and "HV-10" in report.absent_only_rules(), report.by_rule()["HV-10"]
    assert "only on what it lacks: the lazy_headers capability" in headline(report)

    mutant = run_suite("eager_impl:claims", tmp_path / "m", *LAZY_TESTS, env=child_env(eager_dir))
    assert mutant.returncode == 0, mutant.stdout[-3000:]  # a lacked operation is reported, not failed
    mutant_verdicts, mutant_report = mutant.verdicts()
    assert {o.unsupported for o in mutant_report.outcomes if o.skip_kind == UNSUPPORTED} == {
        "header_values.deserialize_lazy"}
    assert mutant_verdicts["PRIM-8"] == "partial" and mutant_verdicts["HV-13"] == "partial"
    assert "lazy_headers capability" not in headline(mutant_report)
