"""The HTML report in a real browser (issue 34): it opens on its verdict, the headline figure and the failure groups
(linked to their details), is at most 1,200 px wide, and filters its rules table with its own script.

Needs Chromium (Debian's ``chromium`` package; ``.ci/run`` installs it where it can); skipped with the reason where
it is absent."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kstate_conformance.report import RunReport, TestOutcome, render_html, render_markdown

CHROMIUM = next((found for name in ("chromium", "chromium-browser", "google-chrome") if (found := shutil.which(name))),
                None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on PATH (apt-get install chromium)")

#: Appended to a copy of the page: what the browser laid out, written into the DOM that --dump-dom prints.
PROBE = """<script>
window.addEventListener('load', function () {
  var verdict = document.getElementById('verdict').getBoundingClientRect();
  var first = document.getElementById('failure-1').getBoundingClientRect();
  document.getElementById('rule-filter').value = 'HDR-7';
  kstateFilter();
  var shown = Array.prototype.filter.call(document.querySelectorAll('tr.rule'), function (r) { return !r.hidden; });
  var probe = document.createElement('div');
  probe.id = 'probe';
  probe.textContent = JSON.stringify({verdictTop: verdict.top, verdictBottom: verdict.bottom,
    pageWidth: document.documentElement.scrollWidth, bodyWidth: document.body.getBoundingClientRect().width,
    firstGroupLinkTop: document.querySelector("a[href='#failure-1']").getBoundingClientRect().top,
    groupTop: first.top, shownRules: shown.map(function (r) { return r.id; }),
    openFamilies: Array.prototype.filter.call(document.querySelectorAll('details.family'),
      function (d) { return d.open; }).map(function (d) { return d.id; })});
  document.body.appendChild(probe);
});
</script>"""


def _report() -> RunReport:
    """A run as large as the kit's: 400 rules in 20 families, a failure group of 12 cases, a long input."""
    outcomes = [TestOutcome(f"test_x.py::test_rule[{family}-{n}]", "passed", [f"{family}-{n}"], "required")
                for family in ("KV", "WS", "SS", "VS", "HV", "HDR", "PRIM", "OFF", "CL", "LAY", "TSKV", "CACHE",
                               "RST", "UPG", "VER", "WIN", "SESS", "OPS", "TP", "INST") for n in range(1, 21)]
    outcomes += [TestOutcome(f"test_golden.py::test_golden[spec.kv.case_{i}]", "failed", ["KV-7"], "required",
                             "E   AssertionError: differs", op="store.get", input={"key": "ab" * 300},
                             expected={"value": "00"}, actual={"value": "01"}) for i in range(12)]
    return RunReport("cmd:./porter", outcomes, operations=(90, 168))


def _chromium(*args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--window-size=1400,900", *args], capture_output=True, text=True, timeout=120, check=False)


def test_the_html_report_opens_on_its_verdict_and_failures_in_a_browser(tmp_path: Path) -> None:
    page = render_html(_report(), {})
    probed = tmp_path / "report.html"
    probed.write_text(page.replace("</body></html>", PROBE + "</body></html>"), encoding="utf-8")
    run = _chromium("--virtual-time-budget=5000", "--dump-dom", probed.as_uri())
    dom = run.stdout
    assert "<body" in dom, run.stderr[-2000:]
    body = dom.split("<body", 1)[1].split(">", 1)[1]
    first = re.match(r"\s*<(\w+)([^>]*)>([^<]*)<", body)
    assert first is not None and first.group(1) == "h1" and 'id="verdict"' in first.group(2), body[:300]
    assert first.group(3).strip() == "FAILED"
    import json

    probe = json.loads(re.search(r'<div id="probe">(.*?)</div>', dom, re.S).group(1))  # type: ignore[union-attr]
    assert probe["verdictTop"] < 100 and probe["verdictBottom"] < 900, probe  # in the first screen, at the top
    assert probe["firstGroupLinkTop"] < 900, probe  # the failure groups' index too
    assert probe["bodyWidth"] <= 1200 and probe["pageWidth"] <= 1400, probe  # no wider than 1,200 px, no h-scroll
    assert probe["shownRules"] == ["rule-HDR-7"] and probe["openFamilies"] == ["family-HDR"], probe
    # The headline figure leads, and the rules table comes after the failure details.
    assert page.index("id=\"headline\"") < page.index("id=\"failures\"") < page.index("id='failure-1'") \
        < page.index("id=\"rules-by-family\"")
    assert "<script src" not in page and "<link" not in page  # nothing from outside the page


def test_the_screenshot_shows_the_verdict_banner(tmp_path: Path) -> None:
    (tmp_path / "report.html").write_text(render_html(_report(), {}), encoding="utf-8")
    shot = tmp_path / "shot.png"
    run = _chromium(f"--screenshot={shot}", (tmp_path / "report.html").as_uri())
    assert shot.is_file() and shot.stat().st_size > 1000, run.stderr[-2000:]
    # The FAILED banner is red (#c62828) near the top left of the first screen.
    png = shot.read_bytes()
    assert png.startswith(b"\x89PNG")
    from zlib import decompress

    width = int.from_bytes(png[16:20], "big")
    chunks, offset = b"", 8
    while offset < len(png):
        length = int.from_bytes(png[offset:offset + 4], "big")
        kind = png[offset + 4:offset + 8]
        if kind == b"IDAT":
            chunks += png[offset + 8:offset + 8 + length]
        offset += 12 + length
    raw = decompress(chunks)
    channels = (len(raw) // int.from_bytes(png[20:24], "big") - 1) // width
    row = 60  # within the banner (its top margin is a few pixels)
    reds = _unfiltered_reds(raw, width, channels, row)
    assert reds > width // 4, f"{reds} red pixels of {width} on row {row}"


def _unfiltered_reds(raw: bytes, width: int, channels: int, row: int) -> int:
    """Pixels of ``row`` close to the banner's red, after undoing PNG's row filters up to that row."""
    stride = width * channels
    previous = bytearray(stride)
    for y in range(row + 1):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            up = previous[x]
            corner = previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + left) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + up) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[x] = (line[x] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        previous = line
    return sum(1 for x in range(0, stride, channels)
               if abs(previous[x] - 0xC6) < 24 and abs(previous[x + 1] - 0x28) < 24 and abs(previous[x + 2] - 0x28) < 24)


def test_the_markdown_report_leads_with_the_verdict_and_links_its_failure_groups() -> None:
    markdown = render_markdown(_report(), {})
    lines = markdown.splitlines()
    assert lines[0] == "# FAILED: conformance of `cmd:./porter`"
    assert lines[2].startswith("**cmd:./porter passes every case of 399 of 400 applicable rules;")
    assert "1. [rules KV-7 · operation store.get · 12 failed (test_golden x12)](#failure-1)" in markdown
    assert markdown.index('<a id="failure-1"></a>') < markdown.index("## Rules by family")
    assert "### KV (20 rules: 1 FAIL, 19 pass)" in markdown
