"""Readable conformance reports: Markdown and self-contained HTML (rules, a rules × store types × backends
matrix, expected failures, each failure with its minimal failing example), plus ``results.json``."""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

OUTCOMES = ("passed", "failed", "skipped", "xfailed")
ANY = "any"


@dataclass
class TestOutcome:
    nodeid: str
    outcome: str
    rules: list[str]
    level: str
    detail: str = ""
    #: The stable id (expectations.stable_test_id): what expected-failure files and differential runs use.
    test_id: str = ""
    store_type: str = ""
    backend: str = ""
    expected_failure: bool = False
    #: The minimal failing example (hypothesis's ``Falsifying example`` block), when there is one.
    example: str = ""
    seconds: float = 0.0

    def __post_init__(self) -> None:
        if not self.test_id:
            from kstate_conformance.expectations import stable_test_id

            self.test_id = stable_test_id(self.nodeid)


@dataclass
class RunReport:
    implementation: str
    outcomes: list[TestOutcome] = field(default_factory=list)
    expected_failures_file: str = ""

    def by_rule(self) -> dict[str, Counter[str]]:
        table: dict[str, Counter[str]] = {}
        for outcome in self.outcomes:
            for rule in outcome.rules or ["(none)"]:
                table.setdefault(rule, Counter())[outcome.outcome] += 1
        return dict(sorted(table.items(), key=lambda kv: _rule_key(kv[0])))

    def totals(self) -> Counter[str]:
        return Counter(o.outcome for o in self.outcomes)

    @staticmethod
    def column_of(outcome: TestOutcome) -> tuple[str, str]:
        """A test's matrix column: its (store type, backend); tests on no backend share one column."""
        if not outcome.backend:
            return (ANY, ANY)
        return (outcome.store_type or ANY, outcome.backend)

    def columns(self) -> list[tuple[str, str]]:
        """The (store type, backend) pairs of this run, backend-independent tests last."""
        pairs = {self.column_of(o) for o in self.outcomes}
        return sorted(pairs, key=lambda p: (p == (ANY, ANY), p[0] == ANY, p))

    def matrix(self) -> dict[str, dict[tuple[str, str], Counter[str]]]:
        """``{rule: {(store type, backend): outcome counts}}``."""
        table: dict[str, dict[tuple[str, str], Counter[str]]] = {}
        for o in self.outcomes:
            column = self.column_of(o)
            for rule in o.rules or ["(none)"]:
                table.setdefault(rule, {}).setdefault(column, Counter())[o.outcome] += 1
        return dict(sorted(table.items(), key=lambda kv: _rule_key(kv[0])))

    def unexpected_passes(self) -> list[TestOutcome]:
        return [o for o in self.outcomes if o.outcome == "failed" and o.detail.startswith("[unexpected pass]")]


def _rule_key(rule: str) -> tuple[str, int]:
    prefix, _, number = rule.partition("-")
    return (prefix, int(number) if number.isdigit() else 0)


def _verdict(counts: Counter[str]) -> str:
    if counts["failed"]:
        return "FAIL"
    if counts["xfailed"]:
        return "xfail"
    if counts["passed"]:
        return "pass"
    return "skip"


def _cell(counts: Counter[str] | None) -> str:
    if not counts:
        return ""
    total = sum(counts.values())
    verdict = _verdict(counts)
    if verdict == "FAIL":
        return f"FAIL {counts['failed']}/{total}"
    if verdict == "xfail":
        return f"xfail {counts['xfailed']}/{total}"
    if verdict == "pass":
        return f"pass {counts['passed']}" + (f" (+{counts['skipped']} skip)" if counts["skipped"] else "")
    return f"skip {counts['skipped']}"


def _column_label(column: tuple[str, str]) -> str:
    return "no backend (codecs, layouts)" if column == (ANY, ANY) else f"{column[0]} · {column[1]}"


def _strip_marker(line: str) -> str:
    return line[8:] if line.startswith("E       ") else line[2:] if line.startswith("E ") else line[1:]


_EXAMPLE_HEADINGS = ("Falsifying example", "Falsifying explicit example", "Failing test case")


