"""Readable conformance reports: a per-rule matrix in Markdown and self-contained HTML, plus JSON."""

from __future__ import annotations

import html
import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

OUTCOMES = ("passed", "failed", "skipped")


@dataclass
class TestOutcome:
    nodeid: str
    outcome: str
    rules: list[str]
    level: str
    detail: str = ""


@dataclass
class RunReport:
    implementation: str
    outcomes: list[TestOutcome] = field(default_factory=list)

    def by_rule(self) -> dict[str, Counter[str]]:
        table: dict[str, Counter[str]] = {}
        for outcome in self.outcomes:
            for rule in outcome.rules or ["(none)"]:
                table.setdefault(rule, Counter())[outcome.outcome] += 1
        return dict(sorted(table.items(), key=lambda kv: _rule_key(kv[0])))

    def totals(self) -> Counter[str]:
        return Counter(o.outcome for o in self.outcomes)


def _rule_key(rule: str) -> tuple[str, int]:
    prefix, _, number = rule.partition("-")
    return (prefix, int(number) if number.isdigit() else 0)


def _verdict(counts: Counter[str]) -> str:
    if counts["failed"]:
        return "FAIL"
    if counts["passed"]:
        return "pass"
    return "skip"


def write_reports(report: RunReport, directory: Path, rule_titles: dict[str, tuple[str, str]]) -> None:
    """Write ``report.md``, ``report.html`` and ``results.json`` into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    totals = report.totals()
    rows = report.by_rule()
    failures = [o for o in report.outcomes if o.outcome == "failed"]

    md = [f"# Conformance report: `{report.implementation}`", "",
          f"{totals['passed']} passed, {totals['failed']} failed, {totals['skipped']} skipped "
          f"({len(report.outcomes)} tests, {len(rows)} rules).", "",
          "| rule | level | title | verdict | passed | failed | skipped |", "|---|---|---|---|---|---|---|"]
    for rule, counts in rows.items():
        title, level = rule_titles.get(rule, ("", ""))
        md.append(f"| {rule} | {level} | {title} | {_verdict(counts)} | {counts['passed']} | {counts['failed']} "
                  f"| {counts['skipped']} |")
    if failures:
        md += ["", "## Failures", ""]
        for failure in failures:
            md += [f"### `{failure.nodeid}`", f"rules: {', '.join(failure.rules)}", "", "```", failure.detail[:2000], "```", ""]
    (directory / "report.md").write_text("\n".join(md) + "\n", encoding="utf-8")

    cells = "".join(
        f"<tr class='{_verdict(c).lower()}'><td>{html.escape(r)}</td><td>{html.escape(rule_titles.get(r, ('', ''))[1])}</td>"
        f"<td>{html.escape(rule_titles.get(r, ('', ''))[0])}</td><td>{_verdict(c)}</td><td>{c['passed']}</td>"
        f"<td>{c['failed']}</td><td>{c['skipped']}</td></tr>"
        for r, c in rows.items()
    )
    failure_html = "".join(
        f"<details><summary>{html.escape(f.nodeid)}</summary><pre>{html.escape(f.detail[:4000])}</pre></details>"
        for f in failures
    )
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>kstate conformance: {html.escape(report.implementation)}</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:3px 8px}}
tr.fail{{background:#fdd}}tr.pass{{background:#dfd}}tr.skip{{background:#eee}}pre{{white-space:pre-wrap}}</style></head><body>
<h1>Conformance report: {html.escape(report.implementation)}</h1>
<p>{totals['passed']} passed, {totals['failed']} failed, {totals['skipped']} skipped.</p>
<table><tr><th>rule</th><th>level</th><th>title</th><th>verdict</th><th>passed</th><th>failed</th><th>skipped</th></tr>{cells}</table>
<h2>Failures</h2>{failure_html or '<p>none</p>'}</body></html>
"""
    (directory / "report.html").write_text(page, encoding="utf-8")
    (directory / "results.json").write_text(
        json.dumps({"implementation": report.implementation, "outcomes": [asdict(o) for o in report.outcomes]}, indent=1),
        encoding="utf-8",
    )
