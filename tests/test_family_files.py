"""ARCHITECTURE.md's list of every file a store family touches stays true (issue 33): the code files that name the
session family, found by grepping for its constants, are the files the list names, no more and no fewer."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECTION = "## Every file a store family touches"
#: The session family's names in Python and Java: store types, family, type set, operations, op and mutant modules,
#: column family. ``scope="session"`` is pytest's fixture scope, not the family; the ops index's ``RUN_SOURCE`` is the
#: example run's label (a session of operations), not the family.
FAMILY_NAMES = re.compile(
    r'\bFamily\.SESSION\b|\bStoreType\.SESSION(_WITH_HEADERS)?\b|\bSESSION_TYPES\b'
    r'|\bStoreTypes\.(FAMILY_)?SESSION(_WITH_HEADERS)?\b|"session_store[."]|\bsession_store_(ops|mutants)\b'
    r'|(?<!scope=)(?<!RUN_SOURCE = )"session(_with_headers)?"|\bSESSION_HEADERS_CF\b|\bSESSION_WITH_HEADERS_LAYOUT\b'
    # Its own modules, named where a shared file imports or calls them: a registration line is a touch too.
    r'|\bsession_(keys|ops|mutants|rows|semantics|processor)\b|\bkstate\.stores\.session\b'
    r'|\bkstate_conformance\.models\.session\b|\bimport\b[^\n]*\bsessions?\b|\bSessionFamily\.\w|\bcases\.session\b')
#: What the list leaves out: the project's own tests, benchmarks, system tests, examples and docs.
NOT_CODE = ("tests/", "benchmarks/", "system_tests/", "examples/", "docs/")
LISTED_PATH = re.compile(r"`([\w./-]+/[\w.-]+\.(?:py|java))`")


def _section() -> str:
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start:] if end < 0 else text[start:end]


def _listed() -> set[str]:
    """The code files the section names (it names this test too, which is not on the list)."""
    return {path for path in LISTED_PATH.findall(_section()) if not path.startswith(NOT_CODE)}


def _naming_files() -> set[str]:
    listing = subprocess.run(["git", "-C", str(ROOT), "ls-files", "*.py", "*.java"], capture_output=True, text=True)
    if listing.returncode == 0:
        tracked = listing.stdout.split()
    else:  # an unpacked source tree, no git: every file of the two languages, build output left out
        tracked = [str(path.relative_to(ROOT)) for path in sorted(ROOT.rglob("*")) if path.suffix in (".py", ".java")
                   and not any(part.startswith(".") or part in ("target", "build", "__pycache__")
                               for part in path.relative_to(ROOT).parts)]
    return {path for path in tracked if not path.startswith(NOT_CODE)
            and FAMILY_NAMES.search((ROOT / path).read_text(encoding="utf-8", errors="replace"))}


def test_the_list_names_every_file_that_names_the_family() -> None:
    listed = _listed()
    found = _naming_files()
    assert not found - listed, f"files naming the session family that ARCHITECTURE.md does not list: {sorted(found - listed)}"
    assert not listed - found, f"files ARCHITECTURE.md lists that do not name the session family: {sorted(listed - found)}"


def test_the_count_is_the_lists() -> None:
    section = _section()
    stated = re.search(r"(\d+) files today", section)
    assert stated is not None, "the section states its count"
    assert int(stated.group(1)) == len(_listed())


def test_the_grep_finds_the_family_in_both_languages() -> None:
    """The patterns match what they stand for: a Python and a Java spelling of the family each count."""
    assert FAMILY_NAMES.search("if info.family is Family.SESSION:")
    assert FAMILY_NAMES.search("case StoreTypes.FAMILY_SESSION:")
    assert FAMILY_NAMES.search("from kstate.stores.session import RocksDBSessionStore")
    assert FAMILY_NAMES.search("from kstate_conformance.models import session as m")
    assert FAMILY_NAMES.search("        SessionFamily.headersBuilder();")
    assert FAMILY_NAMES.search("from kstate.spark import session_semantics")
    assert not FAMILY_NAMES.search('@pytest.fixture(scope="session")')
    assert not FAMILY_NAMES.search('RUN_SOURCE = "session"')
    assert not FAMILY_NAMES.search("def find_sessions(self, key: bytes) -> None:")
