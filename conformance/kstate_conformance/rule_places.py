"""The rule x place matrix (issue 32 E, spec/README.md "Places"): for each ``required`` and ``hardened`` rule that names a store
behaviour, the places it applies at and whether a case checks it there.

A place is the pure operation, a store of one family (``store:kv``, ``store:versioned``, ``store:window``,
``store:session``), or a moment of a store's life: after a crash, after a restore, after a reopen. A rule checked
only where it is easy to reach (the pure operation, one family, a fresh store) lets bugs through at the other places.

Where a rule applies is derived from data declared once, in this module (not in the spec's metadata line: most of it
follows from a rule's family, so one line a prefix says what a per-rule field would repeat hundreds of times, and
the exceptions carry a reason that belongs beside the suite's reach, not in the rule):

- ``pure``: an operation that is not a store operation declares the rule (``@op(rules=...)``: ``kstate ops``);
- ``store:<family>``: the families of the rule's prefix (:data:`PREFIX_FAMILIES`); for a prefix shared by several
  families, those the rule's text names, or all of them when it names none;
- ``crash``, ``restore``, ``reopen``: the rule's text speaks of that moment (:data:`PLACE_TERMS`);
- :data:`NOT_APPLICABLE`: a place removed from one rule, with the reason it cannot apply.

Where a rule is covered is read statically from the tests that cite it (``@rules``) and the fixture cases: the
store families a test opens (store types, family operations, the module's family), whether it crashes, restores or
opens a store twice, and an explicit ``@pytest.mark.kstate_places(...)`` where the reading cannot see it. A test
parametrized over computed values is imported, so that a parameter with rule marks of its own
(``pytest.param(..., marks=rules(...))``) counts for those rules alone, at the store families its values name, as
the run's attribution counts it (``plugin.item_rules``, issue 31).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from kstate_conformance import store_types
from kstate_conformance.data import fixtures_dir
from kstate_conformance.spec_rules import Rule, load_rules
from kstate_conformance.store_types import STORE_OP_PREFIXES
from kstate_conformance.traceability import (
    _NAMES_A_STORE,
    NOT_STORE_OPERATION_PREFIXES,
    TESTS_DIR,
    _marker_rules,
    _rule_order,
    project_test_dirs,
    rule_prefix,
)

#: The store families (store_types.FAMILIES: their rule prefixes, how rules and code name them, are their entries').
FAMILIES = store_types.FAMILY_NAMES
LIFE_PLACES = ("crash", "restore", "reopen")
PLACES = ("pure", *(f"store:{f}" for f in FAMILIES), *LIFE_PLACES)

#: The store families whose stores apply a prefix's rules (one prefix a line; a family's own prefixes are its
#: entry's); a prefix absent applies at none.
PREFIX_FAMILIES: dict[str, tuple[str, ...]] = {
    **{prefix: (f.name,) for f in store_types.FAMILIES for prefix in f.rule_prefixes},
    "OFF": FAMILIES,
    "RST": FAMILIES,
    "CL": FAMILIES,
    "LAY": FAMILIES,
    "HV": store_types.HEADERS_FAMILIES,
    "HDR": FAMILIES,
    "OPS": FAMILIES,
    "PRIM": (),
}

#: The prefixes whose every rule is a store's behaviour; a rule of another prefix is in the matrix when its text
#: names a store (as ``kstate spec check``'s list of rules without a store case).
STORE_PREFIXES = ("KV", "CACHE", "UPG", "VS", "WS", "SS", "OFF", "RST", "LAY")

#: How a rule's text names a family (for the prefixes shared by several).
FAMILY_TERMS = {f.name: re.compile(f.rule_terms, re.I) for f in store_types.FAMILIES}

#: How a rule's text speaks of a moment of a store's life.
PLACE_TERMS = {
    "crash": re.compile(r"crash|unclean|killed|dies\b|abandon|status OPEN", re.I),
    # A word beginning with "restor", not one holding it ("StoreStorageError").
    "restore": re.compile(r"\brestor", re.I),
    # A reopened store, not an open range nor a closed store: the words of a restart only.
    "reopen": re.compile(r"re-?open|restart|at open|on open|next open|opened again|after a close|first open", re.I),
}

#: Places added to one rule that its text does not name: ``{rule: places}`` (issue 32 E: where bugs survived).
ALSO_APPLIES: dict[str, tuple[str, ...]] = {
    "WS-29": ("crash",),  # the position after flush and a crash
    "SS-21": ("crash",),
    "WS-23": ("restore",),  # a header-aware window tombstone, restored
    "LAY-12": ("reopen",),  # the segment directory is read when a store reopens
    "LAY-13": ("crash",),  # the segment lists after a commit and a crash
    "UPG-3": tuple(f"store:{f}" for f in FAMILIES),  # every family is wiped and rebuilt
}

_NO_TIME_ORDERED_WINDOW = ("the neutral store.open opens no time-ordered window store (OPS-2: "
                           "`time_ordered_window_with_headers` names a layout only): the time-first and key-first "
                           "schemas are checked by the pure window key operations")
_NO_TIME_ORDERED_SESSION = ("the neutral store.open opens no time-ordered session store (OPS-2 names none): the "
                            "time-first and key-first schemas are checked by the pure session key operations")

#: Places removed from one rule: ``{rule: {place: why it cannot apply}}``.
NOT_APPLICABLE: dict[str, dict[str, str]] = {
    **{rule: {f"store:{f}": "no store operation creates a changelog topic: its configuration is the store builder's, "
                            "answered by the pure changelog.topic_config for every store type" for f in FAMILIES}
       for rule in ("CL-15", "CL-16", "CL-17", "SS-29")},
    "CL-12": {f"store:{f}": "the neutral store.open offers no `__iq.consistency.offset.vector.enabled__`: no store "
                            "operation writes the `v`/`c` headers, which the pure changelog operations check with the "
                            "flag on and off" for f in FAMILIES},
    "CL-13": {**{f"store:{f}": "the neutral store.open offers no `__iq.consistency.offset.vector.enabled__`: no store "
                               "operation restores the `c` header, the pure restore operations check it"
                 for f in FAMILIES},
              "restore": "a store's restore runs with consistency off (the neutral store.open offers no flag), where "
                         "the rule checks nothing; the pure restore operations check it with the flag on"},
    "LAY-2": {f"store:{f}": "LAY-2 lays out the key-value and versioned stores; a window or session store's "
              "directory is LAY-3's (the rule names segments only to say a versioned store's are key prefixes)"
              for f in store_types.SEGMENTED_FAMILIES},
    "UPG-7": {"restore": "the refusal is at open; a restore writes into a store already open (the way out, a wipe "
                         "and a restore, is UPG-3's)"},
    "SS-35": {"restore": "the refusal is at open; the restore the rule names is the way out, into a new store after "
                         "a wipe (SS-26)"},
    "VER-24": {"reopen": "the rule asks nothing of a reopen: Kafka only documents a segment interval changed between "
                         "restarts as unsafe, and the options are validated at every open alike"},
    "OFF-18": {"store:versioned": "Kafka 4.4.0's versioned store reads no `<store>.position` file (measured: a file's "
                                  "entries never reach its position; OFF-22 names the key-value and segmented stores' "
                                  "init only), and the reference's reads none either: the format has no versioned "
                                  "store to apply at"},
    "LAY-14": {"restore": "the store type on disk is checked at open; a restore writes into a store already open"},
    "OFF-6": {"restore": "the status is read at open and written at open and close; a restore writes neither"},
    "LAY-12": {"store:kv": "a key-value store has no segment directory", "store:versioned": "a versioned store's "
               "segments are logical, in one database (VER-1): it reads no segment directory",
               "restore": "the segment directory is read at open only"},
    "LAY-13": {"store:kv": "a key-value store has no segment directory", "store:versioned": "a versioned store's "
               "segments are logical, in one database (VER-1): no segment can be lost on its own",
               "restore": "the segment lists are checked at open only"},
    # A versioned store has no upgrade in place: a versioned directory opened as the header-aware type is refused.
    **{rule: {"store:versioned": "a versioned store has no upgrade mode: it has no legacy data family, and a "
                                 "versioned directory opened as the header-aware type is refused (LAY-14)"}
       for rule in ("RST-5",)},
    "RST-7": {"store:versioned": "a versioned store has no upgrade mode: it has no legacy data family, and a "
                                 "versioned directory opened as the header-aware type is refused (LAY-14)",
              "store:session": "a session aggregate has no timestamp, and a plain session store's changelog "
                               "carries no headers (CL-7, CL-2): rebuilt from it or upgraded in place, a "
                               "`session_with_headers` row is `00` + the aggregate alike (LAY-7, CL-11), so there "
                               "is no difference for the rule to keep"},
    # Rules whose text names a restore or a crash only as what follows elsewhere, not as a place they apply at.
    "KV-55": {"restore": "the migration is at open; the restore the rule names is the task's, from the changelog's "
                         "start, when a store that has no segment yet keeps no offset"},
    "KV-57": {"crash": "the offsets family is read at open whatever ended the last instance; the unclean shutdown "
                       "the rule names is KV-52's, whose message an OPEN status keeps"},
    "KV-64": {"crash": "the rule leaves the crash to KV-52, as its text says: a store that crashed in the middle of "
                       "a flush has status OPEN"},
    "KV-65": {"restore": "the refusal is at open; the restore the rule names is what follows in Kafka, which "
                         "accepts the store and restores from the offset, losing the data before it"},
    "OFF-24": {"restore": "the neutral store.restore is given its records: no store operation decides where a "
                          "restore starts (Kafka's task does, in ProcessorStateManager), so the store's part is to "
                          "answer the offset as stored, checked at each family"},
    "OFF-25": {"restore": "the refusal is at open and in commit, as the rule says, not when a restore first seeks"},
    "VER-28": {"crash": "a crash between the two writes of one put cannot be arranged through the neutral "
                        "operations: store.crash comes between operations, and a put's rows are staged into one "
                        "commit batch (VS-17)"},
    # A logged write the changelog would refuse: the restore these rules name is the one that would lose it, not a
    # place where they apply (a restore logs nothing, RST-4).
    **{rule: {"restore": "the rule is about a logged write whose changelog record would be refused; a restore logs "
                         "nothing (RST-4), and the restore it names is the one that would lose such a write"}
       for rule in ("WS-24", "SS-39", "VS-40")},
    # The time-ordered window and session stores: the neutral store.open opens none (OPS-2 names
    # `time_ordered_window_with_headers` as a layout only), so their schemas are reached by the pure key operations.
    **{rule: {"store:window": _NO_TIME_ORDERED_WINDOW} for rule in ("WIN-2", "WIN-3")},
    "WIN-12": {"store:window": _NO_TIME_ORDERED_WINDOW,
               "restore": "only a time-ordered window store converts a plain changelog key on restore; the neutral "
                          "store.open opens none, and a plain window store restores the key unchanged (CL-9)"},
    "WIN-5": {"store:window": "the pipe serde `[key][start]` is the format of windowed serdes on repartition and "
                              "suppression topics: no window store writes or reads it (its key is WIN-1's)"},
    **{rule: {"store:session": _NO_TIME_ORDERED_SESSION} for rule in ("SESS-2", "SESS-3")},
    "SESS-9": {"store:session": _NO_TIME_ORDERED_SESSION,
               "restore": "only a time-ordered session store converts a plain changelog key on restore; the neutral "
                          "store.open opens none, and a plain session store restores the key unchanged (CL-9)"},
}

_MARKER = "kstate_places"
_OPEN_CALL = re.compile(r"open", re.I)
#: A family's operations by their prefix; the key-value family's ``store.`` prefix is shared (:data:`_KV_OPS`).
_OP_FAMILY = {f.op_prefix: f.name for f in store_types.FAMILIES if f.op_prefix != "store."}
_KV_OPS = ("store.put", "store.get", "store.delete", "store.range", "store.all", "store.prefix_scan",
           "store.put_all", "store.put_if_absent", "store.reverse")
#: A string that names a family: a store type, a legacy alias, or the family's name.
_TYPE_FAMILY = {**store_types.FAMILY_OF,
                **{alias: store_types.FAMILY_OF[t] for alias, t in store_types.ALIASES.items()},
                **{name: name for name in FAMILIES}}
_NAME_FAMILY = tuple((re.compile(f.code_names), f.name) for f in store_types.FAMILIES)
_MODULE_FAMILY = tuple((f.module_part, f.name) for f in store_types.FAMILIES)


@dataclass
class PlaceMatrix:
    """For each rule of the matrix: the places it applies at, those covered (by which cases), those excused."""

    applies: dict[str, set[str]] = field(default_factory=dict)
    covered: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    excused: dict[str, dict[str, str]] = field(default_factory=dict)

    def gaps(self, rule: str) -> list[str]:
        return [p for p in PLACES if p in self.applies.get(rule, set()) and not self.covered.get(rule, {}).get(p)]

    @property
    def rules_with_gaps(self) -> list[str]:
        return [r for r in sorted(self.applies, key=_rule_order) if self.gaps(r)]

    def cell(self, rule: str, place: str) -> str:
        if place in self.excused.get(rule, {}):
            return "n/a*"
        if place not in self.applies.get(rule, set()):
            return ""
        return "ok" if self.covered.get(rule, {}).get(place) else "GAP"


def applicable_places(rule: Rule, pure_rules: set[str]) -> tuple[set[str], dict[str, str]]:
    """The places ``rule`` applies at, and the places :data:`NOT_APPLICABLE` removes, with their reasons."""
    places: set[str] = {"pure"} if rule.id in pure_rules else set()
    families = PREFIX_FAMILIES.get(rule_prefix(rule.id), ())
    if len(families) > 1:
        named = tuple(f for f in families if FAMILY_TERMS[f].search(rule.text + " " + rule.title))
        families = named or families
    places.update(f"store:{f}" for f in families)
    places.update(p for p, terms in PLACE_TERMS.items() if terms.search(rule.title + " " + rule.text))
    places.update(ALSO_APPLIES.get(rule.id, ()))
    excused = dict(NOT_APPLICABLE.get(rule.id, {}))
    return places - set(excused), excused


# --- which places a test reaches -----------------------------------------------------------------------------------


def _strings(nodes: Iterable[ast.AST]) -> list[str]:
    return [n.value for node in nodes for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _names(nodes: Iterable[ast.AST]) -> list[str]:
    found = []
    for node in nodes:
        for n in ast.walk(node):
            if isinstance(n, ast.Name):
                found.append(n.id)
            elif isinstance(n, ast.Attribute):
                found.append(n.attr)
    return found


def _called(node: ast.AST) -> list[str]:
    calls = []
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            func = n.func
            calls.append(func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else "")
    return calls


def _explicit_places(decorators: list[ast.expr]) -> set[str]:
    places: set[str] = set()
    for decorator in decorators:
        if isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute) \
                and decorator.func.attr == _MARKER:
            places.update(a.value for a in decorator.args if isinstance(a, ast.Constant) and isinstance(a.value, str))
    return places


def _reaches_store(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A test opens stores (the ``kit`` or ``opened`` fixture) or names a store operation."""
    return any(a.arg in ("kit", "opened") for a in node.args.args) \
        or any(s.startswith(STORE_OP_PREFIXES) for s in _strings([node, *node.decorator_list]))


