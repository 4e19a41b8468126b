"""Reports of a system-scenario run (``kstate system --report DIR``, INST-42): read back from its JUnit XML, each
scenario's outcome (passed, failed, unsupported by the instance under test with the reason, skipped for another
reason) with the instance's describe answer, as ``system.md`` and a self-contained ``system.html``.

The failure text is cut as the conformance reports cut it (:func:`kstate_conformance.report.failure_message`).
"""

from __future__ import annotations

import html
import json
import textwrap
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kstate_conformance.report import failure_message

PASSED, FAILED, UNSUPPORTED, SKIPPED = "passed", "failed", "unsupported", "skipped"
OUTCOME_ORDER = (FAILED, UNSUPPORTED, SKIPPED, PASSED)
#: How a scenario needing what the instance did not describe is skipped (INST-40).
UNSUPPORTED_PREFIX = "unsupported by "
#: The JUnit test-suite properties the system tests' conftest records (INST-42).
IMPLEMENTATION_PROPERTY, COMMAND_PROPERTY, DESCRIBE_PROPERTY = (
    "instance_implementation", "instance_command", "instance_describe")


class SystemReportError(ValueError):
    """A JUnit file that cannot be read as a system-scenario run; names the file and what was wrong."""


@dataclass
class Scenario:
    """One test of the system scenarios and its outcome."""

    module: str
    name: str
    outcome: str
    seconds: float = 0.0
    #: The skip reason, or the failure's assertion lines.
    reason: str = ""
    detail: str = ""
    #: What the scenario recorded (``system_report`` fixture): iteration counts, timings.
    properties: list[tuple[str, str]] = field(default_factory=list)

    @property
    def test_id(self) -> str:
        return f"{self.module}::{self.name}"


@dataclass
class SystemRun:
    implementation: str
    command: str
    describe: dict[str, Any]
    scenarios: list[Scenario]

    def totals(self) -> Counter[str]:
        return Counter(s.outcome for s in self.scenarios)

    def ok(self) -> bool:
        """Nothing failed (INST-42); unsupported and skipped scenarios are no failure."""
        return not self.totals()[FAILED]

    def by_module(self) -> dict[str, list[Scenario]]:
        modules: dict[str, list[Scenario]] = {}
        for scenario in self.scenarios:
            modules.setdefault(scenario.module, []).append(scenario)
        return modules

    def unsupported(self) -> dict[str, int]:
        """Each reason the instance could not run a scenario, with how many it stopped, most first."""
        counts = Counter(s.reason for s in self.scenarios if s.outcome == UNSUPPORTED)
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def counts_line(self) -> str:
        totals = self.totals()
        return (f"{len(self.scenarios)} scenarios: {totals[PASSED]} passed, {totals[FAILED]} failed, "
                f"{totals[UNSUPPORTED]} unsupported by {self.implementation}, {totals[SKIPPED]} skipped")

    def closing_line(self, report_dir: Path | None) -> str:
        verdict = "FAILED" if not self.ok() else "RAN NO SCENARIOS" if not self.scenarios else "PASSED"
        where = f"reports written to {report_dir}" if report_dir is not None else "no reports written (--report DIR)"
        return f"SYSTEM SCENARIOS {verdict} for {self.implementation}: {self.counts_line()}; {where}"


def _scenario(case: ET.Element) -> Scenario:
    scenario = Scenario(module=case.get("classname", ""), name=case.get("name", ""), outcome=PASSED,
                        seconds=float(case.get("time") or 0),
                        properties=[(p.get("name", ""), p.get("value", "")) for p in case.iterfind("properties/property")])
    for tag in ("failure", "error"):
        found = case.find(tag)
        if found is not None:
            scenario.outcome, scenario.detail = FAILED, found.text or ""
            reason = textwrap.dedent(failure_message(scenario.detail)).strip() or found.get("message", "")
            scenario.reason = ("error in setup or teardown: " if tag == "error" else "") + reason
            return scenario
    skipped = case.find("skipped")
    if skipped is not None:
        scenario.reason = (skipped.get("message") or skipped.text or "").removeprefix("Skipped: ").strip()
        scenario.outcome = UNSUPPORTED if scenario.reason.startswith(UNSUPPORTED_PREFIX) else SKIPPED
        scenario.detail = skipped.text or ""
    return scenario


