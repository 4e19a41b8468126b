"""Mutation analysis: run the suite against every mutant; a surviving mutant is a hole in the suite."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from kstate_conformance.mutants import Mutant, all_mutants
from kstate_conformance.store_types import FAMILIES


@dataclass(frozen=True)
class MutantResult:
    name: str
    family: str
    description: str
    killed: bool
    seconds: float
    first_failure: str
    # The spec rules the mutant breaks (Mutant.rules): what its death proves the suite checks.
    rules: tuple[str, ...] = field(default=())
    # The suite's id of the test that killed it ('' for a survivor), and how many tests it ran to be decided.
    killing_test: str = ""
    tests_run: int = 0


TESTS_PACKAGE = "kstate_conformance.tests"
TESTS_DIR = Path(__file__).resolve().parent / "tests"

# Which test modules speak to a family first: a mutant killed by a subset of the suite is killed by the
# whole suite (same tests, -x), and most mutants fall to their own family's tests within seconds.
_FAMILY_KEYWORDS = {
    "varint": ("primitives", "ops_protocol"), "primitives": ("primitives", "ops_protocol"),
    "record_v2": ("record_headers",), "headers": ("record_headers",),
    "layout": ("layout",), "offsets": ("offsets", "kv_files"), "changelog": ("changelog", "kv_contract"),
    "kv": ("kv_contract", "kv_files", "kv_store_faults", "kv_state_machine"),
    "store_rules": ("store_rules", "kv_contract", "kv_files"),
    # A store family's mutants (family "<family>_store", its operations' prefix): its contract modules, then the
    # golden cases before its state machine: a mutant the contract tests miss is mostly a rule only a hand-worked
    # case checks, and the machine's full run would come first.
    **{f.op_prefix.removesuffix("."): (f.op_prefix.removesuffix("."), "golden", f"{f.name}_state_machine")
       for f in FAMILIES if f.op_prefix != "store."},
}


def family_modules(family: str) -> list[str]:
    """The shipped test modules most likely to catch a mutant of ``family``, then the golden fixtures."""
    keywords = _FAMILY_KEYWORDS.get(family, (family,))
    names = sorted(p.stem for p in TESTS_DIR.glob("test_*.py"))
    chosen = [n for k in keywords for n in names if k in n]
    return [f"{TESTS_PACKAGE}.{n}" for n in dict.fromkeys([*chosen, "test_golden"])]


#: The shipped kill map: for each mutant, the test that killed it on the last recorded run (``kstate mutants
#: --write-kill-map``). It only orders the tests a mutant runs; a stale or missing entry costs time, never a verdict.
KILL_MAP = Path(__file__).resolve().parent / "mutants" / "kill_map.json"


def read_kill_map(path: Path | str | None = None) -> dict[str, str]:
    """The kill map at ``path`` (default: the shipped one); an absent or unreadable map is an empty one."""
    try:
        document = json.loads(Path(path or KILL_MAP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(document, dict):
        return {}
    return {str(k): str(v) for k, v in document.items() if isinstance(v, str)}


def write_kill_map(results: list[MutantResult], path: Path | str | None = None) -> Path:
    """Record each killed mutant's killing test (entries of mutants not run this time are kept)."""
    target = Path(path or KILL_MAP)
    kill_map = read_kill_map(target)
    for result in results:
        if result.killed and result.killing_test:
            kill_map[result.name] = result.killing_test
        else:
            kill_map.pop(result.name, None)
    target.write_text(json.dumps(dict(sorted(kill_map.items())), indent=1) + "\n", encoding="utf-8")
    return target


