"""The Kafka expected-failure files against the levels and the bug reports (issue 31).

Every ``[KAFKA-BUG]`` entry names its report in ``testees/kafka-jvm/kafka-bugs/`` and every report is named by an entry
of each release it affects; every ``[KAFKA]`` entry (a deliberate difference) names only tests above ``required``, so
that ``kstate conformance --level required`` meets no entry but the bugs and the testee's gaps.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from kstate_conformance.expectations import Entry, ExpectedFailures, stable_test_id
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


def _required_test_ids() -> set[str]:
    """The stable ids of the tests ``--kstate-level required`` runs (collected, not run)."""
    out = subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "kstate_conformance.tests", "--collect-only",
                          "-q", "--kstate-level", "required", "-p", "no:cacheprovider"],
                         capture_output=True, text=True, cwd=REPO, timeout=600, check=False)
    ids = {stable_test_id(line.strip()) for line in out.stdout.splitlines() if "::" in line}
    assert len(ids) > 1000, out.stdout[-2000:] + out.stderr[-2000:]
    return ids


def test_at_the_required_level_only_kafka_bugs_and_testee_gaps_are_listed() -> None:
    """A deliberate difference (``[KAFKA]``) is a hardened or recommended rule: its tests do not run at ``required``,
    so a port that answers as Kafka does fails only the listed Kafka bugs (issue 31)."""
    required = _required_test_ids()
    allowed = {"4.4.0": ("KAFKA-BUG", "TESTEE"), "4.3.1": ("KAFKA-BUG", "TESTEE")}
    for version in VERSIONS:
        for entry in _entries(version):
            if _class(entry) in allowed[version]:
                continue
            hits = sorted(test_id for test_id in required if entry.regex.fullmatch(test_id))
            assert not hits, f"{version}: [{_class(entry)}] {entry.pattern} matches required tests {hits[:3]}"