def places_of_test(node: ast.FunctionDef | ast.AsyncFunctionDef, module: str, opening_helpers: set[str]) -> set[str]:
    """The places one test reaches, read from its body, decorators and module (see the module docstring)."""
    every = [node, *node.decorator_list]
    strings = _strings(every)
    calls = _called(node)
    places = set(_explicit_places(node.decorator_list))
    reaches_store = _reaches_store(node)
    if not reaches_store and (any(a.arg == "implementation" for a in node.args.args) or any(
            not s.startswith(STORE_OP_PREFIXES) and re.fullmatch(r"[a-z_0-9]+\.[a-z_0-9]+", s) for s in strings)):
        places.add("pure")  # an operation called on the implementation, directly or through a module helper
    if not reaches_store:
        return places
    families = {_TYPE_FAMILY[s] for s in strings if s in _TYPE_FAMILY}
    families |= {f for s in strings for prefix, f in _OP_FAMILY.items() if s.startswith(prefix)}
    families |= {"kv" for s in strings if s.startswith(_KV_OPS)}
    families |= {f for name in _names(every) for pattern, f in _NAME_FAMILY if pattern.search(name)}
    if not families:
        families |= {f for part, f in _MODULE_FAMILY if part in module}
    places.update(f"store:{f}" for f in families)
    if "crash" in calls or "store.crash" in strings:
        places.add("crash")
    if "restore" in calls or "store.restore" in strings:
        places.add("restore")
    opens = sum(1 for c in calls if (_OPEN_CALL.search(c) and c != "open_payload") or c in opening_helpers)
    if opens >= 2 or (opens >= 1 and any(c in opening_helpers for c in calls)):
        places.add("reopen")
    return places