def minimal_example(detail: str) -> str:
    """Hypothesis's ``Falsifying example`` block from a failure's text (the implementation object left out)."""
    lines = detail.splitlines()
    for index, line in enumerate(lines):
        body = _strip_marker(line) if line.startswith("E") else line
        if not body.lstrip().startswith(_EXAMPLE_HEADINGS):
            continue
        # Hypothesis 6.16x says "Failing test case:" where earlier releases said "Falsifying example:".
        block = [body.strip().replace("Failing test case", "Falsifying example", 1)]
        for follow in lines[index + 1:]:
            if not follow.startswith("E"):
                break
            text = _strip_marker(follow)
            if not text.strip():
                break
            if re.match(r"\s*codec=<", text):
                continue
            block.append(text.rstrip())
        return "\n".join(block)
    return ""


def failure_message(detail: str, max_lines: int = 8) -> str:
    """The ``E`` lines of a failure (what was asserted), without the falsifying example."""
    picked: list[str] = []
    for line in detail.splitlines():
        if not line.startswith("E "):
            continue
        text = _strip_marker(line)
        if text.lstrip().startswith((*_EXAMPLE_HEADINGS, "Explanation:")):
            break
        if text.strip():
            picked.append(text.rstrip())
        if len(picked) >= max_lines:
            break
    if picked:
        return "\n".join(picked)
    tail = detail.strip().splitlines()
    return tail[-1] if tail else ""


def _summary(report: RunReport, rows: dict[str, Counter[str]]) -> str:
    totals = report.totals()
    return (f"{totals['passed']} passed, {totals['failed']} failed, {totals['skipped']} skipped, "
            f"{totals['xfailed']} expected failures ({len(report.outcomes)} tests, {len(rows)} rules).")


