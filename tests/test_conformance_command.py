"""``kstate conformance``: an unusable implementation is reported once, before collection, with exit code 2;
verdicts that do not over-claim (``partial``, ``n/a``); failures grouped by rule and operation; the closing
line; tidy JUnit XML; OPS-1 on an implementation without varints."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from suite_runner import REPO_ROOT, child_env, run_suite

from kstate_conformance.plugin import blamed_call, tidy_junit, unwrapped_error
from kstate_conformance.report import (
    NOT_APPLICABLE,
    UNSUPPORTED,
    RunReport,
    TestOutcome,
    _verdict,
    classify_skip,
    closing_line,
    console_summary,
    grouped_listing,
    render_html,
    render_markdown,
)

MODULE = '''
from kstate_conformance.adapter import ImplementationAdapter
class Adapter(ImplementationAdapter):
    name = "tiny"
    def __init__(self, ops): self.ops = ops
    def supports(self, op): return op in self.ops
    def call(self, op, payload):
        from kstate_conformance.adapter import Unsupported
        if op not in self.ops: raise Unsupported(op)
        from kstate.ops import call
        return call(op, payload)
def timestamped_only(): return Adapter({"timestamped.serialize", "timestamped.deserialize"})
def nothing(): return Adapter(set())
def broken(): raise RuntimeError("no licence key")
NOT_A_FACTORY = 42
'''
GARBAGE = "import sys\nsys.stdin.readline()\nprint('hello there', flush=True)\nsys.stdin.read()\n"
SILENT = "import sys, time\nsys.stdin.readline()\ntime.sleep(60)\n"


@pytest.fixture(scope="module")
def impl_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("impl")
    (directory / "tiny_impl.py").write_text(MODULE, encoding="utf-8")
    (directory / "garbage.py").write_text(GARBAGE, encoding="utf-8")
    (directory / "silent.py").write_text(SILENT, encoding="utf-8")
    return directory


def kstate(impl_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kstate.cli", "conformance", "--no-progress", "--quick", *args],
                          capture_output=True, text=True, env=child_env(impl_dir), cwd=REPO_ROOT, timeout=300,
                          check=False)


@pytest.mark.parametrize(("impl", "message"), [
    ("no_such_module:create", "no module named 'no_such_module'"),
    ("tiny_impl:NOT_A_FACTORY", "is a int, neither callable nor an adapter"),
    ("tiny_impl:missing", "has no attribute 'missing'"),
    ("tiny_impl:broken", "tiny_impl.broken() raised RuntimeError: no licence key"),
    ("cmd:/nonexistent/testee-program", "exited with code 127"),
    ("cmd:{python} {dir}/garbage.py", "not JSON: Expecting value: line 1 column 1 (char 0)): 'hello there'"),
    ("cmd:{python} {dir}/silent.py", "no answer within 1 s"),
    ("mutant:no-such-mutant", "no mutant named 'no-such-mutant'"),
])
def test_an_unusable_implementation_is_one_setup_error_before_any_test(impl_dir: Path, impl: str,
                                                                        message: str) -> None:
    spec = impl.format(python=sys.executable, dir=impl_dir)
    proc = kstate(impl_dir, "--impl", spec, "--start-timeout", "1")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2, output[-2000:]
    assert message in output and "no test was run" in output
    # Nothing was collected or run: no counts, no tracebacks, no closing line.
    assert not re.search(r"\d+ (passed|failed|skipped|errors?|deselected)\b", output), output[-2000:]
    assert "Traceback" not in output and "CONFORMANCE SUITE" not in output
    assert output.count("ERROR:") == 1


def test_the_exit_codes_are_documented_in_the_help() -> None:
    proc = subprocess.run([sys.executable, "-m", "kstate.cli", "conformance", "--help"], capture_output=True,
                          text=True, env=child_env(), cwd=REPO_ROOT, check=True)
    for code, words in ((0, "conforming"), (1, "not conforming"), (2, "usage or setup error"), (3, "internal error")):
        assert f"  {code}  {words}" in proc.stdout


def test_a_missing_expected_failure_file_is_an_error_without_fix(impl_dir: Path, tmp_path: Path) -> None:
    proc = kstate(impl_dir, "--expected-failures", str(tmp_path / "absent.txt"), "--", "-k", "test_ops_protocol")
    assert proc.returncode == 2
    assert "does not exist" in proc.stderr and "--fix" in proc.stderr
    assert "passed" not in proc.stdout


@pytest.mark.rules("OPS-1")
def test_ops1_does_not_fail_an_implementation_without_varints(impl_dir: Path, tmp_path: Path) -> None:
    selected = ("-k", "test_an_unknown_operation_is_not_claimed", "--kstate-profile", "quick")
    run = run_suite("tiny_impl:timestamped_only", tmp_path / "some", *selected, env=child_env(impl_dir))
    assert run.returncode == 0, run.stdout[-2000:]
    assert [o["outcome"] for o in run.outcomes] == ["passed"]
    run = run_suite("tiny_impl:nothing", tmp_path / "none", *selected, env=child_env(impl_dir))
    assert run.returncode == 0, run.stdout[-2000:]
    assert [o["outcome"] for o in run.outcomes] == ["skipped"]
    assert run.outcomes[0]["skip_kind"] == UNSUPPORTED


def test_unsupported_and_failed_runs_read_as_such(impl_dir: Path, tmp_path: Path) -> None:
    run = run_suite("tiny_impl:timestamped_only", tmp_path / "r", "-k", "test_timestamped_properties or test_golden",
                    "--kstate-profile", "quick", "--kstate-grouped-failures", f"--junitxml={tmp_path / 'j.xml'}",
                    env=child_env(impl_dir))
    assert run.returncode == 0, run.stdout[-2000:]
    last = run.stdout.strip().splitlines()[-1]
    assert last.startswith("CONFORMANCE SUITE PASSED for tiny_impl:timestamped_only: ")
    assert "0 failed, 0 expected failures, 0 unexpected passes" in last and f"reports written to {tmp_path / 'r'}" in last
    assert "operations not supported by tiny_impl:timestamped_only" in run.stdout
    # Where the time went (issue 22): each phase, then the slowest tests by their stable ids.
    assert "time by phase: start-up and collection " in run.stdout
    slowest = run.stdout.split("slowest tests (setup, call and teardown):")[1].splitlines()[1:4]
    assert all(line.strip().split("  ", 1)[1].startswith("test_") for line in slowest), slowest
    # And the CPU time of the process tree (issue 35): this process's and its ended children's.
    cpu = re.search(r"CPU time of the process tree: ([0-9.]+) s \(this process ([0-9.]+) s, its ended children "
                    r"([0-9.]+) s\)", run.stdout)
    assert cpu is not None, run.stdout[-2000:]
    assert float(cpu[2]) > 0 and abs(float(cpu[1]) - float(cpu[2]) - float(cpu[3])) < 0.11
    markdown = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    assert "| TSKV-1 | required |" in markdown and "| partial |" in markdown
    assert "## Unsupported operations" in markdown and "| `timestamped.raw_value` |" in markdown
    junit = (tmp_path / "j.xml").read_text(encoding="utf-8")
    assert 'classname="kstate_conformance.tests.test_timestamped_properties"' in junit
    assert "hypothesis-statistics" not in junit and 'classname="conformance.' not in junit


def outcome(test_id: str, result: str, rules: list[str], detail: str = "", **extra: object) -> TestOutcome:
    kind, missing = classify_skip(detail) if result == "skipped" else ("", "")
    return TestOutcome(test_id, result, rules, "required", detail, skip_kind=kind, unsupported=missing,
                       **extra)  # type: ignore[arg-type]


def test_verdicts_say_partial_and_not_applicable() -> None:
    report = RunReport("x", [
        outcome("a", "passed", ["A-1"]), outcome("b", "skipped", ["A-1"], "Skipped: x does not support operation op.b"),
        outcome("c", "passed", ["B-1"]), outcome("d", "skipped", ["B-1"], "Skipped: the implementation under test "
                                                                          "is not an out-of-process testee"),
        outcome("e", "skipped", ["C-1"], "Skipped: x does not support operation op.b"),
        outcome("f", "skipped", ["D-1"], "Skipped: not an out-of-process testee"),
    ])
    assert {rule: _verdict(counts) for rule, counts in report.by_rule().items()} == {
        "A-1": "partial", "B-1": "pass", "C-1": "unsupported", "D-1": "n/a"}
    assert report.unsupported_operations() == {"op.b": 2}
    assert classify_skip("Skipped: the implementation offers no key-value store operations") == (
        UNSUPPORTED, "key-value store operations")
    assert classify_skip("Skipped: Kafka does not refuse calls on a closed in-memory store (KV-43)")[0] == NOT_APPLICABLE


def test_one_bug_failing_sixteen_cases_is_one_group() -> None:
    failures = [outcome(f"test_golden.py::test_golden[c{i}]", "failed", ["TSKV-1"], "E   AssertionError: differs",
                        op="timestamped.serialize", input={"timestamp": i}, expected={"bytes": "00"},
                        actual={"bytes": "01"}) for i in range(16)]
    other = outcome("test_x.py::test_y", "failed", ["PRIM-1"], "E   assert 1 == 2", op="primitives.encode_int64")
    report = RunReport("m", [*failures, other, outcome("p", "unexpected_pass", ["PRIM-1"])])
    groups = report.failure_groups()
    assert [(g.op, len(g.outcomes)) for g in groups] == [("timestamped.serialize", 16), ("primitives.encode_int64", 1)]
    lines = console_summary(report)
    assert sum(line.startswith("[") for line in lines) == 2
    assert sum("test_golden.py::test_golden[" in line for line in lines) == 3
    assert any('input:     {"timestamp": 0}' in line for line in lines)
    assert any('expected:  {"bytes": "00"}' in line for line in lines)
    assert any('actual:    {"bytes": "01"}' in line for line in lines)
    markdown = render_markdown(report, {})
    assert len(re.findall(r"\n### \d+\. ", markdown)) == 2 and "### 1. rules TSKV-1 · operation timestamped.serialize · 16 failed" in markdown
    assert markdown.count("| `test_golden[c") == 16 and markdown.count("#### `test_golden.py::") == 5
    assert render_html(report, {}).count("<div class='group' id='failure-") == 2
    line = closing_line(report, None)
    assert line.startswith("CONFORMANCE SUITE FAILED for m: 0 of 2 rules pass, 2 failed; 0 passed, 17 failed, "
                           "0 expected failures, 1 unexpected passes, 0 skipped")


def test_junit_xml_without_hypothesis_blobs_and_with_module_class_names(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    path.write_text(
        '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest"><properties>'
        '<property name="hypothesis-statistics-x" value="aGVsbG8="/></properties>'
        '<testcase classname="usr.lib.python3.site-packages.kstate_conformance.tests.test_golden" name="t"/>'
        '<testcase classname="conformance.kstate_conformance.tests.test_ops_protocol" name="u"/>'
        '</testsuite></testsuites>', encoding="utf-8")
    tidy_junit(path)
    text = path.read_text(encoding="utf-8")
    assert "hypothesis-statistics" not in text and "<properties" not in text
    names = Counter(part.split('"')[1] for part in text.split("classname=")[1:])
    assert set(names) == {"kstate_conformance.tests.test_golden", "kstate_conformance.tests.test_ops_protocol"}


def test_the_closing_line_says_how_much_was_tested() -> None:
    report = RunReport("porter", [
        outcome("a", "passed", ["A-1"]), outcome("b", "passed", ["A-2"]),
        outcome("c", "passed", ["B-1"]), outcome("d", "skipped", ["B-1"], "Skipped: x does not support operation op.b"),
        outcome("e", "skipped", ["C-1"], "Skipped: x does not support operation op.c"),
        outcome("f", "skipped", ["D-1"], "Skipped: not an out-of-process testee"),
    ], operations=(14, 168))
    line = closing_line(report, None)
    assert line.startswith("CONFORMANCE SUITE PASSED for porter: 2 of 5 rules pass, 1 partial, 1 unsupported, "
                           "1 not applicable (14 of 168 operations); 3 passed, 0 failed")
    report.requirement_shortfalls = {"C-1": "unsupported"}
    assert closing_line(report, None).startswith("CONFORMANCE SUITE FAILED for porter: ")
    assert "1 required rules not met" in closing_line(report, None)
    assert any("C-1 (unsupported)" in line for line in console_summary(report))


def test_a_fix_run_says_what_it_wrote() -> None:
    report = RunReport("m", [outcome("a", "failed", ["A-1"], "E   assert 1 == 2")],
                       fixed="--fix wrote x.txt: 1 entries, 1 added, 0 removed")
    line = closing_line(report, None)
    assert line.startswith("CONFORMANCE SUITE RUN, EXPECTED FAILURES WRITTEN (--fix wrote x.txt: 1 entries, 1 added")
    assert "FAILED" not in line


def test_groups_of_one_operation_are_merged_whatever_their_rules() -> None:
    golden = [outcome(f"test_golden.py::test_golden[c{i}]", "failed", ["PRIM-5"], "E   x", op="varint.write_varlong")
              for i in range(4)]
    hostile = outcome("test_hostile.py::test_types[varint.write_varlong]", "failed", ["OPS-2"], "E   y",
                      op="varint.write_varlong")
    report = RunReport("m", [*golden, hostile])
    (group,) = report.failure_groups()
    assert group.rules == ["OPS-2", "PRIM-5"] and len(group.outcomes) == 5
    # The first failure of each test leads, so that the examples shown cover every test of the group.
    assert [o.test_id for o in group.outcomes[:2]] == [golden[0].test_id, hostile.test_id]


def test_listings_are_grouped_by_operation_and_keep_whole_reasons() -> None:
    reason = "AssertionError: " + "x" * 200
    lines = grouped_listing([("varint.write_varlong", ["PRIM-5"], f"+ t{i}  # {reason}") for i in range(101)]
                            + [("primitives.compare", ["PRIM-2"], "+ u  # other")])
    assert lines[0] == "operation varint.write_varlong · rules PRIM-5 · 101"
    assert lines[1] == f"  + t0  # {reason}" and lines[6] == "  ... and 96 more"
    assert lines[7:] == ["operation primitives.compare · rules PRIM-2 · 1", "  + u  # other"]


def test_hypothesis_wrappers_are_unwrapped_to_the_innermost_error() -> None:
    from hypothesis.errors import FlakyFailure

    inner = AssertionError("assert {'value': -1} == {'value': 1}")
    # As hypothesis attaches it (add_note is Python 3.11's; the attribute is what it sets).
    inner.__notes__ = ["Falsifying example: test_varlong_round_trips(\n    codec=<x>,\n    value=1,\n)"]
    wrapped = FlakyFailure("Hypothesis test_varlong_round_trips(codec=<x.Adapter object at 0x7f>, value=1) produces "
                           "unreliable results", [
        FlakyFailure("two errors", [inner, ValueError("other")])])
    message, example = unwrapped_error(wrapped)
    assert message.splitlines()[0] == "AssertionError: assert {'value': -1} == {'value': 1}"
    assert "FlakyFailure: Hypothesis test_varlong_round_trips(value=1) produces" in message and "+---" not in message
    assert example == "Falsifying example: test_varlong_round_trips(\n    value=1,\n)"
    assert unwrapped_error(ValueError("plain")) == ("", "")


def test_a_round_trip_blames_the_call_whose_answer_is_wrong() -> None:
    write = ("varint.write_varlong", {"value": 1}, {"bytes": "01", "size": 1})  # the reference writes 02
    read = ("varint.read_varlong", {"bytes": "01"}, {"value": -1, "bytes_consumed": 1})  # right for its input
    assert blamed_call([write, read]) == ("varint.write_varlong", {"value": 1}, {"bytes": "02", "size": 1},
                                          {"bytes": "01", "size": 1})
    # A call that raised (a crash, a hang) is the one that failed.
    assert blamed_call([write, ("varint.read_varlong", {"bytes": "01"}, None)])[:2] == (
        "varint.read_varlong", {"bytes": "01"})
    assert blamed_call([read]) is None


def test_required_rules_that_do_not_pass_fail_the_run(impl_dir: Path, tmp_path: Path) -> None:
    selected = ("-k", "test_an_unknown_operation_is_not_claimed", "--kstate-profile", "quick")
    run = run_suite("tiny_impl:nothing", tmp_path / "r", *selected, "--kstate-require-rules", "OPS-1",
                    env=child_env(impl_dir))
    assert run.returncode == 1, run.stdout[-2000:]
    assert "OPS-1 (unsupported)" in run.stdout
    last = run.stdout.strip().splitlines()[-1]
    assert last.startswith("CONFORMANCE SUITE FAILED for tiny_impl:nothing: 0 of 1 rules pass, 1 unsupported (0 of ")
    assert re.search(r"\(0 of \d+ operations\); 1 required rules not met;", last), last
    results = json.loads((tmp_path / "r" / "results.json").read_text(encoding="utf-8"))
    assert results["requirement_shortfalls"] == {"OPS-1": "unsupported"} and results["operations"]["supported"] == 0


def test_required_rules_are_families_or_ids_of_the_spec() -> None:
    from kstate_conformance.plugin import required_rules

    assert required_rules(["OPS-1,PRIM"], "tentative")[:2] == ["OPS-1", "PRIM-1"]
    assert "PRIM-6" in required_rules(["PRIM"], "required")
    with pytest.raises(pytest.UsageError, match="NOPE names no rule"):
        required_rules(["PRIM,NOPE"], "tentative")


def test_case_runs_exactly_the_named_tests(impl_dir: Path) -> None:
    # -k kafka-jvm.varint.decode_varint_edge_1 would also run decode_varint_edge_10, _11, ...
    proc = kstate(impl_dir, "--case", "kafka-jvm.varint.decode_varint_edge_1",
                  "--case", "test_primitives_properties.py::test_varlong_round_trips")
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert re.search(r"\b2 passed, \d+ deselected", proc.stdout), proc.stdout[-2000:]
