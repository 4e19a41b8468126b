"""Readable conformance reports: Markdown and self-contained HTML (rules, a rules × store types × backends
matrix, expected failures, each failure with its minimal failing example), plus ``results.json``."""

from __future__ import annotations

import functools
import html
import json
import re
import textwrap
from collections import Counter
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from kstate_conformance.kafka_jvm import release_of

#: ``departed``: an allowed departure from Kafka (kstate_conformance.departures), neither passed nor failed.
OUTCOMES = ("passed", "failed", "skipped", "xfailed", "unexpected_pass", "departed")
DEPARTED = "departed"
#: A rule's count of cases that ran but checked it not: xfailed for another rule (the entry names not this one).
NOT_VERIFIED = "not verified"
#: A rule's count of cases that are no evidence either way: departures under another rule, and expected failures
#: of a case stricter than the rule (a hardened case citing a required rule, which a run at that level skips).
ELSEWHERE = "departed elsewhere"
#: The verdict of a rule whose implementation refuses, as its text allows, what Kafka accepts (OPS-4).
DEPARTS = "departs from Kafka"
ANY = "any"
UNSUPPORTED = "unsupported"
#: Failures of one group shown in full in the reports; the rest of the group is a table of cases.
DETAILED_PER_GROUP = 5
NOT_APPLICABLE = "not applicable"
#: A case on a store type, backend or optional feature the implementation does not have (capabilities.lacks): a
#: feature it lacks, counted apart from the operations it fails to answer, so that a rule it meets on every type it
#: has passes.
ABSENT = "absent"
_ABSENT_PATTERN = re.compile(r"lacks (?P<what>the [a-z_]+ (?:store(?: on [a-z]+)?|backend|capability))$")
#: Skip messages that say the implementation lacks something (the rest say the test does not apply to it).
_UNSUPPORTED_PATTERNS = (
    re.compile(r"does not support operation (?P<what>\S+)"),
    re.compile(r"offers no (?P<what>.+)"),
    re.compile(r"does not offer (?P<what>.+)"),
    re.compile(r"has no (?P<what>.+)"),
    re.compile(r"implements (?:none of the|no) (?P<what>.+)"),
)


@dataclass
class TestOutcome:
    __test__ = False  # a name starting with "Test" is not a pytest test class

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
    #: For a skip: ``unsupported`` (the implementation lacks what the test needs), ``absent`` (the store type or
    #: backend it is on is one the implementation does not have) or ``not applicable``.
    skip_kind: str = ""
    #: For an unsupported or absent skip: the operation, capability, store type or backend that is missing.
    unsupported: str = ""
    #: For a failure: the operation it is about, its input, the expected output (golden cases) and the actual one.
    op: str = ""
    input: Any = None
    expected: Any = None
    actual: Any = None
    #: For a failure: the innermost error (hypothesis's FlakyFailure and ExceptionGroup unwrapped), when known.
    message: str = ""
    #: For an expected failure: the reason of the entry that listed it (its class and the rules it names).
    expected_reason: str = ""
    #: For a departure from Kafka: the rules that allow it (the rest of ``rules`` it says nothing about).
    departs: list[str] = field(default_factory=list)
    #: For a drawn test run with the steps reaching these rules withheld (an entry's ``withhold:``): the rules it
    #: did not verify.
    withheld: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.test_id:
            from kstate_conformance.expectations import stable_test_id

            self.test_id = stable_test_id(self.nodeid)