def write_reports(report: RunReport, directory: Path, rule_titles: dict[str, tuple[str, str]]) -> None:
    """Write ``report.md``, ``report.html`` and ``results.json`` into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "report.md").write_text(render_markdown(report, rule_titles), encoding="utf-8")
    (directory / "report.html").write_text(render_html(report, rule_titles), encoding="utf-8")
    (directory / "results.json").write_text(
        json.dumps({"implementation": report.implementation, "expected_failures_file": report.expected_failures_file,
                    "outcomes": [asdict(o) for o in report.outcomes]}, indent=1),
        encoding="utf-8",
    )


def render_markdown(report: RunReport, rule_titles: dict[str, tuple[str, str]]) -> str:
    rows = report.by_rule()
    columns = report.columns()
    failures = [o for o in report.outcomes if o.outcome == "failed"]
    xfailed = [o for o in report.outcomes if o.outcome == "xfailed"]
    md = [f"# Conformance report: `{report.implementation}`", "", _summary(report, rows), "",
          "## Rules", "",
          "| rule | level | title | verdict | passed | failed | skipped | xfailed |", "|---|---|---|---|---|---|---|---|"]
    for rule, counts in rows.items():
        title, level = rule_titles.get(rule, ("", ""))
        md.append(f"| {rule} | {level} | {title} | {_verdict(counts)} | {counts['passed']} | {counts['failed']} "
                  f"| {counts['skipped']} | {counts['xfailed']} |")
    md += ["", "## Rules × store types × backends", "",
           "| rule | " + " | ".join(_column_label(c) for c in columns) + " |",
           "|---|" + "---|" * len(columns)]
    for rule, cells in report.matrix().items():
        md.append(f"| {rule} | " + " | ".join(_cell(cells.get(c)) for c in columns) + " |")
    md += ["", "## Expected failures", ""]
    if report.expected_failures_file:
        md.append(f"List: `{report.expected_failures_file}`; {len(xfailed)} failed as expected, "
                  f"{len(report.unexpected_passes())} passed unexpectedly (each fails the run).")
        md += [""] + [f"- `{o.test_id}` (xfail)" for o in xfailed]
        md += [f"- `{o.test_id}` (**unexpected pass**)" for o in report.unexpected_passes()]
    else:
        md.append("No expected-failure list was given.")
    md += ["", "## Failures", ""]
    if not failures:
        md.append("None.")
    for failure in failures:
        where = ", ".join(x for x in (failure.store_type, failure.backend) if x)
        md += [f"### `{failure.test_id}`", f"rules: {', '.join(failure.rules) or '(none)'}"
               + (f"; on {where}" if where else ""), ""]
        if failure.example:
            md += ["Minimal failing example:", "", "```", failure.example, "```", ""]
        md += ["```", failure_message(failure.detail), "```", "",
               "<details><summary>full output</summary>", "", "```", failure.detail[:4000], "```", "", "</details>", ""]
    return "\n".join(md) + "\n"


def render_html(report: RunReport, rule_titles: dict[str, tuple[str, str]]) -> str:
    e = html.escape
    rows = report.by_rule()
    columns = report.columns()
    failures = [o for o in report.outcomes if o.outcome == "failed"]
    xfailed = [o for o in report.outcomes if o.outcome == "xfailed"]
    rule_rows = "".join(
        f"<tr class='{_verdict(c).lower()}'><td>{e(r)}</td><td>{e(rule_titles.get(r, ('', ''))[1])}</td>"
        f"<td>{e(rule_titles.get(r, ('', ''))[0])}</td><td>{_verdict(c)}</td><td>{c['passed']}</td>"
        f"<td>{c['failed']}</td><td>{c['skipped']}</td><td>{c['xfailed']}</td></tr>"
        for r, c in rows.items()
    )
    matrix_head = "".join(f"<th>{e(_column_label(c))}</th>" for c in columns)
    matrix_rows = "".join(
        f"<tr><td>{e(rule)}</td>" + "".join(
            f"<td class='{_verdict(cells[c]).lower() if c in cells else 'none'}'>{e(_cell(cells.get(c)))}</td>"
            for c in columns) + "</tr>"
        for rule, cells in report.matrix().items()
    )
    if report.expected_failures_file:
        expected_html = (f"<p>List <code>{e(report.expected_failures_file)}</code>: {len(xfailed)} failed as expected, "
                         f"{len(report.unexpected_passes())} passed unexpectedly.</p><ul>"
                         + "".join(f"<li><code>{e(o.test_id)}</code> xfail</li>" for o in xfailed)
                         + "".join(f"<li class='fail'><code>{e(o.test_id)}</code> unexpected pass</li>"
                                   for o in report.unexpected_passes()) + "</ul>")
    else:
        expected_html = "<p>No expected-failure list was given.</p>"
    failure_html = "".join(
        f"<div class='failure'><h3><code>{e(f.test_id)}</code></h3><p>rules: {e(', '.join(f.rules))}"
        + (f"; on {e(', '.join(x for x in (f.store_type, f.backend) if x))}" if f.store_type or f.backend else "")
        + "</p>"
        + (f"<p>Minimal failing example:</p><pre class='example'>{e(f.example)}</pre>" if f.example else "")
        + f"<pre>{e(failure_message(f.detail))}</pre>"
        f"<details><summary>full output</summary><pre>{e(f.detail[:8000])}</pre></details></div>"
        for f in failures
    )
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>kstate conformance: {e(report.implementation)}</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse;margin-bottom:1em}}
td,th{{border:1px solid #ccc;padding:3px 8px;font-size:90%}}.fail{{background:#fdd}}.pass{{background:#dfd}}
.skip{{background:#eee}}.xfail{{background:#ffd}}pre{{white-space:pre-wrap;background:#f6f6f6;padding:6px}}
pre.example{{background:#eef}}</style></head><body>
<h1>Conformance report: {e(report.implementation)}</h1>
<p>{e(_summary(report, rows))}</p>
<h2>Rules</h2>
<table><tr><th>rule</th><th>level</th><th>title</th><th>verdict</th><th>passed</th><th>failed</th><th>skipped</th><th>xfailed</th></tr>{rule_rows}</table>
<h2>Rules × store types × backends</h2>
<table><tr><th>rule</th>{matrix_head}</tr>{matrix_rows}</table>
<h2>Expected failures</h2>{expected_html}
<h2>Failures</h2>{failure_html or '<p>none</p>'}</body></html>
"""
