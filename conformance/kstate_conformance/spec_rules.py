"""Parse the spec's rules (``### ID: title`` plus a metadata line) into data (spec/README.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kstate_conformance.data import spec_dir

RULE_HEADING = re.compile(r"^### ([A-Z]+-\d+): (.+?)\s*$")
RULE_ID = re.compile(r"\b([A-Z]{2,5}-\d+)\b")
LEVELS = ("required", "recommended", "hardened", "tentative")


class SpecFormatError(ValueError):
    """A rule heading without a well-formed metadata line, or a duplicate ID."""


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    level: str
    source: str
    kafka: str
    document: str
    text: str


def parse_document(path: Path) -> list[Rule]:
    lines = path.read_text(encoding="utf-8").splitlines()
    rules: list[Rule] = []
    in_code = False
    for index, line in enumerate(lines):
        if line.startswith("```"):
            in_code = not in_code
        match = RULE_HEADING.match(line)
        if in_code or not match:
            continue
        meta_line = lines[index + 1] if index + 1 < len(lines) else ""
        meta = dict(
            part.split(":", 1) for part in (p.strip() for p in meta_line.split(" | ")) if ":" in part
        )
        meta = {k.strip(): v.strip() for k, v in meta.items()}
        if meta.get("level") not in LEVELS or not meta.get("source") or not meta.get("kafka"):
            raise SpecFormatError(f"{path.name}:{index + 2}: rule {match.group(1)} needs 'level: ... | source: ... | kafka: ...'")
        body: list[str] = []
        for following in lines[index + 2 :]:
            if following.startswith("#"):
                break
            body.append(following)
        rules.append(
            Rule(match.group(1), match.group(2), meta["level"], meta["source"], meta["kafka"], path.name, "\n".join(body).strip())
        )
    return rules


def load_rules(directory: Path | None = None) -> dict[str, Rule]:
    """Every rule of every spec document, by ID; duplicate IDs are an error."""
    found: dict[str, Rule] = {}
    for path in sorted((directory or spec_dir()).glob("*.md")):
        for rule in parse_document(path):
            if rule.id in found:
                raise SpecFormatError(f"rule {rule.id} defined in {found[rule.id].document} and {rule.document}")
            found[rule.id] = rule
    return found