@dataclass
class RunReport:
    implementation: str
    outcomes: list[TestOutcome] = field(default_factory=list)
    expected_failures_file: str = ""
    #: (operations the implementation supports, operations an implementation can be sent), when known.
    operations: tuple[int, int] | None = None
    #: --require-rules: each required rule that did not pass, with its verdict (or ``not run``).
    requirement_shortfalls: dict[str, str] = field(default_factory=dict)
    #: What ``--fix`` wrote (``FILE: N entries, A added, R removed``), when it ran.
    fixed: str = ""
    _finished: bool = field(default=False, init=False, repr=False, compare=False)
    _by_rule: dict[str, Counter[str]] | None = field(default=None, init=False, repr=False, compare=False)

    def by_rule(self) -> dict[str, Counter[str]]:
        """``{rule: outcome counts}`` in rule order; once the run is :meth:`finished`, counted once and kept (the
        reports, the summary and the headline ask for it about ten times at the end of a run, issue 35)."""
        kept = self._by_rule
        if kept is not None:
            return {rule: Counter(counts) for rule, counts in kept.items()}
        table: dict[str, Counter[str]] = {}
        for outcome in self.outcomes:
            for rule in outcome.rules or ["(none)"]:
                _count(table.setdefault(rule, Counter()), outcome, rule)
        ordered = dict(sorted(table.items(), key=lambda kv: _rule_key(kv[0])))
        if self._finished:
            self._by_rule = {rule: Counter(counts) for rule, counts in ordered.items()}
        return ordered

    def finished(self) -> None:
        """No outcome is added or changed from here on (the suite's session has ended): :meth:`by_rule` may keep
        its counts."""
        self._finished = True
        self._by_rule = None

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
                _count(table.setdefault(rule, {}).setdefault(column, Counter()), o, rule)
        return dict(sorted(table.items(), key=lambda kv: _rule_key(kv[0])))

    def unexpected_passes(self) -> list[TestOutcome]:
        return [o for o in self.outcomes if o.outcome == "unexpected_pass"]

    def unsupported_operations(self) -> dict[str, int]:
        """Each operation (or capability) the implementation lacks, with how many tests it skipped, most first."""
        counts = Counter(o.unsupported for o in self.outcomes if o.skip_kind == UNSUPPORTED)
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def absent_features(self) -> dict[str, int]:
        """Each store type, backend or optional capability the implementation does not have, with how many cases
        were on it (most first)."""
        counts = Counter(o.unsupported for o in self.outcomes if o.skip_kind == ABSENT)
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def absent_only_rules(self) -> list[str]:
        """The rules whose every case is on a store type, backend or capability the implementation does not have."""
        return [rule for rule, counts in self.by_rule().items()
                if rule != "(none)" and counts[ABSENT] and _verdict(counts) == UNSUPPORTED and not counts[UNSUPPORTED]]

    def not_applicable(self) -> dict[str, int]:
        """Why tests did not apply to this implementation (not a shortfall of it), with how many each."""
        counts = Counter(_skip_text(o.detail) for o in self.outcomes if o.skip_kind == NOT_APPLICABLE)
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def failure_groups(self) -> list[FailureGroup]:
        """Failures grouped by the operation they blame: one bug is one group, whichever tests and rules it failed."""
        groups: dict[str, FailureGroup] = {}
        for o in self.outcomes:
            if o.outcome != "failed":
                continue
            key = o.op or o.test_id.split("[", 1)[0]
            group = groups.setdefault(key, FailureGroup([], key))
            group.rules = sorted(set(group.rules) | set(o.rules), key=_rule_key)
            group.outcomes.append(o)
        for group in groups.values():
            # The first failure of each test first: a group's shown examples cover its different tests.
            firsts: dict[str, TestOutcome] = {}
            for o in group.outcomes:
                firsts.setdefault(_test_name(o), o)
            lead = {id(o) for o in firsts.values()}
            group.outcomes = [*firsts.values(), *(o for o in group.outcomes if id(o) not in lead)]
        return sorted(groups.values(), key=lambda g: (-len(g.outcomes), [_rule_key(r) for r in g.rules], g.op))

    def departures(self) -> dict[str, list[TestOutcome]]:
        """Each rule the implementation departs from Kafka under (OPS-4), with its departing cases."""
        found: dict[str, list[TestOutcome]] = {}
        for o in self.outcomes:
            if o.outcome == DEPARTED:
                for rule in o.departs:
                    found.setdefault(rule, []).append(o)
        return dict(sorted(found.items(), key=lambda kv: _rule_key(kv[0])))

    def rule_verdicts(self) -> dict[str, str]:
        """Each rule the run's tests cite, with its verdict."""
        return {rule: _verdict(counts) for rule, counts in self.by_rule().items() if rule != "(none)"}

    def ok(self) -> bool:
        totals = self.totals()
        return not totals["failed"] and not totals["unexpected_pass"] and not self.requirement_shortfalls


def _test_name(outcome: TestOutcome) -> str:
    return outcome.test_id.split("::", 1)[-1].split("[", 1)[0]


@dataclass
class FailureGroup:
    """The failures that share their rules and operation."""

    rules: list[str]
    op: str
    outcomes: list[TestOutcome] = field(default_factory=list)

    @property
    def title(self) -> str:
        tests = Counter(_test_name(o) for o in self.outcomes)
        which = ", ".join(f"{name} x{n}" if n > 1 else name for name, n in tests.items())
        return (f"rules {', '.join(self.rules) or '(none)'} · operation {self.op} · "
                f"{len(self.outcomes)} failed ({which})")


def xfail_rules(outcome: TestOutcome) -> list[str]:
    """The rules an expected failure is ``xfail`` for: those of its rules that the listing entry names (issue 31)."""
    from kstate_conformance.expectations import named_rules

    named = set(named_rules(outcome.expected_reason))
    return [r for r in outcome.rules if r in named]


def attributed(outcome: TestOutcome, rule: str) -> str:
    """What ``outcome`` counts as for one of its rules: its own outcome, except that an expected failure is
    ``xfailed`` only for the rules its entry names (``not verified`` for the others), a departure is
    ``departed`` only for the rules that allow it, and a drawn test run with some rules' steps withheld is ``not
    verified`` for those."""
    if rule in outcome.withheld:
        return NOT_VERIFIED
    if outcome.outcome == "xfailed":
        if rule in xfail_rules(outcome):
            return "xfailed"
        # A case of a stricter level than the rule's (a hardened case that also cites a required rule) does not run
        # at the rule's own level: its failure is no evidence either way, as a run at that level would not see it.
        return ELSEWHERE if _LEVEL_RANK.get(outcome.level, 0) > _LEVEL_RANK.get(rule_level(rule), 0) else NOT_VERIFIED
    if outcome.outcome == DEPARTED:
        return DEPARTED if rule in outcome.departs else ELSEWHERE
    return outcome.outcome


#: The levels in the order ``--kstate-level`` runs them (plugin.LEVEL_ORDER): each runs the ones before it too.
_LEVEL_RANK = {"required": 0, "recommended": 1, "hardened": 2, "tentative": 3}


@functools.lru_cache(maxsize=1)
def _rule_levels() -> dict[str, str]:
    from kstate_conformance.spec_rules import load_rules

    try:
        return {rule_id: rule.level for rule_id, rule in load_rules().items()}
    except (OSError, ValueError):  # no spec beside the suite: every rule counts as required
        return {}


def rule_level(rule: str) -> str:
    """The spec's level of ``rule`` (``required`` for a rule the spec does not know)."""
    return _rule_levels().get(rule, "required")


def _count(counter: Counter[str], outcome: TestOutcome, rule: str) -> None:
    counter[attributed(outcome, rule)] += 1
    if outcome.skip_kind:
        counter[outcome.skip_kind] += 1


def _skip_text(detail: str) -> str:
    return detail.removeprefix("Skipped: ").strip()


