"""Every spec rule is checked by a test, and every test names rules that exist (spec/README.md).

Rule citations are read statically: ``@rules("ID", ...)`` markers in the shipped test modules, and
the ``rules`` of every golden fixture case.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path

from kstate_conformance.data import fixtures_dir
from kstate_conformance.spec_rules import load_rules

TESTS_DIR = Path(__file__).resolve().parent / "tests"


@dataclass
class Traceability:
    rules: set[str]
    cited_by: dict[str, set[str]] = field(default_factory=dict)
    unknown: dict[str, set[str]] = field(default_factory=dict)
    untagged_tests: list[str] = field(default_factory=list)

    @property
    def uncovered(self) -> list[str]:
        return sorted(r for r in self.rules if not self.cited_by.get(r))

    @property
    def ok(self) -> bool:
        return not self.uncovered and not self.unknown and not self.untagged_tests


def _marker_rules(decorator: ast.expr) -> list[str] | None:
    if not isinstance(decorator, ast.Call):
        return None
    func = decorator.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name != "rules":
        return None
    return [a.value for a in decorator.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]


def marker_citations(tests_dir: Path = TESTS_DIR) -> tuple[dict[str, set[str]], list[str]]:
    """``{rule: {test ids}}`` from ``@rules`` markers, and the test functions that cite none."""
    cited: dict[str, set[str]] = {}
    untagged: list[str] = []
    for path in sorted(tests_dir.glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or not node.name.startswith("test_"):
                continue
            found = [r for d in node.decorator_list for r in (_marker_rules(d) or [])]
            test_id = f"{path.stem}::{node.name}"
            if path.stem == "test_golden":
                continue  # golden cases carry their rules in the fixtures
            if not found:
                untagged.append(test_id)
            for rule in found:
                cited.setdefault(rule, set()).add(test_id)
    return cited, untagged


def fixture_citations(root: Path | None = None) -> dict[str, set[str]]:
    cited: dict[str, set[str]] = {}
    for path in sorted((root or fixtures_dir()).glob("*/*.json")):
        for case in json.loads(path.read_text(encoding="utf-8"))["cases"]:
            for rule in case["rules"]:
                cited.setdefault(rule, set()).add(case["id"])
    return cited


def analyse() -> Traceability:
    rules = set(load_rules())
    cited, untagged = marker_citations()
    for rule, cases in fixture_citations().items():
        cited.setdefault(rule, set()).update(cases)
    unknown = {r: ids for r, ids in cited.items() if r not in rules}
    return Traceability(rules=rules, cited_by={r: ids for r, ids in cited.items() if r in rules},
                        unknown=unknown, untagged_tests=untagged)
