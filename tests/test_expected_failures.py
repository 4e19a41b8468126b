"""Strict expected-failure files (as protobuf's failure lists): listed failures are xfail, listed passes
fail the run, ``--kstate-fix`` rewrites the list; plus reports with minimal failing examples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from suite_runner import run_suite

from kstate_conformance.expectations import Entry, ExpectedFailures, stable_test_id
from kstate_conformance.report import minimal_example

MUTANT = "mutant:unsigned-varints"
SUBSET = ("--kstate-profile", "quick")
#: Only this module is collected: collecting the whole suite would cost more than running these tests.
MODULE = ("test_primitives_properties",)
FAILING = [
    "test_primitives_properties.py::test_varint_round_trips",
    "test_primitives_properties.py::test_varlong_round_trips",
    "test_primitives_properties.py::test_zigzag_keeps_small_magnitudes_short",
]
PASSING = "test_primitives_properties.py::test_segment_id_truncates_toward_zero"


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory: pytest.TempPathFactory) -> object:
    return run_suite(MUTANT, tmp_path_factory.mktemp("plain"), *SUBSET, modules=MODULE)


def test_the_mutant_fails_exactly_the_listed_tests(plain_run: object) -> None:
    failed = sorted(o["test_id"] for o in plain_run.by_outcome("failed"))  # type: ignore[attr-defined]
    assert failed == FAILING
    passed = {o["test_id"] for o in plain_run.by_outcome("passed")}  # type: ignore[attr-defined]
    assert PASSING in passed
    stdout = plain_run.stdout  # type: ignore[attr-defined]
    assert "failures by rule and operation: 3 failed tests in" in stdout
    assert stdout.strip().splitlines()[-1].startswith("CONFORMANCE SUITE FAILED for mutant:unsigned-varints: ")


def test_a_round_trip_failure_blames_the_write_and_shows_its_expected_output(plain_run: object) -> None:
    # The read back is what the assertion checks, but the mutant's write is what is wrong.
    failure = next(o for o in plain_run.by_outcome("failed")  # type: ignore[attr-defined]
                   if o["test_id"] == FAILING[0])
    assert failure["op"] == "varint.write_varint"
    assert failure["expected"] != failure["actual"] and set(failure["expected"]) == {"bytes", "size"}
    assert "operation varint.write_varint · " in plain_run.stdout  # type: ignore[attr-defined]
    assert "operation varint.read_varint" not in plain_run.stdout  # type: ignore[attr-defined]


def test_listed_failures_are_expected_and_the_run_passes(tmp_path: Path) -> None:
    listing = tmp_path / "mutant.txt"
    listing.write_text("# failures of the unsigned-varints mutant\n\n" + "\n".join(
        f"{t}  # writes LEB128 without zig-zag" for t in FAILING) + "\n")
    run = run_suite(MUTANT, tmp_path / "report", *SUBSET, "--kstate-expected-failures", str(listing), modules=MODULE)
    assert run.returncode == 0, run.stdout[-2000:]
    assert sorted(o["test_id"] for o in run.by_outcome("xfailed")) == FAILING
    assert all(o["expected_failure"] for o in run.by_outcome("xfailed"))
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "3 failed as expected" in markdown and "xfail" in markdown


def test_a_listed_test_that_passes_fails_the_run(tmp_path: Path) -> None:
    listing = tmp_path / "mutant.json"
    listing.write_text(json.dumps([*FAILING, {"id": PASSING, "reason": "stale"}]))
    run = run_suite(MUTANT, tmp_path / "report", *SUBSET, "--kstate-expected-failures", str(listing), modules=MODULE)
    assert run.returncode == 1
    assert f"  UNEXPECTED PASS {PASSING}" in run.stdout
    assert "test test_segment_id_truncates_toward_zero · rules PRIM-4 · 1" in run.stdout
    # Reported as what it is, not as a failure of the test.
    assert not [line for line in run.stdout.splitlines() if line.startswith("FAILED") and PASSING in line]
    assert "1 unexpected pass" in run.stdout and "1 unexpected passes" in run.stdout.splitlines()[-1]
    assert [o["test_id"] for o in run.by_outcome("unexpected_pass")] == [PASSING]
    assert not run.by_outcome("failed")
    assert "unexpected pass" in (tmp_path / "report" / "report.md").read_text()


def test_a_listed_drawn_test_that_may_pass_passes_without_failing_the_run(tmp_path: Path) -> None:
    """An entry whose reason says ``may pass: ...`` (a drawn test reaching its bug in some sequences only): its pass
    is listed, not an unexpected pass; the same entry without it fails the run (above)."""
    listing = tmp_path / "mutant.json"
    listing.write_text(json.dumps([*FAILING, {"id": PASSING, "reason": "[KAFKA-BUG] PRIM-4; may pass: drawn"}]))
    run = run_suite(MUTANT, tmp_path / "report", *SUBSET, "--kstate-expected-failures", str(listing), modules=MODULE)
    assert run.returncode == 0, run.stdout[-2000:]
    assert "UNEXPECTED PASS" not in run.stdout
    assert f"1 listed tests passed where their entry says they may (their drawn sequences missed the bug): {PASSING}" \
        in run.stdout


def test_an_unlisted_failure_still_fails_the_run_and_wildcards_match(tmp_path: Path) -> None:
    listing = tmp_path / "mutant.txt"
    listing.write_text("test_primitives_properties.py::test_var*_round_trips\n")
    run = run_suite(MUTANT, tmp_path / "report", *SUBSET, "--kstate-expected-failures", str(listing), modules=MODULE)
    assert run.returncode == 1
    assert len(run.by_outcome("xfailed")) == 2
    assert [o["test_id"] for o in run.by_outcome("failed")] == [FAILING[2]]


def test_fix_rewrites_the_list_with_the_actual_failures(tmp_path: Path) -> None:
    listing = tmp_path / "mutant.txt"
    listing.write_text(f"# my header\n{FAILING[0]}  # known\n{PASSING}\ntest_golden.py::test_golden[not.run]\n")
    run = run_suite(MUTANT, tmp_path / "report", *SUBSET, "--kstate-expected-failures", str(listing), "--kstate-fix", modules=MODULE)
    assert run.returncode == 0, run.stdout[-2000:]
    assert f"--fix wrote {listing}: 4 entries, 2 added, 1 removed" in run.stdout
    assert run.stdout.strip().splitlines()[-1].startswith(
        f"CONFORMANCE SUITE RUN, EXPECTED FAILURES WRITTEN (--fix wrote {listing}: 4 entries")
    assert f"  - {PASSING}" in run.stdout
    for test_id in FAILING[1:]:
        added = next(line for line in run.stdout.splitlines() if line.startswith(f"  + {test_id}  # "))
        assert "assert" in added.split("  # ", 1)[1].lower()
    # The reason column: every entry added carries the failure's first line, for the porter to edit.
    for line in listing.read_text().splitlines():
        if line.startswith(tuple(FAILING[1:])):
            assert "  # " in line and line.split("  # ", 1)[1].strip()
    fixed = ExpectedFailures.load(listing)
    # Failures in, the passing entry out, the entry for a test this narrowed run did not run kept.
    assert [e.pattern for e in fixed.entries] == sorted([*FAILING, "test_golden.py::test_golden[not.run]"])
    assert fixed.match(FAILING[0]) == Entry(FAILING[0], "known")
    assert listing.read_text().startswith("# my header\n")
    rerun = run_suite(MUTANT, tmp_path / "again", *SUBSET, "--kstate-expected-failures", str(listing), modules=MODULE)
    assert rerun.returncode == 0, rerun.stdout[-2000:]


def test_the_report_shows_the_minimal_failing_example(plain_run: object) -> None:
    failure = next(o for o in plain_run.by_outcome("failed")  # type: ignore[attr-defined]
                   if o["test_id"] == FAILING[0])
    assert failure["example"].startswith("Falsifying example: test_varint_round_trips(")
    assert "value=" in failure["example"] and "implementation=" not in failure["example"]
    markdown = (plain_run.report_dir / "report.md").read_text()  # type: ignore[attr-defined]
    assert "Minimal failing example:" in markdown and "Falsifying example: test_varint_round_trips(" in markdown


def test_stable_ids_do_not_depend_on_where_the_suite_lives() -> None:
    expected = "test_golden.py::test_golden[reference.primitives.int64_0]"
    for prefix in ("conformance/kstate_conformance/tests/", "/usr/lib/python3/site-packages/kstate_conformance/tests/",
                   "..\\venv\\Lib\\site-packages\\kstate_conformance\\tests\\"):
        assert stable_test_id(prefix + expected) == expected


def test_minimal_example_extraction_of_a_stateful_test() -> None:
    detail = ("E       AssertionError: differs\nE       Falsifying example:\nE       state = Machine()\n"
              "E       state.put(key='00', value=None)\nE       state.teardown()\n\nfile.py:3: AssertionError")
    assert minimal_example(detail) == "Falsifying example:\nstate = Machine()\nstate.put(key='00', value=None)\nstate.teardown()"
    assert minimal_example("E   assert 1 == 2") == ""


def test_fix_creates_a_missing_list_and_without_fix_a_missing_list_is_an_error(tmp_path: Path) -> None:
    listing = tmp_path / "new.json"
    run = run_suite(MUTANT, tmp_path / "missing", *SUBSET, "--kstate-expected-failures", str(listing), modules=MODULE)
    assert run.returncode == 4 and "does not exist" in run.stdout and not (tmp_path / "missing").exists()
    run = run_suite(MUTANT, tmp_path / "report", *SUBSET, "--kstate-expected-failures", str(listing), "--kstate-fix", modules=MODULE)
    assert run.returncode == 0, run.stdout[-2000:]
    written = json.loads(listing.read_text())
    assert [e["id"] for e in written] == FAILING and all(e["reason"] for e in written)


def test_entries_of_deselected_tests_are_not_stale(tmp_path: Path) -> None:
    """An entry for a test the run did not select (another level, -k) is not applied and not called stale; an entry
    that names no test of the suite is (issue 31: hardened entries at ``--level required``)."""
    listing = tmp_path / "mutant.txt"
    listing.write_text("\n".join([*(f"{t}  # zig-zag" for t in FAILING),
                                  "test_golden.py::test_golden[reference.primitives.int64_0]  # not selected",
                                  "test_nothing.py::test_none  # names no test"]) + "\n")
    run = run_suite(MUTANT, tmp_path / "report", "-k", "test_primitives_properties", *SUBSET, "--kstate-expected-failures", str(listing))
    assert run.returncode == 0, run.stdout[-2000:]
    assert "1 expected-failure entries name only tests this run did not select" in run.stdout
    assert "1 expected-failure entries match no test of this run" in run.stdout
    assert "  test_nothing.py::test_none" in run.stdout
    assert "  test_golden.py::test_golden[reference.primitives.int64_0]" not in run.stdout