def classify_skip(detail: str) -> tuple[str, str]:
    """(``unsupported`` or ``absent``, what is missing) or (``not applicable``, "") for a skipped test's reason."""
    text = _skip_text(detail)
    absent = _ABSENT_PATTERN.search(text)
    if absent:
        return ABSENT, absent.group("what").removeprefix("the ")
    for pattern in _UNSUPPORTED_PATTERNS:
        found = pattern.search(text)
        if found:
            return UNSUPPORTED, found.group("what").strip().rstrip(".")
    return NOT_APPLICABLE, ""


def _rule_key(rule: str) -> tuple[str, int]:
    prefix, _, number = rule.partition("-")
    return (prefix, int(number) if number.isdigit() else 0)


def _verdict(counts: Counter[str]) -> str:
    """A rule's verdict: ``pass`` only when no case was skipped for want of an operation or left unverified by
    another rule's expected failure (else ``partial``); cases that do not apply to this kind of implementation
    (``n/a``) or are on a store type or backend it does not have (``absent``) are no shortfall, and a rule with
    only absent cases is ``unsupported``; ``xfail`` only where an entry names the rule; ``departs from Kafka`` where the
    implementation refuses what the rule lets it refuse (OPS-4), failing nothing."""
    if counts["failed"] or counts["unexpected_pass"]:
        return "FAIL"
    if counts["xfailed"]:
        return "xfail"
    if counts[DEPARTED]:
        return DEPARTS
    if counts["passed"]:
        return "partial" if counts[UNSUPPORTED] or counts[NOT_VERIFIED] else "pass"
    if counts[UNSUPPORTED] or counts[ABSENT]:
        return "unsupported"
    if counts[NOT_VERIFIED] or counts[ELSEWHERE]:
        return NOT_VERIFIED
    return "n/a"


def _cell(counts: Counter[str] | None) -> str:
    if not counts:
        return ""
    total = sum(counts.values())
    verdict = _verdict(counts)
    if verdict == "FAIL":
        return f"FAIL {counts['failed'] + counts['unexpected_pass']}/{total}"
    if verdict == "xfail":
        return f"xfail {counts['xfailed']}/{total}"
    if verdict == DEPARTS:
        return f"departs {counts[DEPARTED]}/{total}"
    if verdict == "partial":
        missing = ", ".join(f"{counts[k]} {k}" for k in (UNSUPPORTED, NOT_VERIFIED) if counts[k])
        return f"partial {counts['passed']}/{total} ({missing})"
    if verdict == "pass":
        extra = ", ".join(f"+{counts[k]} {label}" for k, label in ((NOT_APPLICABLE, "n/a"), (ABSENT, "absent"))
                          if counts[k])
        return f"pass {counts['passed']}" + (f" ({extra})" if extra else "")
    if verdict == "unsupported":
        return (f"unsupported {counts[UNSUPPORTED]}" if counts[UNSUPPORTED]
                else f"absent {counts[ABSENT]}")
    if verdict == NOT_VERIFIED:
        return f"not verified {counts[NOT_VERIFIED] + counts[ELSEWHERE]}"
    return f"n/a {counts[NOT_APPLICABLE]}"


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
            if re.match(r"\s*(?:implementation|codec)=<", text):
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


def coverage_line(report: RunReport) -> str:
    """How much was tested: ``18 of 367 rules pass, 4 partial, 345 unsupported (14 of 168 operations)``."""
    verdicts = Counter(report.rule_verdicts().values())
    parts = [f"{verdicts['pass']} of {sum(verdicts.values())} rules pass"]
    parts += [f"{verdicts[v]} {label}" for v, label in (("partial", "partial"), ("unsupported", "unsupported"),
                                                        ("FAIL", "failed"), ("xfail", "expected failures"),
                                                        (DEPARTS, "departing from Kafka"),
                                                        (NOT_VERIFIED, "not verified"),
                                                        ("n/a", "not applicable")) if verdicts[v]]
    line = ", ".join(parts)
    if report.operations is not None:
        line += f" ({report.operations[0]} of {report.operations[1]} operations)"
    return line


def implementation_label(implementation: str) -> str:
    """``Kafka 4.4.0`` for Apache Kafka under test (:func:`release_of`), else the implementation as named."""
    release = release_of(implementation)
    return f"Kafka {release}" if release else implementation


def headline(report: RunReport) -> str:
    """The run's one figure (issue 31): ``Kafka 4.4.0 passes every case of P of A applicable rules; D listed
    differences (B Kafka bugs); U not reached``. Rules, not tests: ``applicable`` leaves ``n/a`` out; a listed
    difference is ``xfail`` (an entry names it) or ``departs from Kafka``; ``not reached`` is partial,
    unsupported or not verified (``R partly``; ``N only on what it lacks``: the rules whose every case is on a store
    type, backend or optional capability it does not have, followed by every one it lacks, named as its
    ``store.capabilities`` declared them); ``F failing`` is added when some fail."""
    from kstate_conformance.expectations import KAFKA_BUG, entry_class

    verdicts = report.rule_verdicts()
    counts = Counter(verdicts.values())
    applicable = sum(n for v, n in counts.items() if v != "n/a")
    differences = counts["xfail"] + counts[DEPARTS]
    not_reached = counts["partial"] + counts[UNSUPPORTED] + counts[NOT_VERIFIED]
    kafka = release_of(report.implementation) is not None
    if kafka:
        bug_rules = {r for o in report.outcomes if o.outcome == "xfailed" and entry_class(o.expected_reason) == KAFKA_BUG
                     for r in xfail_rules(o)}
        detail = f" ({sum(verdicts.get(r) == 'xfail' for r in bug_rules)} Kafka bugs)"
    else:
        detail = f" ({counts[DEPARTS]} departing from Kafka)" if counts[DEPARTS] else ""
    reach = [f"{counts['partial']} partly"] if counts["partial"] else []
    # Every store type, backend and capability it lacks is named, as its own store.capabilities declared it, even
    # where no rule was reached only there (an optional feature whose rule other cases also reach).
    lacked = ", ".join(f"the {what}" for what in report.absent_features())
    if lacked:
        reach.append(f"{len(report.absent_only_rules())} only on what it lacks: {lacked}")
    line = (f"{implementation_label(report.implementation)} passes every case of {counts['pass']} of {applicable} "
            f"applicable rules; {differences} listed differences{detail}; {not_reached} not reached"
            + (f" ({'; '.join(reach)})" if reach else ""))
    return line + (f"; {counts['FAIL']} failing" if counts["FAIL"] else "")


