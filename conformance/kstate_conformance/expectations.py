"""Expected-failure files, strict as protobuf's failure lists: stable test ids, comments, wildcards.

A text file holds one test id per line; ``#`` starts a comment (a whole line, or after an id: the
reason). A ``.json`` file holds a list of ids, or of ``{"id": ..., "reason": ...}`` objects. ``*`` in an
id matches any run of characters (the only wildcard: brackets in test ids are literal). Ids are the
stable ids of :func:`stable_test_id`, e.g. ``test_golden.py::test_golden[reference.primitives.int64_0]``.

A reason starts with its class, ``[KAFKA]``, ``[SPEC]``, ...(:data:`ENTRY_CLASSES`), then names the rules the
entry excuses (``KV-57/OFF-6: ...``): a rule is ``xfail`` only where an entry that matched names it (issue 31).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SUITE_PACKAGE_DIR = "kstate_conformance/tests/"

#: The classes an entry's reason starts with (``[KAFKA] ...``); one a line, so that a new class is one line.
ENTRY_CLASSES = (
    "KAFKA",
    "KAFKA-BUG",
    "SPEC",
    "TESTEE",
    "UNCLASSIFIED",
)
#: The class of an entry that is a bug of Apache Kafka (counted apart in the headline figure).
KAFKA_BUG = "KAFKA-BUG"
#: A well-formed class: upper-case words joined by hyphens, in brackets, first in the reason.
_CLASS_TAG = re.compile(r"^\s*\[([A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*)\]")
#: A rule ID as the spec writes it (spec_rules.RULE_ID).
_RULE_ID = re.compile(r"\b([A-Z]{2,5}-\d+)\b")


def entry_class(reason: str) -> str:
    """The ``[CLASS]`` a reason starts with (well-formed, known to :data:`ENTRY_CLASSES` or not), else ""."""
    match = _CLASS_TAG.match(reason)
    return match.group(1) if match else ""


def named_rules(reason: str) -> list[str]:
    """The rule IDs a reason names, in order, each once."""
    return list(dict.fromkeys(_RULE_ID.findall(reason)))


def item_test_id(item: Any) -> str:
    """A collected test's stable id, taken from its file rather than its node id: pytest makes the node id relative
    to a rootdir it may take from an option's value (``--kstate-expected-failures /tmp/x.txt`` with a single module
    selected gives ``::test_y``), the file's path is the same however the suite was selected."""
    path = Path(str(getattr(item, "path", ""))).as_posix()
    index = path.find(SUITE_PACKAGE_DIR)
    if index < 0 or "::" not in item.nodeid:
        return stable_test_id(item.nodeid)
    return f"{path[index + len(SUITE_PACKAGE_DIR):]}::{item.nodeid.split('::', 1)[1]}"


def stable_test_id(nodeid: str) -> str:
    """A test's id independent of where the suite is installed or run from: ``test_x.py::test_y[params]``."""
    normalized = nodeid.replace("\\", "/")
    index = normalized.find(SUITE_PACKAGE_DIR)
    return normalized[index + len(SUITE_PACKAGE_DIR):] if index >= 0 else normalized


_WITHHOLD = re.compile(r"withhold:\s*(?P<rules>[A-Z]+-\d+(?:\s*,\s*[A-Z]+-\d+)*)")


@dataclass
class Entry:
    pattern: str
    reason: str = ""

    @property
    def tag(self) -> str:
        """The entry's class (``KAFKA``, ``KAFKA-BUG``, ...), "" if its reason names none."""
        return entry_class(self.reason)

    @property
    def rules(self) -> list[str]:
        """The rules the entry's reason names: the only rules its matching tests are ``xfail`` for."""
        return named_rules(self.reason)

    @property
    def may_pass(self) -> bool:
        """An entry of a drawn test (a state machine) whose reason says ``may pass: <why>``: the bug is reached by
        some drawn sequences and not by others, so a pass is reported, not an unexpected pass."""
        return "may pass:" in self.reason

    @property
    def withheld(self) -> list[str]:
        """The rules a drawn test (a state machine) runs with the steps reaching them withheld, as the entry's
        ``withhold: R-1, R-2`` says: the test must then pass, and counts as ``not verified`` for those rules only
        (the bug is shown by the cases that reach it; docs/verdicts.md)."""
        found = _WITHHOLD.search(self.reason)
        return re.findall(r"[A-Z]+-\d+", found.group("rules")) if found else []

    @property
    def regex(self) -> re.Pattern[str]:
        return re.compile("^" + ".*".join(re.escape(part) for part in self.pattern.split("*")) + "$")


