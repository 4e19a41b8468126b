"""The examples of third-party implementations run through the suite: what they implement passes, and
everything else is reported as skipped (unsupported), never as failed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from suite_runner import REPO_ROOT, SuiteRun, child_env, run_suite

rules = pytest.mark.rules
EXAMPLES = REPO_ROOT / "examples"
OPERATIONS = {"varint.write_varint", "varint.read_varint", "varint.write_varlong", "varint.read_varlong",
              "timestamped.serialize", "timestamped.deserialize"}
MUST_PASS = [
    "test_primitives_properties.py::test_varint_round_trips",
    "test_primitives_properties.py::test_varlong_round_trips",
    "test_primitives_properties.py::test_zigzag_keeps_small_magnitudes_short",
    "test_timestamped_properties.py::test_layout_is_big_endian_timestamp_then_value",
    "test_timestamped_properties.py::test_null_is_null_and_empty_is_eight_bytes",
    "test_ops_protocol.py::test_a_varint_that_never_ends_is_refused",
]


NODE_OPERATIONS = OPERATIONS | {"timestamped.raw_value", "timestamped.timestamp"}


def check_example_run(run: SuiteRun, operations: set[str] = OPERATIONS) -> None:
    assert run.returncode == 0, run.stdout[-3000:]
    outcomes = run.outcomes
    assert not run.by_outcome("failed")
    passed = {o["test_id"] for o in run.by_outcome("passed")}
    assert set(MUST_PASS) <= passed, sorted(set(MUST_PASS) - passed)
    # A skip is something the example does not offer, a paired machine in a run without a model, or a case of the
    # kit's own tools alone (the last two not applicable).
    reasons = ("support", "offers no", "lacks the", "testee", "beside a model implementation",
               "is a kit tool, not store behaviour")
    for outcome in run.by_outcome("skipped"):
        assert any(reason in outcome["detail"] for reason in reasons), outcome
    golden = [o for o in outcomes if o["test_id"].startswith("test_golden.py::")]
    from kstate_conformance.fixtures import all_cases

    op_of = {case["id"]: case["op"] for case in all_cases()}
    for outcome in golden:
        case_op = op_of[outcome["test_id"].split("[", 1)[1].rstrip("]")]
        assert outcome["outcome"] == ("passed" if case_op in operations else "skipped"), outcome
    assert len(run.by_outcome("skipped")) > len(passed)


def test_the_in_process_example_adapter(tmp_path: Path) -> None:
    run = run_suite("mini_codecs:create", tmp_path / "report", "--kstate-profile", "quick",
                    env=child_env(EXAMPLES / "inprocess_adapter"))
    check_example_run(run)


@rules("TP-3", "TP-5", "TP-7", "TP-8")
@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_node_testee(tmp_path: Path) -> None:
    run = run_suite(f"cmd:node {EXAMPLES / 'node_testee' / 'testee.js'}", tmp_path / "report",
                    "--kstate-profile", "quick", "--kstate-testee-validate")
    check_example_run(run, NODE_OPERATIONS)
    protocol = {o["test_id"]: o["outcome"] for o in run.outcomes if o["test_id"].startswith("test_testee_protocol")}
    # The Node example offers neither stores nor header_values.serialize_headers (TP-12's case): those two skip.
    assert protocol and all(v == "passed" for t, v in protocol.items()
                            if "store_handles" not in t and "not_unicode" not in t), protocol


GO_OPERATIONS = OPERATIONS | {"header_values.serialize_headers"}


def _go() -> str | None:
    found = shutil.which("go")
    if found is None and Path("/usr/local/go/bin/go").exists():
        found = "/usr/local/go/bin/go"
    return found


@rules("TP-3", "TP-5", "TP-7", "TP-8", "TP-11", "TP-12")
@pytest.mark.skipif(_go() is None, reason="go is not installed (neither on PATH nor /usr/local/go/bin/go)")
def test_the_go_testee(tmp_path: Path) -> None:
    import os
    import subprocess

    binary = tmp_path / "go_testee"
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GOCACHE": str(tmp_path / "gocache"), "GOPATH": str(tmp_path / "gopath"),
           "GOPROXY": "off", "CGO_ENABLED": "0"}
    built = subprocess.run([str(_go()), "build", "-o", str(binary), "."], cwd=EXAMPLES / "go_testee", env=env,
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    run = run_suite(f"cmd:{binary}", tmp_path / "report", "--kstate-profile", "quick", "--kstate-testee-validate")
    check_example_run(run, GO_OPERATIONS)
    protocol = {o["test_id"]: o["outcome"] for o in run.outcomes if o["test_id"].startswith("test_testee_protocol")}
    assert protocol and all(v == "passed" for t, v in protocol.items() if "store_handles" not in t), protocol
    # The HV-16 key travels as UTF-16 hex (TP-12) and the Go testee writes "?" for it, as Java does.
    hv16 = [o for o in run.outcomes if "unpaired_surrogate_is_written_as_a_question_mark" in o["test_id"]]
    assert hv16 and all(o["outcome"] == "passed" for o in hv16), hv16