def counts_line(report: RunReport) -> str:
    """passed, failed, expected failures, unexpected passes, skipped (why), unsupported operations."""
    totals = report.totals()
    skipped = Counter(o.skip_kind for o in report.outcomes if o.outcome == "skipped")
    departed = f"{totals[DEPARTED]} departing from Kafka, " if totals[DEPARTED] else ""
    return (f"{totals['passed']} passed, {totals['failed']} failed, {totals['xfailed']} expected failures, "
            f"{departed}{totals['unexpected_pass']} unexpected passes, {totals['skipped']} skipped "
            f"({skipped[UNSUPPORTED]} unsupported, "
            + (f"{skipped[ABSENT]} on store types, backends or capabilities it lacks, " if skipped[ABSENT] else "")
            + f"{skipped[NOT_APPLICABLE]} not applicable), "
            f"{len(report.unsupported_operations())} unsupported operations")


def closing_line(report: RunReport, report_dir: Path | None, exit_status: int = 0) -> str:
    """The run's last line, as protobuf's conformance runner ends: the verdict, the counts, where the reports are.

    ``exit_status`` is pytest's: a run that was interrupted or broke (2, 3, 4) did not pass, whatever it counted.
    """
    if report.fixed and exit_status in (0, 1):
        # A --fix run's outcome is the file it wrote; its failures are in that file now.
        verdict = f"RUN, EXPECTED FAILURES WRITTEN ({report.fixed})"
    elif not report.ok():
        verdict = "FAILED"
    elif exit_status == 5 or not report.outcomes:
        verdict = "RAN NO TESTS"
    elif exit_status in (0, 1):
        verdict = "PASSED"
    else:
        verdict = f"DID NOT COMPLETE (pytest exit status {exit_status})"
    where = f"reports written to {report_dir}" if report_dir is not None else "no reports written (--report DIR)"
    required = ""
    if report.requirement_shortfalls:
        required = f"{len(report.requirement_shortfalls)} required rules not met; "
    return (f"CONFORMANCE SUITE {verdict} for {report.implementation}: {coverage_line(report)}; {required}"
            f"{counts_line(report)}; {where}")


def _summary(report: RunReport, rows: dict[str, Counter[str]]) -> str:
    verdicts = Counter(_verdict(c) for c in rows.values())
    return (f"{coverage_line(report)}. {counts_line(report)}. {len(report.outcomes)} tests, {len(rows)} rules: "
            + ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items())) + ".")


def _json_text(value: Any, limit: int = 400) -> str:
    text = json.dumps(value, sort_keys=True, default=repr) if value is not None else "(not recorded)"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def failure_lines(outcome: TestOutcome) -> list[str]:
    """What a failed case was given, what was expected, what came back, and what was asserted."""
    lines = []
    if outcome.op:
        lines.append(f"operation: {outcome.op}")
    if outcome.input is not None:
        lines.append(f"input:     {_json_text(outcome.input)}")
    if outcome.expected is not None:
        lines.append(f"expected:  {_json_text(outcome.expected)}")
    if outcome.input is not None or outcome.expected is not None:
        lines.append(f"actual:    {_json_text(outcome.actual)}")
    if outcome.example:
        lines += ["Minimal failing example:", *outcome.example.splitlines()]
    text = outcome.message or failure_message(outcome.detail, max_lines=4)
    message = textwrap.dedent(text).strip().splitlines()[:4]
    lines += [f"message:   {line}" if i == 0 else f"           {line}" for i, line in enumerate(message)]
    return lines


def console_summary(report: RunReport, shown_per_group: int = 3) -> list[str]:
    """The end-of-run summary: failures grouped by rule and operation, the unsupported operations, the
    tests that do not apply. (Lines starting ``=== `` are section headings.)"""
    lines: list[str] = []
    groups = report.failure_groups()
    if groups:
        failed = sum(len(g.outcomes) for g in groups)
        lines.append(f"=== failures by rule and operation: {failed} failed tests in {len(groups)} "
                     f"group{'s' if len(groups) != 1 else ''} ===")
        for number, group in enumerate(groups, 1):
            lines.append(f"[{number}] {group.title}")
            for outcome in group.outcomes[:shown_per_group]:
                lines.append(f"    {outcome.test_id}")
                lines += [f"      {line}" for line in failure_lines(outcome)]
            rest = group.outcomes[shown_per_group:]
            if rest:
                names = ", ".join(o.test_id.split("::", 1)[-1] for o in rest[:4])
                lines.append(f"    ... and {len(rest)} more: {names}" + (", ..." if len(rest) > 4 else "")
                             + " (all in the reports)")
    departing = report.departures()
    if departing:
        lines.append(f"=== {len(departing)} rules departing from Kafka, as they allow (OPS-4; no failure) ===")
        lines += _wrapped([f"{rule} ({len(cases)})" for rule, cases in departing.items()])
    if report.requirement_shortfalls:
        lines.append(f"=== {len(report.requirement_shortfalls)} required rules not met (--require-rules) ===")
        lines += _wrapped([f"{rule} ({verdict})" for rule, verdict in report.requirement_shortfalls.items()])
    unsupported = report.unsupported_operations()
    if unsupported:
        lines.append(f"=== {len(unsupported)} operations not supported by {report.implementation} "
                     f"(tests skipped, not failed) ===")
        lines += _wrapped([f"{op} ({n})" for op, n in unsupported.items()])
    absent = report.absent_features()
    if absent:
        lines.append(f"=== {len(absent)} store types, backends or capabilities {report.implementation} does not have "
                     f"(their cases skipped as absent; {len(report.absent_only_rules())} rules reached only there) ===")
        lines += _wrapped([f"{what} ({n})" for what, n in absent.items()])
    not_applicable = report.not_applicable()
    if not_applicable:
        lines.append(f"=== {sum(not_applicable.values())} tests not applicable to this implementation "
                     "(no shortfall) ===")
        lines += [f"{n:>5}  {why}" for why, n in not_applicable.items()]
    return lines


