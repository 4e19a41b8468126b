"""Withheld steps (docs/verdicts.md): an expected-failure entry's ``withhold: R-1`` runs a drawn test with the
machine's steps that reach R-1 left out; the test must then pass, and it counts as ``not verified`` for R-1 only."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from kstate.stores.segments import LogicalKeyValueSegments
from kstate_conformance.adapter import ImplementationAdapter, JsonDict, ReferenceAdapter
from kstate_conformance.capabilities import capabilities_of
from kstate_conformance.expectations import Entry, ExpectedFailures
from kstate_conformance.report import NOT_VERIFIED, RunReport, TestOutcome
from kstate_conformance.state_machines import withholding
from kstate_conformance.tests import test_kv_state_machine as kv_machine
from kstate_conformance.tests import test_versioned_state_machine as versioned_machine
from kstate_conformance.tests import test_window_state_machine as window_machine


def test_an_entry_names_the_rules_it_withholds() -> None:
    entry = Entry("t", "[KAFKA-BUG] VS-14 (kafka-bugs/x.md; withhold: VS-14, VS-17, the machine leaves out restarts)")
    assert entry.withheld == ["VS-14", "VS-17"]
    assert Entry("t", "[KAFKA-BUG] CACHE-7 (x.md; may pass: some sequences)").withheld == []
    # A withholding entry stays while its tests run, though they pass: they pass because of it.
    listing = ExpectedFailures(Path("x.txt"), [entry, Entry("u", "[KAFKA] KV-1: x")])
    assert [e.pattern for e in listing.fixed(set(), {"t", "u"}).entries] == ["t"]


def test_a_withheld_rule_is_not_verified_by_the_case_that_withheld_it() -> None:
    report = RunReport("kafka-jvm:4.4.0", [
        TestOutcome("m", "passed", ["CACHE-1", "CACHE-7", "CACHE-8"], "required", withheld=["CACHE-7", "CACHE-8"]),
        TestOutcome("g", "xfailed", ["CACHE-7"], "required", expected_reason="[KAFKA-BUG] CACHE-7: reverse scans"),
    ])
    assert report.rule_verdicts() == {"CACHE-1": "pass", "CACHE-7": "xfail", "CACHE-8": NOT_VERIFIED}


def test_a_machine_withholds_only_what_it_knows_and_with_what_goes_with_it(tmp_path: Path) -> None:
    caps = capabilities_of(ReferenceAdapter())
    with withholding(frozenset({"CACHE-7"})):
        assert kv_machine.KeyValueStoreMachine(ReferenceAdapter(), "kv", "memory", tmp_path, caps).withheld == {"CACHE-7"}
        with pytest.raises(AssertionError, match="cannot withhold the steps of CACHE-7"):
            window_machine.WindowStoreMachine(ReferenceAdapter(), "window", "memory", tmp_path, caps)
    with withholding(frozenset({"VS-14"})), pytest.raises(AssertionError, match="leaves VS-17 unchecked"):
        _VersionedWithoutAnyReopen(ReferenceAdapter(), "versioned_kv", "rocksdb", tmp_path, caps)
    # The versioned machine withholds VS-14 alone: it still restarts and crashes a store without segment rows (VS-17).
    with withholding(frozenset({"VS-14"})):
        assert versioned_machine.VersionedStoreMachine(ReferenceAdapter(), "versioned_kv", "rocksdb", tmp_path,
                                                       caps).withheld == {"VS-14"}
    assert kv_machine.KeyValueStoreMachine(ReferenceAdapter(), "kv", "memory", tmp_path, caps).withheld == frozenset()


class _VersionedWithoutAnyReopen(versioned_machine.VersionedStoreMachine):
    """A machine whose VS-14 steps would leave VS-17 unchecked too (as the versioned machine's did while it withheld
    every reopen): the entry must then withhold both."""

    WITHHELD_TOGETHER: ClassVar[dict[str, frozenset[str]]] = {"VS-14": frozenset({"VS-17"})}


class _ReverseCachedScansWrong(ImplementationAdapter):
    """The reference, except that a reverse scan of a store opened with a record cache answers one entry too few:
    a CACHE-7 bug that only the machine's reverse cached scans reach."""

    name = "reverse-cached-scans-wrong"

    def __init__(self) -> None:
        self.inner = ReferenceAdapter()
        self.cached: set[str] = set()

    def supports(self, op: str) -> bool:
        return self.inner.supports(op)

    def call(self, op: str, payload: JsonDict) -> Any:
        out = self.inner.call(op, payload)
        if op == "store.open" and payload.get("caching") and "handle" in out:
            self.cached.add(out["handle"])
        if op in ("store.reverse_all", "store.reverse_range") and payload.get("handle") in self.cached \
                and out.get("entries"):
            return {**out, "entries": out["entries"][1:]}
        return out


