"""``kstate audit --report``: the report writer on synthetic audit reports (counts per store and kind, caps,
the JSON lines round trip, HTML escaping), without Spark or a broker."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

from kstate.errors import KStateError
from kstate.spark.audit_report import (
    AuditReportError,
    DifferenceRow,
    StoreAudit,
    difference_rows,
    read_jsonl,
    render_html,
    render_markdown,
    report_format,
    write_report,
)
from kstate.spark.oracle import AuditReport, Difference
from kstate.spark.semantics import EntryDifference

HOSTILE = "<script>alert('x')</script>&"


def kv_audit() -> StoreAudit:
    """Three differences of a key-value store: one of each kind."""
    differences = [Difference(0, b"<k>", b"\x01", b"\x02"), Difference(1, b"gone", b"\x00\xff", None),
                   Difference(1, b"extra", None, b"")]
    report = AuditReport("spark", 120, 40, 40, differences, 1.5)
    return StoreAudit("counts", "timestamped_kv", "app-counts-changelog", 2, report)


def versioned_audit(listed: int = 3, counted: int = 7) -> StoreAudit:
    """A versioned store whose audit counted ``counted`` differences and listed the first ``listed``."""
    entries = [EntryDifference(0, b"k%d" % i, f"valid_from={1000 + i}", "missing", "value=71 valid_to=latest", None)
               for i in range(listed - 1)]
    entries.append(EntryDifference(0, b"h", "valid_from=5", "different headers", f"[{HOSTILE}=00]", "[a=01]"))
    report = AuditReport("spark", 50, 10, 8, [], 2.0, entity="versions", entry_differences=entries,
                         counts={"different headers": 1, "missing": counted - 1})
    return StoreAudit(f"prices{HOSTILE}", "versioned_kv", "app-prices-changelog", 1, report)


def clean_audit() -> StoreAudit:
    return StoreAudit("totals", "kv", "app-totals-changelog", 2, AuditReport("python", 10, 5, 5, [], 0.1))


def test_counts_per_store_and_kind_are_complete_even_past_what_was_listed() -> None:
    assert kv_audit().counts == {"missing": 1, "unexpected": 1, "different": 1}
    audit = versioned_audit(listed=3, counted=7)
    assert audit.counts == {"missing": 6, "different headers": 1}  # the known kinds first, then by name
    assert (audit.total, audit.listed) == (7, 3)
    assert (clean_audit().counts, clean_audit().total) == ({}, 0)


def test_markdown_counts_each_store_and_kind_and_caps_the_list_with_a_note() -> None:
    text = render_markdown([kv_audit(), versioned_audit(listed=3, counted=7), clean_audit()], max_listed=2)
    assert "3 stores audited, 2 with differences, 10 differences." in text
    kinds = text.split("## Differences by kind")[1]
    assert "| store | missing | unexpected | different | different headers | total |" in kinds
    assert "| counts | 1 | 1 | 1 | 0 | 3 |" in kinds
    assert "| totals | 0 | 0 | 0 | 0 | 0 |" in kinds
    assert "| 1 | `676f6e65` |  | missing | 00ff | *absent* |" in text
    assert "6578747261" not in text  # the third difference is past the cap
    assert "| 1 | `6578747261` |  | unexpected | *absent* | *empty* |" in render_markdown([kv_audit()])
    assert "1 more listed differences are not shown here" in text  # 3 listed, 2 shown, for each store
    assert "the audit listed 3 of 7 differences" in text
    assert "## totals" not in text  # a store without differences has no list
    assert "\\|" not in text.split("## counts")[1].split("## prices")[0]  # nothing to escape in the kv rows


def test_markdown_says_when_nothing_differs() -> None:
    text = render_markdown([clean_audit()])
    assert "0 with differences, 0 differences" in text and "None: every store holds exactly" in text
    assert "| totals | kv | app-totals-changelog | 2 | 10 | 5 keys | 5 keys | 0 | ok |" in text


def test_html_escapes_store_names_entries_and_values_and_shows_keys_as_hex() -> None:
    text = render_html([kv_audit(), versioned_audit()])
    assert "<script>" not in text and HOSTILE not in text
    assert html.escape(f"prices{HOSTILE}") in text and html.escape(f"[{HOSTILE}=00]") in text
    assert "<k>" not in text and f"<code>{b'<k>'.hex()}</code>" in text
    assert "<td class=absent>absent</td>" in text
    assert "the audit listed 3 of 7 differences" in text
    capped = render_html([kv_audit()], max_listed=1)
    assert capped.count("<td><code>") == 3 and "2 more listed differences are not shown here" in capped


def test_json_lines_hold_every_listed_difference_and_read_back_the_same(tmp_path: Path) -> None:
    audits = [kv_audit(), versioned_audit(listed=3, counted=7), clean_audit()]
    path = tmp_path / "out" / "audit.jsonl"
    assert write_report(audits, path) == "jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 6
    first = json.loads(lines[0])
    assert first == {"store": "counts", "store_type": "timestamped_kv", "partition": 0, "key": b"<k>".hex(),
                     "entry": None, "kind": "different", "expected": "01", "actual": "02"}
    assert json.loads(lines[2])["expected"] is None and json.loads(lines[2])["actual"] == ""
    assert read_jsonl(path) == [row for a in audits for row in difference_rows(a)]
    last = read_jsonl(path)[-1]
    assert last == DifferenceRow(f"prices{HOSTILE}", "versioned_kv", 0, b"h".hex(), "valid_from=5",
                                 "different headers", f"[{HOSTILE}=00]", "[a=01]")


def test_the_format_comes_from_the_option_else_the_suffix(tmp_path: Path) -> None:
    assert report_format("x.md", None) == "md" and report_format("x.HTML", None) == "html"
    assert report_format("x.ndjson", None) == "jsonl" and report_format("x.txt", "md") == "md"
    with pytest.raises(AuditReportError, match=r"cannot tell the format.*--report-format"):
        report_format(tmp_path / "report.txt", None)
    with pytest.raises(AuditReportError, match="unknown report format 'pdf'"):
        report_format("x.md", "pdf")
    assert issubclass(AuditReportError, KStateError)
    assert write_report([kv_audit()], tmp_path / "r.txt", "html") == "html"
    assert (tmp_path / "r.txt").read_text(encoding="utf-8").startswith("<!doctype html>")
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(AuditReportError, match="--report"):
        write_report([kv_audit()], blocker / "r.md")


def test_the_audit_command_runs_on_every_local_core_by_default_and_takes_several_stores() -> None:
    from kstate.cli import build_parser
    from kstate.spark.audit_command import _parse_store_spec

    base = ["audit", "--bootstrap", "b:9092", "--application-id", "app", "--state-dir", "s"]
    args = build_parser().parse_args([*base, "--store", "a", "--store", "b:window", "--store-type", "session"])
    assert args.master == "local[*]" and args.store == ["a", "b:window"] and not args.quiet
    assert [_parse_store_spec(s, args.store_type) for s in args.store] == [("a", "session"), ("b", "window")]
    assert _parse_store_spec("a", None) == ("a", None)  # detected later
    assert build_parser().parse_args([*base, "--store", "a", "--master", "spark://h:7077"]).master == "spark://h:7077"
    with pytest.raises(KStateError, match="unknown store type 'nope'"):
        _parse_store_spec("a:nope", None)
    with pytest.raises(KStateError, match="no store name"):
        _parse_store_spec(":kv", None)


def test_an_unknown_report_format_is_refused_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kstate.cli import main

    code = main(["audit", "--bootstrap", "127.0.0.1:1", "--application-id", "app", "--store", "a",
                 "--state-dir", str(tmp_path), "--report", str(tmp_path / "r.txt")])
    assert code == 2
    assert "cannot tell the format from the suffix" in capsys.readouterr().err
    assert main(["audit", "--bootstrap", "127.0.0.1:1", "--application-id", "app", "--store", "a",
                 "--state-dir", str(tmp_path), "--report-format", "md"]) == 2
    assert "--report-format needs --report PATH" in capsys.readouterr().err