def grouped_listing(entries: list[tuple[str, list[str], str]], shown: int = 5) -> list[str]:
    """Lines of ``(operation, rules, line)`` entries, grouped by operation: a heading each, then at most
    ``shown`` of its lines, so that one bug is a few lines however many tests it touches."""
    groups: dict[str, tuple[set[str], list[str]]] = {}
    for op, rules, line in entries:
        group = groups.setdefault(op, (set(), []))
        group[0].update(rules)
        group[1].append(line)
    out: list[str] = []
    for op, (rule_set, lines) in sorted(groups.items(), key=lambda kv: (-len(kv[1][1]), kv[0])):
        # Operations are dotted (family.name); a key without a dot is a test's name (no operation to blame).
        label = "operation" if "." in op else "test"
        out.append(f"{label} {op} · rules {', '.join(sorted(rule_set, key=_rule_key)) or '(none)'} · {len(lines)}")
        out += [f"  {line}" for line in lines[:shown]]
        if len(lines) > shown:
            out.append(f"  ... and {len(lines) - shown} more")
    return out


def _wrapped(items: list[str], width: int = 110) -> list[str]:
    lines: list[str] = []
    current = ""
    for item in items:
        if current and len(current) + len(item) + 2 > width:
            lines.append(current + ",")
            current = ""
        current = f"{current}, {item}" if current else item
    return [*lines, current] if current else lines


def write_reports(report: RunReport, directory: Path, rule_titles: dict[str, tuple[str, str]]) -> None:
    """Write ``report.md``, ``report.html`` and ``results.json`` into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "report.md").write_text(render_markdown(report, rule_titles), encoding="utf-8")
    (directory / "report.html").write_text(render_html(report, rule_titles), encoding="utf-8")
    (directory / "results.json").write_text(
        json.dumps({"implementation": report.implementation, "expected_failures_file": report.expected_failures_file,
                    "coverage": coverage_line(report), "headline": headline(report),
                    "operations": dict(zip(("supported", "total"), report.operations, strict=True))
                    if report.operations else None,
                    "requirement_shortfalls": report.requirement_shortfalls,
                    "outcomes": [_outcome_dict(o) for o in report.outcomes]}, indent=1, default=repr),
        encoding="utf-8",
    )


_OUTCOME_FIELDS = tuple(f.name for f in fields(TestOutcome))


def _outcome_dict(outcome: TestOutcome) -> dict[str, Any]:
    """``dataclasses.asdict(outcome)``, written out for the usual outcome, whose input, expected and actual output
    are None and whose other fields are strings, numbers and lists of strings, which it would copy for the JSON
    encoder to read once (asdict's deep copy of 9 000 outcomes was a third of writing the reports, issue 35); any
    other goes through ``asdict``."""
    if outcome.input is not None or outcome.expected is not None or outcome.actual is not None:
        return asdict(outcome)
    return {name: getattr(outcome, name) for name in _OUTCOME_FIELDS}


def verdict_word(report: RunReport) -> str:
    """The report's verdict: PASSED, FAILED or RAN NO TESTS."""
    if not report.ok():
        return "FAILED"
    return "PASSED" if report.outcomes else "RAN NO TESTS"


def unnamed_xfail_rules(report: RunReport) -> list[str]:
    """Rules whose verdict is ``xfail`` though no expected-failure entry that listed one of their cases names them
    (none, when the attribution is right: issue 31)."""
    from kstate_conformance.expectations import named_rules

    named = {r for o in report.outcomes if o.outcome == "xfailed" for r in named_rules(o.expected_reason)}
    return sorted((r for r, v in report.rule_verdicts().items() if v == "xfail" and r not in named), key=_rule_key)


def rule_family(rule: str) -> str:
    """A rule's family, its ID's prefix (``HV`` of ``HV-5``)."""
    return rule.rsplit("-", 1)[0] if "-" in rule else rule


def _families(rows: dict[str, Counter[str]]) -> dict[str, dict[str, Counter[str]]]:
    families: dict[str, dict[str, Counter[str]]] = {}
    for rule, counts in rows.items():
        families.setdefault(rule_family(rule), {})[rule] = counts
    return families


def _family_summary(rows: dict[str, Counter[str]]) -> str:
    verdicts = Counter(_verdict(c) for c in rows.values())
    return f"{len(rows)} rules: " + ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items()))


_VERDICT_LEGEND = ("Verdicts: `pass` every case passed; `partial` some cases passed and others were skipped because the "
                   "implementation does not support their operation, or were expected failures of another rule; "
                   "`unsupported` no case could run; `n/a` the rule's tests do not apply to this kind of "
                   "implementation (no shortfall); `FAIL`; `xfail` a listed failure whose entry names the rule; "
                   f"`{NOT_VERIFIED}` its only cases were expected failures of other rules; `{DEPARTS}` the "
                   "implementation refuses what the rule lets it refuse (OPS-4; no failure).")