def test_withholding_cache_7_is_what_lets_the_machine_pass_over_a_reverse_cached_scan_bug(tmp_path: Path) -> None:
    """The key-value machine finds the bug; with CACHE-7 withheld it runs every other step and passes."""
    (tmp_path / "full").mkdir()
    (tmp_path / "withheld").mkdir()
    with pytest.raises(AssertionError, match="reverse"):
        kv_machine._run(_ReverseCachedScansWrong(), "kv", "memory", tmp_path / "full")
    with withholding(frozenset({"CACHE-7"})):
        kv_machine._run(_ReverseCachedScansWrong(), "kv", "memory", tmp_path / "withheld")


class _ForgetsSegmentsAtReopen(ImplementationAdapter):
    """The reference, except that a reopened versioned store registers none of the segments in its database: Kafka's
    VS-14 bug (``LogicalKeyValueSegments.openExisting`` only opens the database). With ``crash_keeps_writes`` a
    crash is a clean close too, so the reopened store keeps the writes since its last commit: a VS-17 bug that only
    the machine's crashes reach."""

    name = "forgets-segments-at-reopen"

    def __init__(self, crash_keeps_writes: bool = False) -> None:
        self.inner = ReferenceAdapter()
        self.crash_keeps_writes = crash_keeps_writes

    def supports(self, op: str) -> bool:
        return self.inner.supports(op)

    def call(self, op: str, payload: JsonDict) -> Any:
        if op == "store.crash" and self.crash_keeps_writes:
            return self.inner.call("store.close", payload)
        if op != "store.open":
            return self.inner.call(op, payload)
        found = LogicalKeyValueSegments.segment_ids_on_disk
        LogicalKeyValueSegments.segment_ids_on_disk = lambda self: []  # type: ignore[method-assign]
        try:
            return self.inner.call(op, payload)
        finally:
            LogicalKeyValueSegments.segment_ids_on_disk = found  # type: ignore[method-assign]


def _run_versioned(implementation: ImplementationAdapter, base: Path) -> None:
    """The versioned machine on RocksDB with enough examples to reach a reopen after segments are written, whatever
    the loaded profile."""
    caps = capabilities_of(implementation)
    run_state_machine_as_test(  # type: ignore[no-untyped-call,unused-ignore]
        lambda: versioned_machine.VersionedStoreMachine(implementation, "versioned_kv", "rocksdb", base, caps),  # type: ignore[arg-type,unused-ignore]
        settings=settings(max_examples=100, stateful_step_count=40, deadline=None, database=None, derandomize=True,
                          phases=[Phase.explicit, Phase.reuse, Phase.generate],
                          suppress_health_check=list(HealthCheck)))


def test_withholding_vs_14_leaves_out_only_the_reopens_that_find_segments(tmp_path: Path) -> None:
    """The versioned machine finds the forgotten segments; with VS-14 withheld it passes over them, and it still
    restarts and crashes the store, so a crash that keeps unflushed writes (VS-17) is found with VS-14 withheld."""
    for part in ("full", "withheld", "crash"):
        (tmp_path / part).mkdir()
    with pytest.raises(AssertionError):
        _run_versioned(_ForgetsSegmentsAtReopen(), tmp_path / "full")
    with withholding(frozenset({"VS-14"})):
        _run_versioned(_ForgetsSegmentsAtReopen(), tmp_path / "withheld")
        with pytest.raises(AssertionError, match="after a crash the store holds"):
            _run_versioned(_ForgetsSegmentsAtReopen(crash_keeps_writes=True), tmp_path / "crash")
