"""``benchmarks/readme.py``: the benchmark reports copied into README.md's generated block (issue 35)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_readme", ROOT / "benchmarks" / "readme.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


readme = _generator()


def _reports(directory: Path, stamp: str = "(2026-12-03 16:51, commit df99ef6)") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name in readme.REPORTS:
        (directory / name).write_text(f"## {name} run {stamp}\n\n| a | b |\n|---|---:|\n| {name} | 1.00 |\n\n"
                                      "### detail\n\ntext\n", encoding="utf-8")
    return directory


def test_replaces_exactly_the_marked_block(tmp_path: Path) -> None:
    """Only the text between the markers changes; a second run changes nothing; ``--check`` sees a stale block."""
    before = "# Title\n\nintro\n\n" + readme.START + "\n\nold table\n\n" + readme.END + "\n\n## After\n\ntail\n"
    target = tmp_path / "README.md"
    target.write_text(before, encoding="utf-8")
    reports = _reports(tmp_path / "bench")
    assert readme.main(["--readme", str(target), "--reports", str(reports), "--check"]) == 1
    assert readme.main(["--readme", str(target), "--reports", str(reports)]) == 0
    after = target.read_text(encoding="utf-8")
    head, rest = after.split(readme.START)
    body, tail = rest.split(readme.END)
    assert head == "# Title\n\nintro\n\n"
    assert tail == "\n\n## After\n\ntail\n"
    assert "old table" not in body
    for name in readme.REPORTS:
        assert f"### {name} run (2026-12-03 16:51, commit df99ef6)" in body  # moved under README's ## Benchmarks
        assert f"| {name} | 1.00 |" in body
    assert "#### detail" in body
    assert next(line for line in body.splitlines() if line.startswith("###")).startswith("### kafka-side-by-side")
    assert readme.main(["--readme", str(target), "--reports", str(reports), "--check"]) == 0
    assert readme.main(["--readme", str(target), "--reports", str(reports)]) == 0
    assert target.read_text(encoding="utf-8") == after


@pytest.mark.parametrize("heading", ["## dump (2026-12-03 16:51)", "## dump (commit df99ef6)", "| a table first |",
                                     ""])
def test_refuses_a_report_without_date_and_commit(tmp_path: Path, heading: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    reports = _reports(tmp_path / "bench")
    (reports / "dump.md").write_text(heading + "\n\n| a |\n|---|\n", encoding="utf-8")
    target = tmp_path / "README.md"
    original = readme.START + "\n" + readme.END + "\n"
    target.write_text(original, encoding="utf-8")
    with pytest.raises(readme.ReportError, match=r"dump\.md: its first line names no date and commit"):
        readme.report_block(reports)
    assert readme.main(["--readme", str(target), "--reports", str(reports)]) == 2
    assert "no date and commit" in capsys.readouterr().err
    assert target.read_text(encoding="utf-8") == original  # untouched


def test_refuses_a_missing_report_and_a_readme_without_one_block(tmp_path: Path) -> None:
    reports = _reports(tmp_path / "bench")
    (reports / "restore-broker.md").unlink()
    with pytest.raises(readme.ReportError, match="no such report"):
        readme.report_block(reports)
    for text in ("no markers\n", readme.START + "\n", readme.START + readme.END + readme.START + readme.END):
        with pytest.raises(readme.ReportError, match="exactly one"):
            readme.replace_block(text, "body")


def test_the_readme_carries_the_markers() -> None:
    """The README's Benchmarks section has the block (filled by the integrator after a quiet run)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.count(readme.START) == 1 and text.count(readme.END) == 1
    assert text.index("## Benchmarks") < text.index(readme.START) < text.index(readme.END)