@dataclass
class ExpectedFailures:
    """The entries of one expected-failure file, and what this run made of them."""

    path: Path
    entries: list[Entry]
    header: list[str] = field(default_factory=list)
    fmt: str = "text"

    @classmethod
    def load(cls, path: Path) -> ExpectedFailures:
        """Read ``path``; a missing file is an empty list (so ``--fix`` can create it)."""
        if not path.exists():
            return cls(path, [], fmt="json" if path.suffix == ".json" else "text")
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json" or text.lstrip().startswith(("[", "{")):
            return cls(path, _parse_json(text, path), fmt="json")
        entries: list[Entry] = []
        header: list[str] = []
        for line in text.splitlines():
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                if not entries:
                    header.append(line)
                continue
            pattern, _, reason = stripped.partition(" #")
            entries.append(Entry(pattern.strip(), reason.strip()))
        return cls(path, entries, header)

    def match(self, test_id: str) -> Entry | None:
        for entry in self.entries:
            if entry.pattern == test_id or ("*" in entry.pattern and entry.regex.match(test_id)):
                return entry
        return None

    def applied(self, test_ids: set[str]) -> list[Entry]:
        """The entries a run of ``test_ids`` applies: each test's entry as :meth:`match` picks it (the first that
        matches), once each, in file order. At ``--level required`` these are the Kafka bugs alone (issue 31)."""
        chosen = {id(entry) for entry in (self.match(t) for t in test_ids) if entry is not None}
        return [e for e in self.entries if id(e) in chosen]

    def unknown_classes(self) -> list[Entry]:
        """Entries whose class is well-formed but not one of :data:`ENTRY_CLASSES` (accepted, reported)."""
        return [e for e in self.entries if e.tag and e.tag not in ENTRY_CLASSES]

    def unmatched(self, test_ids: set[str]) -> list[Entry]:
        """Entries that name no test of this run (stale, or outside a narrowed run)."""
        return [e for e in self.entries if not any(
            e.pattern == t or ("*" in e.pattern and e.regex.match(t)) for t in test_ids)]

    def fixed(self, failed: set[str], ran: set[str], reasons: dict[str, str] | None = None) -> ExpectedFailures:
        """The list this run says it should be: its failures, plus entries for tests it did not run.

        Entries matching tests that ran and did not fail are dropped; a wildcard is kept while any test it
        matches still fails, else dropped; every failure no entry covers is added, its reason taken from
        ``reasons`` (the failure's first line) for the porter to edit.
        """
        kept: list[Entry] = []
        for entry in self.entries:
            matched_ran = {t for t in ran if entry.pattern == t or ("*" in entry.pattern and entry.regex.match(t))}
            # A withholding entry is kept while its tests run: they pass because of it.
            if not matched_ran or matched_ran & failed or entry.withheld:
                kept.append(entry)
        covered = {t for t in failed if any(e.pattern == t or ("*" in e.pattern and e.regex.match(t)) for e in kept)}
        added = [Entry(t, (reasons or {}).get(t, "") or "failed when added by --fix")
                 for t in sorted(failed - covered)]
        return ExpectedFailures(self.path, sorted(kept + added, key=lambda e: e.pattern), self.header, self.fmt)

    def write(self) -> None:
        if self.fmt == "json":
            body = [{"id": e.pattern, "reason": e.reason} for e in self.entries]
            self.path.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
            return
        header = self.header or ["# Expected failures (kstate conformance --expected-failures); rewritten by --fix.",
                                 "# Columns: the stable test id ('*' matches anything), then '# ' and the reason."]
        width = max((len(e.pattern) for e in self.entries), default=0)
        lines = [*header, *(f"{e.pattern.ljust(width)}  # {e.reason}" if e.reason else e.pattern
                            for e in self.entries)]
        self.path.write_text("\n".join(lines) + "\n", encoding="utf-8")


class ExpectationFileError(ValueError):
    """An expected-failure file that cannot be read."""


def _parse_json(text: str, path: Path) -> list[Entry]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ExpectationFileError(f"{path}: not JSON: {exc}") from exc
    if isinstance(data, dict):
        data = data.get("expected_failures")
    if not isinstance(data, list):
        raise ExpectationFileError(f"{path}: expected a list of test ids")
    entries: list[Entry] = []
    for item in data:
        if isinstance(item, str):
            entries.append(Entry(item))
        elif isinstance(item, dict) and isinstance(item.get("id"), str):
            entries.append(Entry(item["id"], str(item.get("reason", ""))))
        else:
            raise ExpectationFileError(f"{path}: not a test id: {item!r}")
    return entries
