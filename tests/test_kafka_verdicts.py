"""The kept per-rule verdicts of Kafka releases, and the tables generated from them (no JVM needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kstate_conformance.kafka_jvm.verdicts import (
    HEADLINE_DOC,
    HEADLINE_END,
    HEADLINE_START,
    README_END,
    README_START,
    SUMMARY_DOC,
    TABLE_FILE,
    VERDICTS,
    VerdictsError,
    load_verdict_files,
    render_headline_block,
    render_readme_block,
    render_table,
    replace_readme_block,
    verdicts_from_results,
)

REPO = Path(__file__).resolve().parents[1]
TESTEE = REPO / "testees" / "kafka-jvm"


def _outcome(nodeid: str, outcome: str, rules: list[str], **extra: str) -> dict[str, object]:
    return {"nodeid": nodeid, "outcome": outcome, "rules": rules, "level": "required", **extra}


def _results(tmp_path: Path, implementation: str) -> Path:
    outcomes = [_outcome("a::t1", "passed", ["KV-1"]), _outcome("a::t2", "failed", ["KV-2"]),
                _outcome("a::t3", "xfailed", ["KV-3", "KV-6"], expected_reason="[KAFKA] KV-3: x"), _outcome("a::t4", "passed", ["KV-4"]),
                _outcome("a::t5", "skipped", ["KV-4"], skip_kind="unsupported", unsupported="store.x"),
                _outcome("a::t6", "skipped", ["KV-5"], skip_kind="unsupported", unsupported="store.y")]
    (tmp_path / "results.json").write_text(json.dumps({"implementation": implementation, "coverage": "c",
                                                       "outcomes": outcomes}), encoding="utf-8")
    return tmp_path


def test_a_runs_verdicts_are_the_conformance_reports(tmp_path: Path) -> None:
    kept = verdicts_from_results(_results(tmp_path, "kafka-jvm:4.4.0"), "2026-11-27", "abc1234")
    assert kept["kafka_version"] == "4.4.0" and kept["date"] == "2026-11-27" and kept["commit"] == "abc1234"
    # KV-6's only case is an expected failure whose entry names KV-3 alone (issue 31).
    assert kept["verdicts"] == {"KV-1": "pass", "KV-2": "FAIL", "KV-3": "xfail", "KV-4": "partial",
                                "KV-5": "unsupported", "KV-6": "not verified"}
    assert kept["headline"] == ("Kafka 4.4.0 passes every case of 1 of 6 applicable rules; 1 listed differences "
                                "(0 Kafka bugs); 3 not reached (1 partly); 1 failing")


def test_a_run_of_another_implementation_is_refused(tmp_path: Path) -> None:
    with pytest.raises(VerdictsError, match="not of kafka-jvm"):
        verdicts_from_results(_results(tmp_path, "reference"), "2026-11-27", "abc1234")


def test_rules_whose_verdict_differs_between_releases_are_named() -> None:
    runs = [{"kafka_version": "4.3.1", "date": "d", "commit": "c", "verdicts": {"KV-1": "pass", "KV-2": "xfail"}},
            {"kafka_version": "4.4.0", "date": "d", "commit": "c", "verdicts": {"KV-1": "pass", "KV-2": "pass"}}]
    block = render_readme_block(runs)
    assert "KV-2 (xfail / pass)" in block and "KV-1 (" not in block
    assert "| pass | 1 | 2 |" in block and "| xfail | 1 | 0 |" in block
    assert "| KV-2 | xfail | pass |" in render_table(runs)


def test_a_readme_without_the_block_is_refused() -> None:
    with pytest.raises(VerdictsError, match="no generated"):
        replace_readme_block("# README\n", "block")


def test_the_kept_verdicts_cover_both_releases_with_date_and_commit() -> None:
    runs = load_verdict_files(TESTEE)
    assert [r["kafka_version"] for r in runs] == ["4.3.1", "4.4.0"]
    for run in runs:
        assert run["date"] and run["commit"] and run["verdicts"]
        assert set(run["verdicts"].values()) <= set(VERDICTS)


def test_the_readme_and_the_table_match_the_generator() -> None:
    runs = load_verdict_files(TESTEE)
    doc = (REPO / SUMMARY_DOC).read_text(encoding="utf-8")
    start, end = doc.index(README_START), doc.index(README_END) + len(README_END)
    assert doc[start:end] == render_readme_block(runs, link_prefix="../"), f"{SUMMARY_DOC} stale: run kstate kafka-verdicts"
    assert (TESTEE / TABLE_FILE).read_text(encoding="utf-8") == render_table(runs), "run kstate kafka-verdicts"


def test_the_readme_gives_each_releases_headline_with_date_and_commit() -> None:
    """Issue 31: the README's headline figures are the generator's, one line per kept release."""
    runs = load_verdict_files(TESTEE)
    doc = (REPO / HEADLINE_DOC).read_text(encoding="utf-8")
    start, end = doc.index(HEADLINE_START), doc.index(HEADLINE_END) + len(HEADLINE_END)
    block = doc[start:end]
    assert block == render_headline_block(runs), f"{HEADLINE_DOC} stale: run kstate kafka-verdicts"
    for run in runs:
        assert f"Kafka {run['kafka_version']} passes every case of" in block
        assert f"(run {run['date']}, commit {run['commit']})" in block


def test_a_kafka_runs_report_shows_its_verdicts_beside_the_other_releases() -> None:
    from kstate_conformance.kafka_jvm.verdicts import release_section

    kept = [{"kafka_version": "4.3.1", "date": "d", "commit": "c", "verdicts": {"KV-1": "xfail"}},
            {"kafka_version": "4.4.0", "date": "d", "commit": "c", "verdicts": {"KV-1": "FAIL"}}]
    lines = release_section("kafka-jvm:4.4.0", {"KV-1": "pass", "KV-2": "partial"}, kept)
    assert "| rule | 4.3.1 | 4.4.0 (this run) |" in lines
    assert "| KV-1 | xfail | pass |" in lines and "| KV-2 | not run | partial |" in lines
    assert release_section("reference", {"KV-1": "pass"}, kept) == []


def test_the_section_is_appended_to_a_kafka_runs_report(tmp_path: Path) -> None:
    from kstate_conformance.kafka_jvm.verdicts import append_release_section

    report = tmp_path / "report.md"
    report.write_text("# Conformance report\n", encoding="utf-8")
    append_release_section(report, "kafka-jvm:4.4.0", {"KV-1": "pass"}, TESTEE)
    text = report.read_text(encoding="utf-8")
    assert text.startswith("# Conformance report\n") and "| rule | 4.3.1 | 4.4.0 (this run) |" in text
    append_release_section(report, "reference", {"KV-1": "pass"}, TESTEE)
    assert report.read_text(encoding="utf-8") == text


def test_the_tables_lead_with_each_releases_headline_figure() -> None:
    runs = [{"kafka_version": "4.4.0", "date": "2026-12-02", "commit": "abc1234", "verdicts": {"KV-1": "pass"},
             "headline": "Kafka 4.4.0 passes every case of 1 of 1 applicable rules; 0 listed differences (0 Kafka "
                         "bugs); 0 not reached"}]
    line = f"- **{runs[0]['headline']}** (run 2026-12-02, commit abc1234)"
    block, table = render_readme_block(runs), render_table(runs)
    assert line in block and block.index(line) < block.index("| verdict |")
    assert line in table and table.index(line) < table.index("| rule |")


def test_every_kept_xfail_rule_is_named_by_an_entry_of_its_release() -> None:
    """A rule is ``xfail`` only where an expected-failure entry names it (issue 31): the kept verdicts agree with
    the release's expected-failure file."""
    from kstate_conformance.expectations import ExpectedFailures

    for run in load_verdict_files(TESTEE):
        listing = ExpectedFailures.load(TESTEE / f"expected-failures-{run['kafka_version']}.txt")
        named = {rule for entry in listing.entries for rule in entry.rules}
        unnamed = sorted(rule for rule, verdict in run["verdicts"].items() if verdict == "xfail" and rule not in named)
        assert not unnamed, f"{run['kafka_version']}: xfail but named by no entry: {unnamed}"
