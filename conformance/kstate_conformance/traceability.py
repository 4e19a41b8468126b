"""Every spec rule is checked by a test, and every test names rules that exist (spec/README.md).

Rule citations are read statically: ``@rules("ID", ...)`` markers in the shipped test modules, and
the ``rules`` of every golden fixture case. A citation proves nothing until a broken implementation fails
it: every ``required`` rule of the families in :data:`MUTANT_COVERED_PREFIXES` must also be broken by a
mutant (``Mutant.rules``), which the mutation analysis proves the suite kills. Every ``required`` rule of
the families in :data:`INDEPENDENT_EVIDENCE_PREFIXES` must also be checked by a case whose expected output
does not come from the reference: recorded from Kafka (``kafka-jvm``) or worked out by hand from the rule
text (``spec``).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kstate_conformance.data import fixtures_dir
from kstate_conformance.mutants import Mutant, all_mutants
from kstate_conformance.spec_rules import Rule, load_rules
from kstate_conformance.store_types import STORE_OP_PREFIXES

TESTS_DIR = Path(__file__).resolve().parent / "tests"
#: The project's own test directories (in a source checkout): their ``@rules`` markers count as citations too, for
#: rules only a running process can check (the instance protocol, INST); their tests need not cite a rule.
PROJECT_TEST_SUBDIRS = ("tests", "tests/unit", "system_tests")
#: Rule prefixes cited only by the project's own tests: without a checkout they cannot be checked, only listed.
PROJECT_TESTED_PREFIXES = ("INST",)


def project_test_dirs() -> tuple[Path, ...]:
    """The checkout's test directories: beside the package (an editable install), else under the working directory
    (tox runs an installed wheel from the checkout); none outside a checkout."""
    for root in (TESTS_DIR.parents[2], Path.cwd()):
        if (root / "system_tests").is_dir() and (root / "pyproject.toml").is_file():
            return tuple(root / d for d in PROJECT_TEST_SUBDIRS)
    return ()

#: The rule prefixes whose every ``required`` rule needs a mutant breaking it; one a line, so merges stay easy.
MUTANT_COVERED_PREFIXES = (
    "KV",
    "UPG",
    "CACHE",
    "RST",
    "OFF",
    "CL",
    "LAY",
    "TSKV",
    "HV",
    "HDR",
    "PRIM",
    "VS",
    "WS",
    "SS",
)

#: Evidence levels whose expected outputs a bug in the reference cannot have produced.
INDEPENDENT_EVIDENCE = ("kafka-jvm", "spec")

#: Rule prefixes whose every ``required`` rule needs a case of independent evidence (one prefix a line).
INDEPENDENT_EVIDENCE_PREFIXES: tuple[str, ...] = (
    "PRIM",
    "HDR",
    "TSKV",
    "HV",
    "VER",
    "WIN",
    "SESS",
    "OFF",
    "CL",
    "LAY",
    "OPS",
    "KV",
    "UPG",
    "CACHE",
    "RST",
    "VS",
    "WS",
    "SS",
)


@dataclass
class Traceability:
    rules: set[str]
    cited_by: dict[str, set[str]] = field(default_factory=dict)
    unknown: dict[str, set[str]] = field(default_factory=dict)
    untagged_tests: list[str] = field(default_factory=list)
    # Required rules of MUTANT_COVERED_PREFIXES that no mutant breaks, and mutants citing rules that do not exist.
    without_mutant: list[str] = field(default_factory=list)
    unknown_mutant_rules: dict[str, list[str]] = field(default_factory=dict)
    #: ``required`` rules of INDEPENDENT_EVIDENCE_PREFIXES with no ``kafka-jvm`` or ``spec`` case.
    without_independent_evidence: list[str] = field(default_factory=list)
    #: Rules of PROJECT_TESTED_PREFIXES, when no checkout's tests are there to cite them (an installed kit).
    not_checkable: list[str] = field(default_factory=list)
    #: ``required`` rules whose text names a store and that no case reaches through the store operations (reported,
    #: never failing: a rule checked only on a pure operation, issue 25).
    without_store_case: list[str] = field(default_factory=list)

    @property
    def uncovered(self) -> list[str]:
        return sorted(r for r in self.rules if not self.cited_by.get(r) and r not in self.not_checkable)

    @property
    def ok(self) -> bool:
        return (not self.uncovered and not self.unknown and not self.untagged_tests
                and not self.without_mutant and not self.unknown_mutant_rules
                and not self.without_independent_evidence)


def rule_prefix(rule_id: str) -> str:
    return rule_id.rsplit("-", 1)[0]


def _rule_order(rule_id: str) -> tuple[str, int]:
    prefix, _, number = rule_id.rpartition("-")
    return prefix, int(number) if number.isdigit() else -1


def mutant_coverage(
    rules: Mapping[str, Rule] | None = None, mutants: Mapping[str, Mutant] | None = None,
) -> tuple[list[str], dict[str, list[str]]]:
    """The required rules of :data:`MUTANT_COVERED_PREFIXES` no mutant breaks, and ``{mutant: unknown rules}``."""
    rules = load_rules() if rules is None else rules
    mutants = all_mutants() if mutants is None else mutants
    broken = {r for m in mutants.values() for r in m.rules}
    without = sorted((r.id for r in rules.values() if r.level == "required"
                      and rule_prefix(r.id) in MUTANT_COVERED_PREFIXES and r.id not in broken), key=_rule_order)
    unknown = {m.name: sorted(set(m.rules) - set(rules)) for m in mutants.values() if set(m.rules) - set(rules)}
    return without, unknown


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


#: Rules of processes and protocols, not of a store's operations: an instance (INST), the testee protocol (TP).
NOT_STORE_OPERATION_PREFIXES = (*PROJECT_TESTED_PREFIXES, "TP")
#: A rule "names a store behaviour" when its text speaks of a store: the word, or one of the store operations.
_NAMES_A_STORE = re.compile(r"\bstores?\b|\b(?:put|get|fetch|commit|restore)\(", re.IGNORECASE)


def _reaches_a_store(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A test opens stores (the ``kit`` fixture) or names a store operation (one of STORE_OP_PREFIXES, OPS-2) in a
    string: it checks a rule where a store applies it."""
    if any(a.arg == "kit" for a in node.args.args):
        return True
    return any(isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith(STORE_OP_PREFIXES)
               for n in ast.walk(node))


