"""The conformance harness's own imports: one direction only, and its models independent of the reference.

adapter < testee < mutants < loading < plugin: no module of ``kstate_conformance`` imports one that
imports it back, even inside a function (issue 10). The byte model, strategies, harness and models
compute expectations without the reference's code, so that the suite can catch the reference's bugs.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "conformance" / "kstate_conformance"
#: Modules whose expectations must not come from the implementation under test.
INDEPENDENT = ("kstate_conformance.bytes_model", "kstate_conformance.strategies", "kstate_conformance.harness",
               "kstate_conformance.models", "kstate_conformance.models.kv", "kstate_conformance.models.versioned",
               "kstate_conformance.models.life",
               "kstate_conformance.store_types")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in sorted(PACKAGE_DIR.rglob("*.py"))}


def _imports(module: str) -> set[str]:
    """Every module ``module`` imports, at its top or inside a function (``from p import m`` counts as p.m)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert not node.level, f"{module}: the harness uses absolute imports"
            base = node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in MODULES)
    return found


def _graph() -> dict[str, set[str]]:
    return {module: {name for name in _imports(module) if name in MODULES and name != module} for module in MODULES}


def test_no_module_of_the_harness_imports_one_that_imports_it_back() -> None:
    graph = _graph()
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target):], target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(cycle) for cycle in cycles)


def test_implementation_loading_sits_above_the_adapter_testee_and_mutants() -> None:
    graph = _graph()
    assert "kstate_conformance.loading" in graph["kstate_conformance.plugin"]
    for lower in ("kstate_conformance.adapter", "kstate_conformance.testee", "kstate_conformance.mutants"):
        assert "kstate_conformance.loading" not in graph[lower]
    assert not graph["kstate_conformance.adapter"], "the adapter protocol imports nothing of the harness"


@pytest.mark.parametrize("module", INDEPENDENT)
def test_the_suites_models_do_not_import_the_reference(module: str) -> None:
    reference = sorted(name for name in _imports(module) if name == "kstate" or name.startswith("kstate."))
    assert not reference, f"{module} imports the reference: {reference}"


@pytest.mark.parametrize("module", ["kstate_conformance.adapter", "kstate_conformance.testee",
                                    "kstate_conformance.mutants", "kstate_conformance.loading"])
def test_each_module_imports_alone_in_a_fresh_interpreter(module: str) -> None:
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_the_suites_store_type_spellings_are_the_specs() -> None:
    """OPS-2: the suite's one module of store-type names holds every name of spec/ops.md and its legacy alias, and
    they are the reference's table's names too."""
    import re

    from kstate.codecs.store_types import LEGACY_ALIASES, StoreType
    from kstate_conformance import store_types

    text = (PACKAGE_DIR.parents[1] / "spec" / "ops.md").read_text(encoding="utf-8")
    paragraph = text[text.index("Store types have one name each:"):text.index("The older name")]
    assert set(re.findall(r"`([a-z_]+)`", paragraph)) == set(store_types.ALL_TYPES)
    assert len(set(store_types.ALL_TYPES)) == len(store_types.ALL_TYPES)
    assert tuple(t.value for t in StoreType) == store_types.ALL_TYPES
    assert dict(LEGACY_ALIASES) == store_types.ALIASES