def read_junit(path: Path) -> SystemRun:
    """The run a pytest JUnit XML file of the system tests records; :class:`SystemReportError` if it cannot be read."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise SystemReportError(f"{path}: not a readable JUnit XML file ({exc})") from None
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    if not suites:
        raise SystemReportError(f"{path}: no <testsuite> element")
    suite_properties = {p.get("name", ""): p.get("value", "") for s in suites for p in s.iterfind("properties/property")}
    try:
        describe = json.loads(suite_properties.get(DESCRIBE_PROPERTY) or "{}")
    except ValueError as exc:
        raise SystemReportError(f"{path}: the {DESCRIBE_PROPERTY} property is not JSON ({exc})") from None
    implementation = suite_properties.get(IMPLEMENTATION_PROPERTY) or str(describe.get("implementation", "(unknown)"))
    scenarios = [_scenario(case) for s in suites for case in s.iter("testcase")]
    return SystemRun(implementation, suite_properties.get(COMMAND_PROPERTY, ""), describe, scenarios)


def write_system_reports(run: SystemRun, directory: Path) -> None:
    """Write ``system.md`` and ``system.html`` into ``directory`` (INST-42)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "system.md").write_text(render_markdown(run), encoding="utf-8")
    (directory / "system.html").write_text(render_html(run), encoding="utf-8")


def _properties_text(scenario: Scenario) -> str:
    return "; ".join(f"{name}: {value}" for name, value in scenario.properties)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(run: SystemRun) -> str:
    md = [f"# System scenarios: `{run.implementation}`", "", f"{run.counts_line()}.", "",
          "Outcomes: `passed`; `failed`; `unsupported`: the scenario needs a store type, crash point or event the "
          "instance's describe does not list (an explicit skip, not a failure); `skipped`: for another reason.", "",
          "## The instance under test", "", f"Command: `{run.command or '(not recorded)'}`", "", "```json",
          json.dumps(run.describe, indent=1, sort_keys=True), "```", "", "## Unsupported", ""]
    unsupported = run.unsupported()
    if unsupported:
        md += ["| reason | scenarios |", "|---|---|"] + [f"| {_cell(why)} | {n} |" for why, n in unsupported.items()]
    else:
        md.append("None: the instance supports everything the scenarios ran need.")
    md += ["", "## Scenarios", ""]
    for module, scenarios in run.by_module().items():
        md += [f"### `{module}`", "", "| scenario | outcome | seconds | reason or recorded |", "|---|---|---|---|"]
        md += [f"| `{_cell(s.name)}` | {s.outcome} | {s.seconds:.1f} | "
               f"{_cell(s.reason.splitlines()[0] if s.reason else _properties_text(s))} |" for s in scenarios]
        md.append("")
    failures = [s for s in run.scenarios if s.outcome == FAILED]
    md += ["## Failures", ""]
    if not failures:
        md.append("None.")
    for failure in failures:
        md += [f"### `{failure.test_id}`", "", "```", failure.reason, "```", "",
               "<details><summary>full output</summary>", "", "```", failure.detail[:6000], "```", "", "</details>", ""]
    return "\n".join(md) + "\n"


def render_html(run: SystemRun) -> str:
    e = html.escape
    unsupported = run.unsupported()
    unsupported_html = ("<table><tr><th>reason</th><th>scenarios</th></tr>" + "".join(
        f"<tr><td>{e(why)}</td><td>{n}</td></tr>" for why, n in unsupported.items()) + "</table>"
        if unsupported else "<p>None: the instance supports everything the scenarios ran need.</p>")
    modules = "".join(
        f"<h3><code>{e(module)}</code></h3><table><tr><th>scenario</th><th>outcome</th><th>seconds</th>"
        "<th>reason or recorded</th></tr>" + "".join(
            f"<tr class='{s.outcome}'><td><code>{e(s.name)}</code></td><td>{s.outcome}</td><td>{s.seconds:.1f}</td>"
            f"<td>{e(s.reason.splitlines()[0] if s.reason else _properties_text(s))}</td></tr>" for s in scenarios)
        + "</table>"
        for module, scenarios in run.by_module().items())
    failures = "".join(
        f"<div class='failure'><h3><code>{e(s.test_id)}</code></h3><pre class='reason'>{e(s.reason)}</pre>"
        f"<details><summary>full output</summary><pre>{e(s.detail[:12000])}</pre></details></div>"
        for s in run.scenarios if s.outcome == FAILED)
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>kstate system: {e(run.implementation)}</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse;margin-bottom:1em}}
td,th{{border:1px solid #ccc;padding:3px 8px;font-size:90%}}.failed{{background:#fdd}}.passed{{background:#dfd}}
.unsupported,.skipped{{background:#eee}}pre{{white-space:pre-wrap;background:#f6f6f6;padding:6px}}
pre.reason{{background:#fee}}</style></head><body>
<h1>System scenarios: {e(run.implementation)}</h1>
<p>{e(run.counts_line())}.</p>
<p>Outcomes: passed; failed; unsupported (the scenario needs a store type, crash point or event the instance's
describe does not list: an explicit skip, not a failure); skipped (for another reason).</p>
<h2>The instance under test</h2><p>Command: <code>{e(run.command or '(not recorded)')}</code></p>
<pre>{e(json.dumps(run.describe, indent=1, sort_keys=True))}</pre>
<h2>Unsupported</h2>{unsupported_html}
<h2>Scenarios</h2>{modules or '<p>none</p>'}
<h2>Failures</h2>{failures or '<p>None.</p>'}</body></html>
"""