def _opening_helpers(tree: ast.Module) -> set[str]:
    """Module functions (not tests) that open a store and close it: a test calling one then opening reopens."""
    helpers = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("test_"):
            calls = _called(node)
            # A close or crash called directly, or sent as an operation (``store.call("store.close")``).
            ends = "close" in calls or "crash" in calls or any(s in ("store.close", "store.crash")
                                                                for s in _strings([node]))
            if any(_OPEN_CALL.search(c) for c in calls) and ends:
                helpers.add(node.name)
    return helpers


def _computed_parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a test is parametrized over values computed at import (a name, a comprehension, a call), which may
    carry rule marks of their own that the source does not show."""
    for decorator in node.decorator_list:
        if isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute) \
                and decorator.func.attr == "parametrize" and len(decorator.args) >= 2:
            try:
                ast.literal_eval(decorator.args[1])
            except ValueError:
                return True
    return False


def _module_of(path: Path, tests_dir: Path) -> ModuleType | None:
    """The test module at ``path``, imported (the suite's own by its package name, so that its modules are the ones
    the run imports); None when it does not import."""
    try:
        if tests_dir.resolve() == TESTS_DIR:
            return importlib.import_module(f"kstate_conformance.tests.{path.stem}")
        spec = importlib.util.spec_from_file_location(f"_kstate_places_{abs(hash(path))}_{path.stem}", path)
        if spec is None or spec.loader is None:
            return None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    except Exception:  # a module that does not import is read from its source alone
        return None


def _families_of(values: Iterable[object]) -> set[str]:
    """The store families a parameter's values name: a family (``versioned``), a store type, or an object's
    ``store_type``."""
    found = set()
    for value in values:
        name = getattr(value, "store_type", value)
        if isinstance(name, str):
            family = name if name in FAMILIES else _TYPE_FAMILY.get(name)
            if family is not None:
                found.add(family)
    return found


def parameter_families(function: object) -> set[str]:
    """The store families the values of a test's parameters name (every ``parametrize`` mark, every value)."""
    found: set[str] = set()
    for mark in getattr(function, "pytestmark", []):
        if getattr(mark, "name", None) != "parametrize" or len(mark.args) < 2:
            continue
        for value in mark.args[1]:
            values = value.values if hasattr(value, "marks") and hasattr(value, "values") else value
            found |= _families_of(values if isinstance(values, tuple) else (values,))
    return found


