"""The Kafka expected-failure files against the levels and the bug reports (issue 31).

Every ``[KAFKA-BUG]`` entry names its report in ``testees/kafka-jvm/kafka-bugs/`` and every report is named by an entry
of each release it affects; at ``required`` the plugin applies no entry but the bugs: every ``[KAFKA]`` entry (a
deliberate difference) names only tests above ``required``, and no ``[TESTEE]`` entry is left there.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import cast

import pytest

from kstate_conformance.expectations import KAFKA_BUG, Entry, ExpectedFailures
from kstate_conformance.fixtures import all_cases

REPO = Path(__file__).resolve().parents[1]
TESTEE = REPO / "testees" / "kafka-jvm"
BUGS = TESTEE / "kafka-bugs"
VERSIONS = ("4.3.1", "4.4.0")
SECTIONS = ("- **Rule**:", "- **Kafka class and method**:", "- **Reproducer**:", "- **Affected versions**:", "## Report",
            "**Summary**:", "**Affects versions**:", "**Steps to reproduce**", "**Expected**:", "**Actual**:")
BUG_REFERENCE = re.compile(r"\(kafka-bugs/([A-Za-z0-9.-]+\.md)\b")
CLASS = re.compile(r"\s*\[([A-Z-]+)\]")


def _entries(version: str) -> list[Entry]:
    return ExpectedFailures.load(TESTEE / f"expected-failures-{version}.txt").entries


def _class(entry: Entry) -> str:
    match = CLASS.match(entry.reason)
    assert match, f"{entry.pattern}: the reason names no class"
    return match.group(1)


def _reports() -> dict[str, str]:
    return {path.name: path.read_text(encoding="utf-8") for path in sorted(BUGS.glob("*.md")) if path.name != "README.md"}


def bug_entries(entries: list[Entry]) -> dict[str, list[Entry]]:
    """``{report file: the [KAFKA-BUG] entries naming it}``; an entry that names no report is an error."""
    named: dict[str, list[Entry]] = {}
    for entry in entries:
        if _class(entry) != "KAFKA-BUG":
            continue
        match = BUG_REFERENCE.search(entry.reason)
        assert match, f"{entry.pattern}: a [KAFKA-BUG] entry must name its report (kafka-bugs/<file>.md)"
        named.setdefault(match.group(1), []).append(entry)
    return named


@pytest.mark.parametrize("version", VERSIONS)
def test_every_kafka_bug_entry_names_an_existing_report(version: str) -> None:
    reports = _reports()
    for name, entries in bug_entries(_entries(version)).items():
        assert name in reports, f"{entries[0].pattern} names kafka-bugs/{name}, which does not exist"


def test_every_report_is_named_by_an_entry_of_each_release_it_affects() -> None:
    for name, text in _reports().items():
        affected = re.search(r"- \*\*Affected versions\*\*: ([^\n(]+)", text)
        assert affected, f"{name} states no affected versions"
        versions = re.findall(r"\d+\.\d+\.\d+", affected.group(1))
        assert versions and set(versions) <= set(VERSIONS), f"{name}: affected versions {versions}"
        for version in versions:
            assert name in bug_entries(_entries(version)), f"{name}: no [KAFKA-BUG] entry of {version} names it"


def test_every_report_has_its_sections_and_a_reproducer_its_entries_list() -> None:
    golden = {case["id"] for case in all_cases()}
    for name, text in _reports().items():
        for section in SECTIONS:
            assert section in text, f"{name} lacks {section!r}"
        rule = re.search(r"- \*\*Rule\*\*: ([A-Z]+-\d+)", text)
        reproducer = re.search(r"- \*\*Reproducer\*\*: `([^`]+)`", text)
        assert rule and reproducer, f"{name}: a rule and a reproducer id in backticks"
        assert name.startswith(rule.group(1) + "-"), f"{name} is not named after its rule {rule.group(1)}"
        case = reproducer.group(1)
        test_id = f"test_golden.py::test_golden[{case}]" if case in golden else case
        assert "::" in test_id, f"{name}: {case} is neither a fixture case nor a test id"
        affected = re.search(r"- \*\*Affected versions\*\*: ([^\n(]+)", text)
        assert affected, f"{name} states no affected versions"
        for version in re.findall(r"\d+\.\d+\.\d+", affected.group(1)):
            entries = bug_entries(_entries(version)).get(name, [])
            assert any(entry.regex.fullmatch(test_id) or entry.pattern == test_id for entry in entries), (
                f"{name}: its reproducer {case} is no [KAFKA-BUG] entry of {version} naming the report")
            assert all(rule.group(1) in entry.reason for entry in entries), f"{name}: an entry names another rule"


def applied_at(level: str, files: list[Path], tmp_path: Path) -> dict[str, list[list[str]]]:
    """``{file: [[pattern, class], ...]}``: the entries of each expected-failure file that a run at ``level`` applies,
    as the kstate plugin selects that level's tests and matches entries to them (a collection-only run of the suite
    with tests/support/applied_entries_probe.py; no implementation is started)."""
    out_file = tmp_path / "applied.json"
    env = {**os.environ, "KSTATE_PROBE_FILES": os.pathsep.join(str(f) for f in files), "KSTATE_PROBE_OUT": str(out_file),
           "PYTHONPATH": os.pathsep.join([str(REPO / "tests" / "support"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "kstate_conformance.tests", "--collect-only", "-q",
                           "--kstate-level", level, "--kstate-expected-failures", str(files[0]), "-p", "applied_entries_probe",
                           "-p", "no:cacheprovider"], capture_output=True, text=True, cwd=REPO, timeout=600, check=False, env=env)
    assert out_file.exists(), done.stdout[-2000:] + done.stderr[-2000:]
    probe = json.loads(out_file.read_text(encoding="utf-8"))
    assert probe["level"] == level and probe["collected"] > 1000, probe["collected"]
    # The plugin's own list for the file it loaded is the probe's for that file.
    assert probe["plugin"] == probe["applied"][str(files[0])]
    return cast(dict[str, list[list[str]]], probe["applied"])


def not_bugs(applied: list[list[str]]) -> list[str]:
    """The applied entries that are not ``[KAFKA-BUG]``: at ``required`` there must be none (issue 31)."""
    return [f"[{tag}] {pattern}" for pattern, tag in applied if tag != KAFKA_BUG]


def test_at_the_required_level_only_kafka_bugs_are_applied(tmp_path: Path) -> None:
    """At ``--level required`` the plugin applies only ``[KAFKA-BUG]`` entries of each release's file: a deliberate
    difference (``[KAFKA]``) is a hardened or recommended rule whose tests that level does not run, and no testee
    gap (``[TESTEE]``) is left there, so a port that answers as Kafka does fails only the listed Kafka bugs. The
    mutant: the 4.4.0 file with a ``[KAFKA]`` and a ``[TESTEE]`` entry first, each naming a required test, is caught."""
    mutant = tmp_path / "mutant.txt"
    listing = (TESTEE / "expected-failures-4.4.0.txt").read_text(encoding="utf-8")
    mutant.write_text(f"{MUTANT_KAFKA}  # [KAFKA] KV-66 (hardened): a difference listed against a required test\n"
                      f"{MUTANT_TESTEE}  # [TESTEE] KV-23: a testee gap listed against a required test\n" + listing,
                      encoding="utf-8")
    files = [TESTEE / f"expected-failures-{version}.txt" for version in VERSIONS]
    applied = applied_at("required", [*files, mutant], tmp_path)
    for version, path in zip(VERSIONS, files, strict=True):
        entries = applied[str(path)]
        assert entries, f"{version}: no entry applied at required (the listed Kafka bugs are required rules)"
        assert not not_bugs(entries), f"{version}: entries other than Kafka bugs apply at required: {not_bugs(entries)}"
    assert sorted(not_bugs(applied[str(mutant)])) == [f"[KAFKA] {MUTANT_KAFKA}", f"[TESTEE] {MUTANT_TESTEE}"]


#: Two required tests (a golden case and a suite test) the mutant file lists as a difference and as a testee gap.
MUTANT_KAFKA = "test_golden.py::test_golden[spec.kv_store.refused_first_open_then_opens_empty]"
MUTANT_TESTEE = "test_kv_store_faults.py::test_a_refused_open_keeps_the_rows_and_a_retry_opens"
