"""``kstate audit --report``: what an audit of one or more stores found, as Markdown, HTML or JSON lines.

Every format opens with a count per store and per kind of difference (complete, also past what the audit
listed); Markdown and HTML then list the differences up to a cap with a note of how many more; JSON lines
holds every listed difference, one object each (store, store type, partition, key hex, entry, kind, expected,
actual). Built from the public fields of :class:`kstate.spark.oracle.AuditReport` only.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kstate.errors import KStateError
from kstate.spark.oracle import AuditReport

#: The report formats and the file suffixes that choose them when no format is given.
FORMATS = ("md", "html", "jsonl")
SUFFIXES = {".md": "md", ".markdown": "md", ".html": "html", ".htm": "html", ".jsonl": "jsonl", ".ndjson": "jsonl"}
#: Differences listed per store in the Markdown and HTML reports; JSON lines lists all of them.
DEFAULT_LISTED = 1000
#: Kinds shown first, in this order; any other kind (``different valid_to``, ``undecodable``, ...) follows by name.
KIND_ORDER = ("missing", "unexpected", "different", "different value")


class AuditReportError(KStateError):
    """A report that cannot be written: an unknown format or suffix, or a path that cannot be written to."""


@dataclass(frozen=True)
class StoreAudit:
    """One store's audit: its name, type, changelog topic, the partitions dumped, and what the oracle found."""

    store: str
    store_type: str
    topic: str
    partitions: int
    report: AuditReport

    @property
    def counts(self) -> dict[str, int]:
        """Every difference counted by kind: key-value differences are all listed; the other families count
        their kinds in ``report.counts``, also those the audit did not list."""
        counted = Counter(self.report.counts)
        counted.update(d.kind for d in self.report.differences)
        return dict(sorted(counted.items(), key=lambda item: _kind_key(item[0])))

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def listed(self) -> int:
        return len(self.report.differences) + len(self.report.entry_differences)


@dataclass(frozen=True)
class DifferenceRow:
    """One difference as the reports show it. ``expected``/``actual`` are hex bytes for key-value stores and the
    compared fields (``value=<hex> valid_to=...``) for the other families; None is absent. ``entry`` names the
    version, window or session (None for key-value stores)."""

    store: str
    store_type: str
    partition: int
    key: str
    entry: str | None
    kind: str
    expected: str | None
    actual: str | None

    @classmethod
    def from_json(cls, line: str) -> DifferenceRow:
        data: dict[str, Any] = json.loads(line)
        return cls(**{name: data[name] for name in cls.__dataclass_fields__})


def _kind_key(kind: str) -> tuple[int, str]:
    return (KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER), kind)


def difference_rows(audit: StoreAudit) -> Iterator[DifferenceRow]:
    """The differences ``audit`` listed, key-value ones first, in the order the audit gave them."""
    for d in audit.report.differences:
        yield DifferenceRow(audit.store, audit.store_type, d.partition, d.key.hex(), None, d.kind,
                            None if d.expected is None else d.expected.hex(),
                            None if d.actual is None else d.actual.hex())
    for e in audit.report.entry_differences:
        yield DifferenceRow(audit.store, audit.store_type, e.partition, e.key.hex(), e.entry, e.kind,
                            e.expected, e.actual)


def all_kinds(audits: Sequence[StoreAudit]) -> list[str]:
    return sorted({kind for a in audits for kind in a.counts}, key=_kind_key)


def report_format(path: str | Path, given: str | None) -> str:
    """The format asked for, else the one ``path``'s suffix names; an error naming both when neither says."""
    if given is not None:
        if given not in FORMATS:
            raise AuditReportError(f"unknown report format {given!r}: one of {', '.join(FORMATS)}")
        return given
    found = SUFFIXES.get(Path(path).suffix.lower())
    if found is None:
        raise AuditReportError(f"--report {path}: cannot tell the format from the suffix "
                               f"({', '.join(SUFFIXES)}); pass --report-format {'|'.join(FORMATS)}")
    return found


def render_jsonl(audits: Iterable[StoreAudit]) -> str:
    return "".join(json.dumps(asdict(row), sort_keys=True) + "\n" for a in audits for row in difference_rows(a))