def parameter_rules(function: object) -> list[tuple[list[str] | None, set[str]]] | None:
    """For a test whose parameters carry rule marks of their own (``pytest.param(..., marks=rules(...))``), each
    parameter's rules (None: the test's ``@rules``) and the families its values name; None when no parameter does,
    so that the test's ``@rules`` marker counts for every case (``plugin.item_rules`` reads them alike)."""
    found: list[tuple[list[str] | None, set[str]]] = []
    for mark in getattr(function, "pytestmark", []):
        if getattr(mark, "name", None) != "parametrize" or len(mark.args) < 2:
            continue
        for value in mark.args[1]:
            if not (hasattr(value, "marks") and hasattr(value, "values")):  # a bare value, not pytest.param(...)
                found.append((None, _families_of(value if isinstance(value, tuple) else (value,))))
                continue
            marks = [getattr(m, "mark", m) for m in value.marks]
            own = next((m for m in marks if getattr(m, "name", None) == "rules"), None)
            found.append(([str(r) for r in own.args] if own is not None else None, _families_of(value.values)))
        if any(rules is not None for rules, _ in found):
            return found
        found = []
    return None


def marker_places(tests_dir: Path = TESTS_DIR) -> dict[str, dict[str, set[str]]]:
    """``{rule: {place: {test ids}}}`` from the ``@rules`` markers of the tests in ``tests_dir``; where a test's
    parameters carry rule marks of their own, each parameter's rules at the families it names (issue 31)."""
    covered: dict[str, dict[str, set[str]]] = {}
    for path in sorted(tests_dir.glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        helpers = _opening_helpers(tree)
        module: ModuleType | None = None
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or not node.name.startswith("test_"):
                continue
            cited = [r for d in node.decorator_list for r in (_marker_rules(d) or [])]
            if not cited:
                continue
            places = places_of_test(node, path.stem, helpers)
            test_id = f"{path.stem}::{node.name}"
            per_parameter = None
            if _computed_parameters(node):
                module = module or _module_of(path, tests_dir)
                per_parameter = parameter_rules(getattr(module, node.name, None))
                if per_parameter is None and _reaches_store(node):
                    # Values computed from the table of families (store_types.FAMILIES) name the families read.
                    places |= {f"store:{f}" for f in parameter_families(getattr(module, node.name, None))}
            cases = [(cited, places)] if per_parameter is None else [
                (rules or cited, _narrowed(places, families)) for rules, families in per_parameter]
            for case_rules, case_places in cases:
                for rule in case_rules:
                    for place in case_places:
                        covered.setdefault(rule, {}).setdefault(place, set()).add(test_id)
    return covered


def _narrowed(places: set[str], families: set[str]) -> set[str]:
    """A test's places for one parameter: the store families its values name in place of the test's, if any."""
    if not families:
        return places
    return {p for p in places if not p.startswith("store:")} | {f"store:{f}" for f in families}


def fixture_places(root: Path | None = None) -> dict[str, dict[str, set[str]]]:
    """``{rule: {place: {case ids}}}`` of the fixture cases: a pure operation's case, or a store operation's with
    the family of its store type and the life-cycle steps its input names."""
    covered: dict[str, dict[str, set[str]]] = {}
    for path in sorted((root or fixtures_dir()).glob("*/*.json")):
        for case in json.loads(path.read_text(encoding="utf-8"))["cases"]:
            if "deviation" in case:
                continue
            op = str(case["op"])
            places: set[str] = set()
            if not op.startswith(STORE_OP_PREFIXES):
                places.add("pure")
            else:
                text = json.dumps(case.get("input", {}))
                family = next((f for p, f in _OP_FAMILY.items() if op.startswith(p)), None)
                types = set(re.findall(r'"store_type": "([a-z_]+)"', text))
                places.update(f"store:{_TYPE_FAMILY[t]}" for t in types if t in _TYPE_FAMILY)
                if not types:
                    places.add(f"store:{family or 'kv'}")
                for place in LIFE_PLACES:
                    if f'"{place}"' in text or f'"store.{place}"' in text:
                        places.add(place)
                opens = text.count('"open"') + text.count('"store.open"')
                # A scenario's first open is the harness's, not a step: one store.open step reopens (OPS-5).
                if opens >= 2 or (op == "store.scenario" and opens >= 1):
                    places.add("reopen")
            for rule in case["rules"]:
                for place in places:
                    covered.setdefault(rule, {}).setdefault(place, set()).add(str(case["id"]))
    return covered


def pure_operation_rules() -> set[str]:
    """The rules an operation that is not a store operation declares (``@op(rules=...)``)."""
    from kstate.ops import load_all

    return {r for name, spec in load_all().items() if not name.startswith(STORE_OP_PREFIXES) for r in spec.rules}


def build_matrix(rules: Mapping[str, Rule] | None = None, fixtures_root: Path | None = None) -> PlaceMatrix:
    """The matrix over the ``required`` and ``hardened`` rules of :data:`STORE_PREFIXES` (a hardened rule is the
    reference's own guarantee, issue 31), and those of other prefixes whose text names a store behaviour (as
    ``without_store_case``)."""
    rules = load_rules() if rules is None else rules
    covered = fixture_places(fixtures_root)
    for directory in (TESTS_DIR, *project_test_dirs()):
        for cited, places in marker_places(directory).items():
            for place, ids in places.items():
                covered.setdefault(cited, {}).setdefault(place, set()).update(ids)
    pure = pure_operation_rules()
    matrix = PlaceMatrix()
    for rule in rules.values():
        prefix = rule_prefix(rule.id)
        if rule.level not in ("required", "hardened") or prefix in NOT_STORE_OPERATION_PREFIXES \
                or not (prefix in STORE_PREFIXES or _NAMES_A_STORE.search(rule.text)):
            continue
        applies, excused = applicable_places(rule, pure)
        matrix.applies[rule.id] = applies
        matrix.excused[rule.id] = excused
        matrix.covered[rule.id] = {p: ids for p, ids in covered.get(rule.id, {}).items() if p in applies}
    return matrix


def matrix_markdown(matrix: PlaceMatrix) -> str:
    """The whole matrix as a Markdown table (``ok`` covered, ``GAP`` not, ``n/a*`` excused: reasons below)."""
    lines = ["# Rule x place matrix", "",
             f"{len(matrix.applies)} required and hardened store rules; "
             f"{len(matrix.rules_with_gaps)} with a place no case reaches. `ok`: a case checks the rule there; "
             "`GAP`: the rule applies there and no case checks it; `n/a*`: the place cannot apply (reason below); "
             "empty: the rule does not apply there (rule_places.py says how that is derived).", "",
             "| rule | " + " | ".join(PLACES) + " |", "|---|" + "---|" * len(PLACES)]
    for rule in sorted(matrix.applies, key=_rule_order):
        lines.append(f"| {rule} | " + " | ".join(matrix.cell(rule, p) for p in PLACES) + " |")
    lines += ["", "## Places that cannot apply", ""]
    for rule in sorted(matrix.excused, key=_rule_order):
        for place, reason in matrix.excused[rule].items():
            lines.append(f"- {rule} at {place}: {reason}")
    return "\n".join(lines) + "\n"