def run_all(
    names: list[str] | None = None,
    workers: int = 2,
    on_result: Callable[[MutantResult], None] | None = None,
    *,
    kill_map: Path | str | None = None,
    timeout: float = 600,
    mutant_modules: tuple[str, ...] = (),
    pytest_args: tuple[str, ...] = (),
    modules: tuple[str, ...] = (),
) -> list[MutantResult]:
    """Run every mutant (or the named ones), ``workers`` at a time, each in a child forked from one process that
    imported and collected the suite once; ``on_result`` hears each one as it is decided (in the calling thread),
    the results come back in the order asked.

    ``kill_map`` (default: the shipped one) orders each mutant's tests; ``timeout`` is per mutant; ``modules`` and
    ``pytest_args`` narrow the suite (for tests of the analysis itself). A mutant counts
    as killed only if the test that failed on it passes on the unmutated reference (the control).
    """
    for module in mutant_modules:
        importlib.import_module(module)
    mutants = all_mutants()
    unknown = [n for n in names or [] if n not in mutants]
    if unknown:
        raise LookupError(f"no mutant named {', '.join(map(repr, unknown))}")
    chosen = [mutants[n] for n in names] if names else list(mutants.values())
    by_name = {m.name: m for m in chosen}
    read_fd, write_fd = os.pipe()
    command = [sys.executable, "-m", "kstate_conformance.mutation_worker", "--workers", str(workers),
               "--timeout", str(timeout), "--result-fd", str(write_fd), "--kill-map", str(kill_map or KILL_MAP),
               *(f"--mutant-module={m}" for m in mutant_modules), *(f"--pytest-arg={a}" for a in pytest_args),
               *(f"--module={m}" for m in modules),
               *(m.name for m in chosen)]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(command, stdout=log, stderr=log, pass_fds=(write_fd,), env=env)
        os.close(write_fd)
        decided: dict[str, MutantResult] = {}
        control: dict[str, Any] | None = None
        collected = -1
        with os.fdopen(read_fd, encoding="utf-8") as lines:
            for line in lines:
                document = json.loads(line)
                if document.get("kind") == "mutant":
                    result = _result(by_name[document["name"]], document)
                    decided[result.name] = result
                    if on_result:
                        # Heard as decided; a kill the control later disowns is corrected in the results.
                        on_result(result)
                elif document.get("kind") == "collected":
                    collected = int(document["tests"])
                elif document.get("kind") == "control":
                    control = document
        status = proc.wait()
        if control is None or len(decided) != len(chosen):
            log.seek(0)
            output = log.read().decode(errors="replace")
            raise MutationRunError(f"the mutation worker stopped (exit {status}) after deciding {len(decided)} of "
                                   f"{len(chosen)} mutants:\n{output[-3000:]}")
    failing_on_reference = {test: message for test, message in control.get("failures", [])}
    results = []
    for mutant in chosen:
        result = decided[mutant.name]
        if not result.killed and result.tests_run >= 0 and result.tests_run != collected:
            raise MutationRunError(f"mutant {mutant.name} survived after {result.tests_run} of the {collected} "
                                   "collected tests: a survivor must have run every test")
        if result.killed and result.killing_test in failing_on_reference:
            result = replace(result, killed=False, first_failure=(
                f"{result.first_failure} (not a kill: this test fails on the unmutated reference too: "
                f"{failing_on_reference[result.killing_test]})"))
        results.append(result)
    return results


class MutationRunError(RuntimeError):
    """The mutation worker could not decide every mutant (the suite failed to collect, or the worker died)."""


def _result(mutant: Mutant, document: dict[str, Any]) -> MutantResult:
    failures = document.get("failures") or []
    killing_test, message = (failures[0] if failures else ("", ""))
    error = str(document.get("error") or "")
    failure = f"FAILED {killing_test} - {message}" if killing_test else error
    return MutantResult(mutant.name, mutant.family, mutant.description, bool(failures),
                        float(document.get("seconds", 0.0)), failure, mutant.rules, killing_test,
                        int(document.get("tests_run", 0)))


def describe_result(result: MutantResult) -> str:
    """One line for a decided mutant: verdict, time, the rules it breaks, and what killed it."""
    verdict = "killed" if result.killed else "SURVIVED"
    rules = f" [{', '.join(result.rules)}]" if result.rules else ""
    line = f"mutant {result.name}{rules}: {verdict} in {result.seconds:.1f} s"
    return f"{line} by {result.first_failure}" if result.first_failure else line


def write_mutation_report(results: list[MutantResult], directory: Path, without_mutant: list[str] | None = None) -> None:
    """``mutation.md`` and ``mutation.json``: each mutant, the rules it breaks, whether the suite killed it, the
    mutation score, and the required rules no mutant breaks (``without_mutant``)."""
    directory.mkdir(parents=True, exist_ok=True)
    killed = sum(r.killed for r in results)
    score = f"{killed}/{len(results)} mutants killed ({100 * killed / len(results):.0f}%)" if results else "no mutants"
    lines = ["# Mutation analysis", "", f"Mutation score: {score}.", "",
             "| mutant | family | rules | verdict | seconds | tests run | description | first failing test |",
             "|---|---|---|---|---|---|---|---|"]
    for r in sorted(results, key=lambda r: (r.family, r.name)):
        lines.append(f"| {r.name} | {r.family} | {', '.join(r.rules)} | {'killed' if r.killed else '**SURVIVED**'} "
                     f"| {r.seconds:.1f} | {r.tests_run} | {r.description.replace('|', '/')} | {r.first_failure.replace('|', '/')[:120]} |")
    slowest = sorted(results, key=lambda r: -r.seconds)[:10]
    lines += ["", "Slowest mutants: " + ", ".join(f"{r.name} {r.seconds:.1f} s ({r.tests_run} tests)" for r in slowest)
              + f". Mutant runs in all: {sum(r.seconds for r in results):.0f} s."]
    if without_mutant is not None:
        lines += ["", f"Required rules no mutant breaks: {', '.join(without_mutant) or 'none'}."]
    (directory / "mutation.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    document: dict[str, object] = {"killed": killed, "total": len(results), "mutants": [asdict(r) for r in results]}
    if without_mutant is not None:
        document["required_rules_without_mutant"] = without_mutant
    (directory / "mutation.json").write_text(json.dumps(document, indent=1), encoding="utf-8")