def read_jsonl(path: str | Path) -> list[DifferenceRow]:
    """The differences of a JSON lines report (the inverse of :func:`render_jsonl`)."""
    return [DifferenceRow.from_json(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line]


def _verdict(audit: StoreAudit) -> str:
    return "ok" if audit.report.ok else "differences"


def _more_note(audit: StoreAudit, shown: int) -> str:
    """How many differences are not in the table, and where the rest are (or that the audit did not list them)."""
    notes = []
    if audit.listed > shown:
        notes.append(f"{audit.listed - shown} more listed differences are not shown here (the JSON lines report "
                     "holds every listed difference)")
    if audit.total > audit.listed:
        notes.append(f"the audit listed {audit.listed} of {audit.total} differences; the counts above are complete")
    return "; ".join(notes)


def _md_cell(text: str | None) -> str:
    if text is None:
        return "*absent*"
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`").replace("\n", " ") or "*empty*"


def render_markdown(audits: Sequence[StoreAudit], max_listed: int = DEFAULT_LISTED) -> str:
    kinds = all_kinds(audits)
    total = sum(a.total for a in audits)
    lines = ["# kstate audit", "",
             f"{len(audits)} stores audited, {sum(not a.report.ok for a in audits)} with differences, "
             f"{total} differences.", "",
             "| store | type | changelog | partitions | records read | expected | actual | differences | verdict |",
             "|---|---|---|---:|---:|---:|---:|---:|---|"]
    for a in audits:
        r = a.report
        lines.append(f"| {_md_cell(a.store)} | {a.store_type} | {_md_cell(a.topic)} | {a.partitions} | "
                     f"{r.records_read} | {r.expected_keys} {r.entity} | {r.actual_keys} {r.entity} | {a.total} | "
                     f"{_verdict(a)} |")
    lines += ["", "## Differences by kind", ""]
    if kinds:
        lines += ["| store | " + " | ".join(kinds) + " | total |", "|---|" + "---:|" * (len(kinds) + 1)]
        for a in audits:
            lines.append(f"| {_md_cell(a.store)} | " + " | ".join(str(a.counts.get(k, 0)) for k in kinds)
                         + f" | {a.total} |")
    else:
        lines.append("None: every store holds exactly the state its changelog implies.")
    for a in audits:
        rows = list(difference_rows(a))
        if not rows and not a.total:
            continue
        shown = rows[:max_listed]
        lines += ["", f"## {_md_cell(a.store)} ({a.store_type})", "",
                  "| partition | key (hex) | entry | kind | expected | actual |", "|---:|---|---|---|---|---|"]
        lines += [f"| {d.partition} | `{d.key}` | {_md_cell(d.entry) if d.entry is not None else ''} | {d.kind} | "
                  f"{_md_cell(d.expected)} | {_md_cell(d.actual)} |" for d in shown]
        note = _more_note(a, len(shown))
        if note:
            lines += ["", f"*{note}.*"]
    return "\n".join(lines) + "\n"


def render_html(audits: Sequence[StoreAudit], max_listed: int = DEFAULT_LISTED) -> str:
    e = html.escape
    kinds = all_kinds(audits)

    def cell(text: str | None) -> str:
        return "<td class=absent>absent</td>" if text is None else f"<td><code>{e(text)}</code></td>"

    store_rows = "".join(
        f"<tr class={_verdict(a)}><td>{e(a.store)}</td><td>{e(a.store_type)}</td><td>{e(a.topic)}</td>"
        f"<td>{a.partitions}</td><td>{a.report.records_read}</td><td>{a.report.expected_keys} {e(a.report.entity)}</td>"
        f"<td>{a.report.actual_keys} {e(a.report.entity)}</td><td>{a.total}</td><td>{_verdict(a)}</td></tr>"
        for a in audits)
    if kinds:
        kind_table = ("<table><tr><th>store</th>" + "".join(f"<th>{e(k)}</th>" for k in kinds) + "<th>total</th></tr>"
                      + "".join(f"<tr><td>{e(a.store)}</td>" + "".join(f"<td>{a.counts.get(k, 0)}</td>" for k in kinds)
                                + f"<td>{a.total}</td></tr>" for a in audits) + "</table>")
    else:
        kind_table = "<p>None: every store holds exactly the state its changelog implies.</p>"
    sections = []
    for a in audits:
        rows = list(difference_rows(a))
        if not rows and not a.total:
            continue
        shown = rows[:max_listed]
        body = "".join(f"<tr><td>{d.partition}</td><td><code>{e(d.key)}</code></td><td>{e(d.entry or '')}</td>"
                       f"<td>{e(d.kind)}</td>{cell(d.expected)}{cell(d.actual)}</tr>" for d in shown)
        note = _more_note(a, len(shown))
        sections.append(f"<h2>{e(a.store)} ({e(a.store_type)})</h2><table><tr><th>partition</th><th>key (hex)</th>"
                        f"<th>entry</th><th>kind</th><th>expected</th><th>actual</th></tr>{body}</table>"
                        + (f"<p class=note>{e(note)}.</p>" if note else ""))
    total = sum(a.total for a in audits)
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>kstate audit</title>
<style>body{{font-family:sans-serif}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:2px 6px}}
tr.ok td:last-child{{background:#cfc}}tr.differences td:last-child{{background:#fcc}}td.absent{{color:#888}}
.note{{font-style:italic}}</style></head><body><h1>kstate audit</h1>
<p>{len(audits)} stores audited, {sum(not a.report.ok for a in audits)} with differences, {total} differences.</p>
<table><tr><th>store</th><th>type</th><th>changelog</th><th>partitions</th><th>records read</th><th>expected</th>
<th>actual</th><th>differences</th><th>verdict</th></tr>{store_rows}</table>
<h2>Differences by kind</h2>{kind_table}
{''.join(sections)}</body></html>
"""


def write_report(audits: Sequence[StoreAudit], path: str | Path, fmt: str | None = None,
                 max_listed: int = DEFAULT_LISTED) -> str:
    """Write the report of ``audits`` to ``path`` in ``fmt`` (default: by suffix); answers the format written."""
    chosen = report_format(path, fmt)
    if chosen == "jsonl":
        text = render_jsonl(audits)
    elif chosen == "html":
        text = render_html(audits, max_listed)
    else:
        text = render_markdown(audits, max_listed)
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise AuditReportError(f"--report {path}: {exc.strerror or exc}") from exc
    return chosen