def render_markdown(report: RunReport, rule_titles: dict[str, tuple[str, str]]) -> str:
    """The Markdown report: the verdict, the headline figure, the coverage and the failure groups (linked to their
    details) first; the rules by family below (issue 34)."""
    rows = report.by_rule()
    columns = report.columns()
    xfailed = [o for o in report.outcomes if o.outcome == "xfailed"]
    groups = report.failure_groups()
    departures = report.departures()
    md = [f"# {verdict_word(report)}: conformance of `{report.implementation}`", "",
          f"**{headline(report)}**", "", _summary(report, rows), ""]
    if report.requirement_shortfalls:
        md += ["**Required rules not met** (`--require-rules`): " + ", ".join(
            f"{rule} ({verdict})" for rule, verdict in report.requirement_shortfalls.items()), ""]
    md += ["## Failures by rule and operation", ""]
    if groups:
        md += [f"{number}. [{group.title}](#failure-{number})" for number, group in enumerate(groups, 1)]
    else:
        md.append("None.")
    md += ["", "Also: [departures from Kafka](#departures-from-kafka) "
           f"({len(departures)} rules), [expected failures](#expected-failures) ({len(xfailed)} tests), "
           "[rules by family](#rules-by-family), [rules × store types × backends](#rules-x-store-types-x-backends), "
           "[unsupported operations](#unsupported-operations), [not applicable](#not-applicable).", ""]
    for number, group in enumerate(groups, 1):
        md += [f'<a id="failure-{number}"></a>', "", f"### {number}. {group.title}", ""]
        if len(group.outcomes) > DETAILED_PER_GROUP:
            md += [f"All {len(group.outcomes)} cases (the first {DETAILED_PER_GROUP} in detail below):", "",
                   "| case | input | expected | actual |", "|---|---|---|---|"]
            md += ["| " + " | ".join(f"`{cell}`".replace("|", "\\|").replace("\n", " ") for cell in (
                o.test_id.split("::", 1)[-1], _json_text(o.input, 120), _json_text(o.expected, 120),
                _json_text(o.actual, 120))) + " |" for o in group.outcomes]
            md.append("")
        for failure in group.outcomes[:DETAILED_PER_GROUP]:
            where = ", ".join(x for x in (failure.store_type, failure.backend) if x)
            md += [f"#### `{failure.test_id}`", f"rules: {', '.join(failure.rules) or '(none)'}"
                   + (f"; on {where}" if where else ""), "", "```", *failure_lines(failure), "```", "",
                   "<details><summary>full output</summary>", "", "```", failure.detail[:4000], "```", "",
                   "</details>", ""]
    md += ['<a id="departures-from-kafka"></a>', "", "## Departures from Kafka", ""]
    if departures:
        md += ["Rules under which the implementation refuses, with a typed error, input Kafka accepts, as the rule "
               "allows (OPS-4): listed, failing neither the run nor a rule.", "", "| rule | cases | first case |",
               "|---|---|---|"]
        md += [f"| {rule} | {len(cases)} | `{cases[0].test_id}` |" for rule, cases in departures.items()]
    else:
        md.append("None.")
    md += ["", '<a id="expected-failures"></a>', "", "## Expected failures", ""]
    if report.expected_failures_file:
        md.append(f"List: `{report.expected_failures_file}`; {len(xfailed)} failed as expected, "
                  f"{len(report.unexpected_passes())} passed unexpectedly (each fails the run). Each is `xfail` for "
                  "the rules its entry names, `not verified` for its other rules.")
        md += [""] + [f"- `{o.test_id}` (xfail: {', '.join(xfail_rules(o)) or 'no rule of the test named'})"
                      for o in xfailed]
        md += [f"- `{o.test_id}` (**unexpected pass**)" for o in report.unexpected_passes()]
    else:
        md.append("No expected-failure list was given.")
    md += ["", '<a id="rules-by-family"></a>', "", "## Rules by family", "", _VERDICT_LEGEND, ""]
    for family, family_rows in _families(rows).items():
        md += [f"### {family} ({_family_summary(family_rows)})", "",
               "| rule | level | title | verdict | passed | failed | unsupported | n/a | xfailed | not verified "
               "| departs |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        for rule, counts in family_rows.items():
            title, level = rule_titles.get(rule, ("", ""))
            md.append(f"| {rule} | {level} | {title} | {_verdict(counts)} | {counts['passed']} "
                      f"| {counts['failed'] + counts['unexpected_pass']} | {counts[UNSUPPORTED]} "
                      f"| {counts[NOT_APPLICABLE]} | {counts['xfailed']} | {counts[NOT_VERIFIED]} "
                      f"| {counts[DEPARTED]} |")
        md.append("")
    md += ['<a id="rules-x-store-types-x-backends"></a>', "", "## Rules × store types × backends", "",
           "| rule | " + " | ".join(_column_label(c) for c in columns) + " |",
           "|---|" + "---|" * len(columns)]
    for rule, cells in report.matrix().items():
        md.append(f"| {rule} | " + " | ".join(_cell(cells.get(c)) for c in columns) + " |")
    md += ["", '<a id="unsupported-operations"></a>', "", "## Unsupported operations", ""]
    unsupported = report.unsupported_operations()
    if unsupported:
        md += [f"{len(unsupported)} operations (or capabilities) the implementation does not support; "
               "their tests were skipped, not failed.", "", "| operation | tests skipped |", "|---|---|"]
        md += [f"| `{op}` | {n} |" for op, n in unsupported.items()]
    else:
        md.append("None: the implementation supports every operation the suite uses.")
    absent = report.absent_features()
    if absent:
        only = report.absent_only_rules()
        md += ["", "### Store types, backends and capabilities it does not have", "",
               f"Their cases were skipped as absent: a rule met on every type it has passes; "
               f"{len(only)} rules are reached only there ({', '.join(only) or 'none'}).", "",
               "| store type, backend or capability | tests skipped |", "|---|---|"]
        md += [f"| {what} | {n} |" for what, n in absent.items()]
    not_applicable = report.not_applicable()
    md += ["", '<a id="not-applicable"></a>', "", "## Not applicable", ""]
    if not_applicable:
        md += ["Tests that do not apply to this kind of implementation (no shortfall).", "",
               "| reason | tests |", "|---|---|"]
        md += [f"| {why.replace('|', '/')} | {n} |" for why, n in not_applicable.items()]
    else:
        md.append("None.")
    return "\n".join(md) + "\n"


#: The HTML report's own filter: no script from outside the page (issue 34). It hides the rule rows that do not
#: match the text or the verdict chosen, opens the families that keep a row and hides those that keep none.
_FILTER_SCRIPT = """
function kstateFilter() {
  var text = document.getElementById('rule-filter').value.toLowerCase();
  var verdict = document.getElementById('verdict-filter').value;
  document.querySelectorAll('details.family').forEach(function (family) {
    var shown = 0;
    family.querySelectorAll('tr.rule').forEach(function (row) {
      var ok = (!text || row.textContent.toLowerCase().indexOf(text) >= 0)
        && (!verdict || row.getAttribute('data-verdict') === verdict);
      row.hidden = !ok;
      if (ok) { shown += 1; }
    });
    family.hidden = shown === 0;
    if (text || verdict) { family.open = shown > 0; }
  });
}
"""

_STYLE = """
body{font-family:sans-serif;margin:0 auto;padding:1em 1.5em;max-width:1200px;box-sizing:border-box}
table{border-collapse:collapse;margin-bottom:1em;max-width:100%}
td,th{border:1px solid #ccc;padding:3px 8px;font-size:90%;vertical-align:top;overflow-wrap:anywhere}
.scroll{overflow-x:auto;max-width:100%}
.fail{background:#fdd}.pass{background:#dfd}.partial{background:#efe8c8}.unsupported,.na{background:#eee}
.xfail{background:#ffd}.departs{background:#dde8ff}.notverified{background:#f0e0f0}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f6f6f6;padding:6px}pre.example{background:#eef}
code{overflow-wrap:anywhere}
h1.verdict{font-size:3em;margin:.2em 0;padding:.15em .4em;border-radius:6px}
h1.verdict.PASSED{background:#2e7d32;color:#fff}h1.verdict.FAILED{background:#c62828;color:#fff}
h1.verdict.NORUN{background:#777;color:#fff}
p.headline{font-size:1.3em;font-weight:bold}
details.family>summary{font-weight:bold;cursor:pointer;padding:2px 0}
"""


def render_html(report: RunReport, rule_titles: dict[str, tuple[str, str]]) -> str:
    """The self-contained HTML report, at most 1,200 px wide: the verdict in large letters, the headline figure,
    the coverage and the failure groups (linked to their details) first; the rules below, a collapsible table per
    family, filtered by the page's own script (issue 34)."""
    e = html.escape
    rows = report.by_rule()
    columns = report.columns()
    xfailed = [o for o in report.outcomes if o.outcome == "xfailed"]
    groups = report.failure_groups()
    departures = report.departures()
    verdict = verdict_word(report)
    family_html = ""
    for family, family_rows in _families(rows).items():
        failing = any(_verdict(c) == "FAIL" for c in family_rows.values())
        family_html += (
            f"<details class='family' id='family-{e(family)}'{' open' if failing else ''}><summary>{e(family)} · "
            f"{e(_family_summary(family_rows))}</summary><table><tr><th>rule</th><th>level</th><th>title</th>"
            "<th>verdict</th><th>passed</th><th>failed</th><th>unsupported</th><th>n/a</th><th>xfailed</th>"
            "<th>not verified</th><th>departs</th></tr>" + "".join(
                f"<tr class='rule {_css(_verdict(c))}' data-verdict='{e(_verdict(c))}' id='rule-{e(r)}'>"
                f"<td>{e(r)}</td><td>{e(rule_titles.get(r, ('', ''))[1])}</td>"
                f"<td>{e(rule_titles.get(r, ('', ''))[0])}</td><td>{e(_verdict(c))}</td><td>{c['passed']}</td>"
                f"<td>{c['failed'] + c['unexpected_pass']}</td><td>{c[UNSUPPORTED]}</td><td>{c[NOT_APPLICABLE]}</td>"
                f"<td>{c['xfailed']}</td><td>{c[NOT_VERIFIED]}</td><td>{c[DEPARTED]}</td></tr>"
                for r, c in family_rows.items()) + "</table></details>")
    verdict_options = "".join(f"<option>{e(v)}</option>" for v in sorted({_verdict(c) for c in rows.values()}))
    matrix_head = "".join(f"<th>{e(_column_label(c))}</th>" for c in columns)
    matrix_rows = "".join(
        f"<tr><td>{e(rule)}</td>" + "".join(
            f"<td class='{_css(_verdict(cells[c])) if c in cells else 'none'}'>{e(_cell(cells.get(c)))}</td>"
            for c in columns) + "</tr>"
        for rule, cells in report.matrix().items()
    )
    unsupported = report.unsupported_operations()
    unsupported_html = ("<table><tr><th>operation</th><th>tests skipped</th></tr>" + "".join(
        f"<tr><td><code>{e(op)}</code></td><td>{n}</td></tr>" for op, n in unsupported.items()) + "</table>"
        if unsupported else "<p>None: the implementation supports every operation the suite uses.</p>")
    absent = report.absent_features()
    if absent:
        unsupported_html += ("<h3>Store types, backends and capabilities it does not have</h3><table><tr><th>store type, backend or capability"
                             "</th><th>tests skipped</th></tr>" + "".join(
                                 f"<tr><td>{e(what)}</td><td>{n}</td></tr>" for what, n in absent.items()) + "</table>")
    not_applicable = report.not_applicable()
    na_html = ("<table><tr><th>reason</th><th>tests</th></tr>" + "".join(
        f"<tr><td>{e(why)}</td><td>{n}</td></tr>" for why, n in not_applicable.items()) + "</table>"
        if not_applicable else "<p>None.</p>")
    if report.expected_failures_file:
        expected_html = (f"<p>List <code>{e(report.expected_failures_file)}</code>: {len(xfailed)} failed as expected, "
                         f"{len(report.unexpected_passes())} passed unexpectedly. Each is xfail for the rules its "
                         f"entry names, not verified for its other rules.</p><details{' open' if report.unexpected_passes() else ''}>"
                         f"<summary>the {len(xfailed)} "
                         "expected failures and the rules each is xfail for</summary><ul>"
                         + "".join(f"<li><code>{e(o.test_id)}</code> xfail: "
                                   f"{e(', '.join(xfail_rules(o)) or 'no rule of the test named')}</li>"
                                   for o in xfailed)
                         + "".join(f"<li class='fail'><code>{e(o.test_id)}</code> unexpected pass</li>"
                                   for o in report.unexpected_passes()) + "</ul></details>")
    else:
        expected_html = "<p>No expected-failure list was given.</p>"
    departures_html = ("<p>The implementation refuses, with a typed error, input Kafka accepts, as these rules allow "
                       "(OPS-4): listed, failing neither the run nor a rule.</p><table><tr><th>rule</th><th>cases</th>"
                       "<th>first case</th></tr>" + "".join(
                           f"<tr class='departs'><td>{e(rule)}</td><td>{len(cases)}</td><td><code>"
                           f"{e(cases[0].test_id)}</code></td></tr>" for rule, cases in departures.items())
                       + "</table>" if departures else "<p>None.</p>")
    group_index = ("<ol>" + "".join(f"<li><a href='#failure-{number}'>{e(group.title)}</a></li>"
                                    for number, group in enumerate(groups, 1)) + "</ol>"
                   if groups else "<p>None.</p>")
    failure_html = "".join(
        f"<div class='group' id='failure-{number}'><h3>{number}. {e(group.title)}</h3>" + "".join(
            f"<div class='failure'><h4><code>{e(f.test_id)}</code></h4><p>rules: {e(', '.join(f.rules))}"
            + (f"; on {e(', '.join(x for x in (f.store_type, f.backend) if x))}" if f.store_type or f.backend else "")
            + f"</p><pre class='example'>{e(chr(10).join(failure_lines(f)))}</pre>"
            f"<details><summary>full output</summary><pre>{e(f.detail[:8000])}</pre></details></div>"
            for f in group.outcomes[:DETAILED_PER_GROUP])
        + (f"<p>All {len(group.outcomes)} cases:</p><div class='scroll'><table><tr><th>case</th><th>input</th>"
           "<th>expected</th><th>actual</th></tr>" + "".join(
               f"<tr><td><code>{e(o.test_id.split('::', 1)[-1])}</code></td><td><code>{e(_json_text(o.input, 200))}"
               f"</code></td><td><code>{e(_json_text(o.expected, 200))}</code></td><td><code>"
               f"{e(_json_text(o.actual, 200))}</code></td></tr>" for o in group.outcomes) + "</table></div>"
           if len(group.outcomes) > DETAILED_PER_GROUP else "")
        + "<p><a href='#verdict'>back to the verdict</a></p></div>"
        for number, group in enumerate(groups, 1)
    )
    shortfalls = ("<p class='fail'><b>Required rules not met</b> (--require-rules): " + e(", ".join(
        f"{rule} ({v})" for rule, v in report.requirement_shortfalls.items())) + "</p>"
        if report.requirement_shortfalls else "")
    verdict_class = verdict if verdict in ("PASSED", "FAILED") else "NORUN"
    return f"""<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>{e(verdict)}: kstate conformance of {e(report.implementation)}</title>
<style>{_STYLE}</style><script>{_FILTER_SCRIPT}</script></head><body>
<h1 id="verdict" class="verdict {verdict_class}">{e(verdict)}</h1>
<p>Conformance of <b>{e(report.implementation)}</b></p>
<p class="headline" id="headline">{e(headline(report))}</p>
<p id="coverage">{e(_summary(report, rows))}</p>{shortfalls}
<h2 id="failures">Failures by rule and operation</h2>{group_index}
<p>Also: <a href="#departures-from-kafka">departures from Kafka</a> ({len(departures)} rules),
<a href="#expected-failures">expected failures</a> ({len(xfailed)} tests), <a href="#rules-by-family">rules by family</a>,
<a href="#matrix">rules × store types × backends</a>, <a href="#unsupported-operations">unsupported operations</a>,
<a href="#not-applicable">not applicable</a>.</p>
{failure_html}
<h2 id="departures-from-kafka">Departures from Kafka</h2>{departures_html}
<h2 id="expected-failures">Expected failures</h2>{expected_html}
<h2 id="rules-by-family">Rules by family</h2>
<p>{e(_VERDICT_LEGEND.replace('`', ''))}</p>
<p><label>filter <input id="rule-filter" type="search" oninput="kstateFilter()" placeholder="rule, title or level"></label>
<label>verdict <select id="verdict-filter" onchange="kstateFilter()"><option value="">any</option>{verdict_options}</select></label></p>
{family_html}
<h2 id="matrix">Rules × store types × backends</h2>
<div class="scroll"><table><tr><th>rule</th>{matrix_head}</tr>{matrix_rows}</table></div>
<h2 id="unsupported-operations">Unsupported operations</h2>{unsupported_html}
<h2 id="not-applicable">Not applicable</h2>{na_html}</body></html>
"""


def _css(verdict: str) -> str:
    return {"FAIL": "fail", "n/a": "na", DEPARTS: "departs", NOT_VERIFIED: "notverified"}.get(verdict, verdict)
