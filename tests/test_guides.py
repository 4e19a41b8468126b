"""The README is a front page and the guides under ``docs/`` hold the rest (issue 34): every ``kstate`` command line
the README and the guides quote is one the command accepts, every relative link leads to a file that exists, and
the README keeps exactly the two set-up commands and a path per kind of user. The operator's path is run as
written by ``system_tests/test_operator_demo.py``."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from kstate.cli import build_parser

REPO = Path(__file__).resolve().parents[1]
GUIDES = ("docs/porter.md", "docs/operator.md", "docs/contributor.md", "docs/measured.md")
DOCUMENTS = ("README.md", *GUIDES)
SETUP_COMMANDS = (
    "python3 -m venv .venv && . .venv/bin/activate && python -m pip install 'tox>=4.11' && tox -e conformance",
    "python3 -m venv .venv && . .venv/bin/activate && python -m pip install 'tox>=4.11' && tox run-parallel "
    "--parallel 2 --parallel-live",
)


def _text(name: str) -> str:
    return (REPO / name).read_text(encoding="utf-8")


def _shell_lines(text: str) -> list[str]:
    """The command lines of every ``sh`` block, continuation lines joined."""
    lines: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        lines += [line.strip() for line in block.replace("\\\n", " ").splitlines() if line.strip()]
    return lines


def _inline_commands(text: str) -> list[str]:
    """``kstate ...`` in inline code, leaving out usage synopses (``[--check]``, ``A|B``, ``...``)."""
    spans = re.findall(r"(?<!`)`(kstate [^`]+)`(?!`)", text)
    return [s for s in spans if not re.search(r"[\[\]|]|\.\.\.|\\", s)]


def _kstate_invocations(line: str) -> list[list[str]]:
    """Each ``kstate ...`` of a shell line, as its argument list (``$(...)`` stands for one word)."""
    line = re.sub(r'"?\$\([^)]*\)"?', "SUBSTITUTED", line)
    words = shlex.split(line, comments=True)
    invocations: list[list[str]] = []
    current: list[str] | None = None
    for word in words:
        if word in ("&&", "||", ";", "|"):
            current = None
        elif current is not None:
            current.append(word)
        elif word == "kstate":
            current = []
            invocations.append(current)
    return invocations


def _quoted_commands() -> list[tuple[str, list[str]]]:
    found: list[tuple[str, list[str]]] = []
    for name in DOCUMENTS:
        text = _text(name)
        for line in _shell_lines(text):
            found += [(f"{name}: {line}", args) for args in _kstate_invocations(line)]
        for span in _inline_commands(text):
            found += [(f"{name}: `{span}`", args) for args in _kstate_invocations(span)]
    return found


COMMANDS = _quoted_commands()


def test_the_guides_quote_kstate_commands() -> None:
    documents = {where.split(":")[0] for where, _ in COMMANDS}
    assert {"README.md", "docs/porter.md", "docs/operator.md", "docs/contributor.md"} <= documents, documents
    assert len(COMMANDS) >= 20, COMMANDS


@pytest.mark.parametrize(("where", "args"), COMMANDS, ids=[where for where, _ in COMMANDS])
def test_every_quoted_kstate_command_line_parses(where: str, args: list[str]) -> None:
    """Parsed as ``kstate`` parses it: a misspelt command, option or choice exits 2 here. A command named in prose
    (```kstate audit```) is checked as ``kstate audit --help`` is: the command exists."""
    if where.endswith("`") and all(not a.startswith("-") for a in args) and len(args) <= 2:
        args = [*args, "--help"]
    try:
        parsed = build_parser().parse_args(args)
    except SystemExit as exc:
        if exc.code == 0 and ("--help" in args or "--version" in args):
            return
        pytest.fail(f"{where}: kstate {shlex.join(args)} does not parse (exit {exc.code})")
    assert callable(parsed.func)


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_relative_link_leads_to_a_file(name: str) -> None:
    base = (REPO / name).parent
    for target in re.findall(r"\]\(([^)\s]+)\)", _text(name)):
        if target.startswith(("http://", "https://", "#", "mailto:")):
            continue
        path = target.split("#")[0]
        assert (base / path).exists(), f"{name}: the link {target} leads nowhere"


def test_the_readme_is_a_front_page() -> None:
    """What the kit is, the two set-up commands exactly, a path per kind of user, each guide linked."""
    readme = _text("README.md")
    blocks = re.findall(r"```sh\n(.*?)```", readme, re.S)
    assert [b.strip() for b in blocks[:2]] == list(SETUP_COMMANDS), blocks[:2]
    for guide in GUIDES:
        assert f"]({guide})" in readme, f"the README does not link {guide}"
    # The benchmark tables are generated into the front page (issue 35: the measured reads, dump and restore are in
    # the README); the page's own text is what stays short.
    own_text = re.sub(r"<!-- bench:start.*?<!-- bench:end -->", "", readme, flags=re.S)
    assert "<!-- bench:start" not in own_text, "the generated benchmark block is closed"
    assert len(own_text.splitlines()) <= 120, "the README is a front page: reference material goes to docs/"
    for heading in ("## Auditing", "## Measured", "## Apache Kafka under test", "## The `kstate` command"):
        assert heading not in readme, f"{heading!r} belongs in a guide under docs/"


def test_the_measured_figures_keep_their_dates_and_commits() -> None:
    measured = _text("docs/measured.md")
    assert re.findall(r"\b20\d\d-\d\d-\d\d\b", measured) and re.findall(r"commits? [0-9a-f]{7}\b", measured)
