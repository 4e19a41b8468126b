"""The protocol proven, not just described: the whole suite runs through the reference testee, and gives
the same verdict per test as the in-process reference; within each run every backend agrees."""

from __future__ import annotations

import sys

import pytest
from suite_runner import SuiteRun, finish, start_suite

from kstate_conformance.differential import backend_disagreements, backend_groups, compare_verdicts

rules = pytest.mark.rules
TESTEE = f"cmd:{sys.executable} -m kstate.testee"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, SuiteRun]:
    root = tmp_path_factory.mktemp("differential")
    # Both runs at once: one per core.
    started = {
        "in-process": (start_suite("reference", root / "in-process", "--kstate-profile", "quick"), root / "in-process"),
        "testee": (start_suite(TESTEE, root / "testee", "--kstate-profile", "quick", "--kstate-testee-validate"),
                   root / "testee"),
    }
    return {name: finish(proc, directory) for name, (proc, directory) in started.items()}


@rules("TP-1", "TP-2", "TP-3", "TP-4", "TP-5", "TP-6", "TP-9", "TP-10")
def test_the_full_suite_passes_through_the_reference_testee(runs: dict[str, SuiteRun]) -> None:
    run = runs["testee"]
    assert run.returncode == 0, run.stdout[-3000:]
    outcomes = run.outcomes
    assert len(outcomes) > 500
    assert not run.by_outcome("failed")
    protocol_tests = [o for o in outcomes if o["test_id"].startswith("test_testee_protocol.py::")]
    assert protocol_tests and all(o["outcome"] == "passed" for o in protocol_tests), protocol_tests


def test_in_process_and_testee_verdicts_are_identical(runs: dict[str, SuiteRun]) -> None:
    in_process, testee = runs["in-process"], runs["testee"]
    assert in_process.returncode == 0, in_process.stdout[-3000:]
    a = {o["test_id"]: o["outcome"] for o in in_process.outcomes}
    b = {o["test_id"]: o["outcome"] for o in testee.outcomes}
    # The protocol's own tests run only against a testee; everything else must agree test by test.
    a = {t: v for t, v in a.items() if not t.startswith("test_testee_protocol.py::")}
    b = {t: v for t, v in b.items() if not t.startswith("test_testee_protocol.py::")}
    comparison = compare_verdicts(a, b, "in-process", "testee")
    assert comparison.identical, "\n".join(comparison.describe())
    assert comparison.compared == len(a) > 500


def test_rocksdb_and_in_memory_backends_give_the_same_verdicts(runs: dict[str, SuiteRun]) -> None:
    for name, run in runs.items():
        outcomes = run.outcomes
        assert backend_groups(outcomes) >= 20, f"{name}: too few tests run on both backends"
        assert backend_disagreements(outcomes) == {}, name


def test_a_difference_in_verdicts_is_reported() -> None:
    comparison = compare_verdicts({"a": "passed", "b": "failed", "c": "passed"}, {"a": "passed", "b": "passed"})
    assert not comparison.identical
    assert comparison.changed == [("b", "failed", "passed")] and comparison.only_a == ["c"]
    disagreements = backend_disagreements([
        {"test_id": "t.py::x[kv-rocksdb]", "backend": "rocksdb", "outcome": "passed"},
        {"test_id": "t.py::x[kv-memory]", "backend": "memory", "outcome": "failed"},
        {"test_id": "t.py::y[rocksdb]", "backend": "rocksdb", "outcome": "passed"},
        {"test_id": "t.py::y[memory]", "backend": "memory", "outcome": "skipped"},
    ])
    assert disagreements == {"t.py::x[kv]": {"rocksdb": "passed", "memory": "failed"}}


def test_the_reports_carry_stable_ids_and_the_store_matrix(runs: dict[str, SuiteRun]) -> None:
    run = runs["in-process"]
    assert all("::" in o["test_id"] and not o["test_id"].startswith(("conformance/", "/")) for o in run.outcomes)
    stores = {(o["store_type"], o["backend"]) for o in run.outcomes}
    assert ("kv", "rocksdb") in stores and ("timestamped_kv_headers", "memory") in stores
    markdown = (run.report_dir / "report.md").read_text()
    assert "## Rules × store types × backends" in markdown and "kv · rocksdb" in markdown
    assert "<table>" in (run.report_dir / "report.html").read_text()