def store_marker_citations(tests_dir: Path = TESTS_DIR) -> dict[str, set[str]]:
    """``{rule: {test ids}}`` from the ``@rules`` markers of tests that reach a store through its operations."""
    cited: dict[str, set[str]] = {}
    for path in sorted(tests_dir.glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_") \
                    and _reaches_a_store(node):
                for rule in (r for d in node.decorator_list for r in (_marker_rules(d) or [])):
                    cited.setdefault(rule, set()).add(f"{path.stem}::{node.name}")
    return cited


def store_fixture_citations(root: Path | None = None) -> dict[str, set[str]]:
    """``{rule: {case ids}}`` of the fixture cases whose operation is a store operation (``store.scenario`` too)."""
    cited: dict[str, set[str]] = {}
    for path in sorted((root or fixtures_dir()).glob("*/*.json")):
        for case in json.loads(path.read_text(encoding="utf-8"))["cases"]:
            # A recorded Kafka answer that departs from the spec is no evidence for the rule (OPS-4).
            if str(case["op"]).startswith(STORE_OP_PREFIXES) and "deviation" not in case:
                for rule in case["rules"]:
                    cited.setdefault(rule, set()).add(case["id"])
    return cited


def rules_without_store_case(rules: Mapping[str, Rule], store_cited: Mapping[str, set[str]]) -> list[str]:
    """``required`` rules whose text names a store (:data:`_NAMES_A_STORE`) and that no store-reaching case cites."""
    return sorted((r.id for r in rules.values() if r.level == "required" and _NAMES_A_STORE.search(r.text)
                   and rule_prefix(r.id) not in NOT_STORE_OPERATION_PREFIXES and not store_cited.get(r.id)),
                  key=_rule_order)


def fixture_citations(root: Path | None = None) -> dict[str, set[str]]:
    cited: dict[str, set[str]] = {}
    for path in sorted((root or fixtures_dir()).glob("*/*.json")):
        for case in json.loads(path.read_text(encoding="utf-8"))["cases"]:
            if "deviation" in case:
                continue
            for rule in case["rules"]:
                cited.setdefault(rule, set()).add(case["id"])
    return cited


def rules_without_independent_evidence(levels: dict[str, str], fixture_cited: dict[str, set[str]],
                                       prefixes: tuple[str, ...] = INDEPENDENT_EVIDENCE_PREFIXES) -> list[str]:
    """``required`` rules of ``prefixes`` that no ``kafka-jvm`` or ``spec`` fixture case cites.

    ``levels`` maps rule IDs to levels; a case's evidence is its id's first segment (``verify`` checks
    that the two agree).
    """
    def independent(case_ids: set[str]) -> bool:
        return any(case_id.split(".", 1)[0] in INDEPENDENT_EVIDENCE for case_id in case_ids)

    return sorted(
        (rule for rule, level in levels.items()
         if level == "required" and rule.split("-", 1)[0] in prefixes
         and not independent(fixture_cited.get(rule, set()))),
        key=lambda r: (r.split("-", 1)[0], int(r.split("-", 1)[1])),
    )


def analyse(fixtures_root: Path | None = None) -> Traceability:
    loaded = load_rules()
    rules = set(loaded)
    cited, untagged = marker_citations()
    project_dirs = project_test_dirs()
    for directory in project_dirs:
        for rule, tests in marker_citations(directory)[0].items():
            cited.setdefault(rule, set()).update(tests)
    not_checkable = [] if project_dirs else sorted(r for r in rules if rule_prefix(r) in PROJECT_TESTED_PREFIXES)
    from_fixtures = fixture_citations(fixtures_root)
    for rule, cases in from_fixtures.items():
        cited.setdefault(rule, set()).update(cases)
    unknown = {r: ids for r, ids in cited.items() if r not in rules}
    without_mutant, unknown_mutant_rules = mutant_coverage(loaded)
    weak = rules_without_independent_evidence({r.id: r.level for r in loaded.values()}, from_fixtures)
    store_cited = store_fixture_citations(fixtures_root)
    for directory in (TESTS_DIR, *project_dirs):
        for rule, tests in store_marker_citations(directory).items():
            store_cited.setdefault(rule, set()).update(tests)
    return Traceability(rules=rules, cited_by={r: ids for r, ids in cited.items() if r in rules},
                        unknown=unknown, untagged_tests=untagged, without_mutant=without_mutant,
                        unknown_mutant_rules=unknown_mutant_rules, without_independent_evidence=weak,
                        not_checkable=not_checkable,
                        without_store_case=rules_without_store_case(loaded, store_cited))
