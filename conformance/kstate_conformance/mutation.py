"""Mutation analysis: run the suite against every mutant; a surviving mutant is a hole in the suite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kstate_conformance.mutants import Mutant, all_mutants
from kstate_conformance.pytest_args import suite_args


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
    # The golden cases before the session state machine: a mutant the contract tests miss is mostly a rule only a
    # hand-worked case checks, and the machine's full run would come first.
    "session_store": ("session_store", "golden", "session_state_machine"),
    "versioned_store": ("versioned_store", "versioned_state_machine"),
}


def family_modules(family: str) -> list[str]:
    """The shipped test modules most likely to catch a mutant of ``family``, then the golden fixtures."""
    keywords = _FAMILY_KEYWORDS.get(family, (family,))
    names = sorted(p.stem for p in TESTS_DIR.glob("test_*.py"))
    chosen = [n for k in keywords for n in names if k in n]
    return [f"{TESTS_PACKAGE}.{n}" for n in dict.fromkeys([*chosen, "test_golden"])]


def _suite_command(impl: str, extra: list[str], modules: list[str] | None = None) -> list[str]:
    args = suite_args()
    if modules:
        args = [*args[: args.index(TESTS_PACKAGE)], *modules, *args[args.index(TESTS_PACKAGE) + 1:]]
    return [sys.executable, "-m", "pytest", "-q", "-x", "--no-header", *args,
            "--kstate-impl", impl, "--kstate-profile", "quick", *extra]


def run_one(mutant: Mutant, extra: list[str] | None = None, timeout: float = 600) -> MutantResult:
    """Run the suite on one mutant in a child process; killed means the suite failed.

    The family's own modules run first; only a mutant they do not kill is run against the whole suite.
    """
    start = time.monotonic()
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        proc = subprocess.run(_suite_command(f"mutant:{mutant.name}", extra or [], family_modules(mutant.family)),
                              capture_output=True, text=True, timeout=timeout, env=env, check=False)
        if proc.returncode == 0:
            proc = subprocess.run(_suite_command(f"mutant:{mutant.name}", extra or []), capture_output=True,
                                  text=True, timeout=timeout, env=env, check=False)
        killed = proc.returncode == 1
        failure = next((line for line in proc.stdout.splitlines() if line.startswith("FAILED")), "")
        if proc.returncode not in (0, 1):
            failure = f"suite did not run (exit {proc.returncode}): {proc.stdout[-400:]}{proc.stderr[-400:]}"
    except subprocess.TimeoutExpired:
        killed, failure = False, f"timed out after {timeout:.0f} s"
    return MutantResult(mutant.name, mutant.family, mutant.description, killed, time.monotonic() - start, failure,
                        mutant.rules)


def run_all(
    names: list[str] | None = None,
    workers: int = 2,
    on_result: Callable[[MutantResult], None] | None = None,
) -> list[MutantResult]:
    """Run every mutant (or the named ones), ``workers`` at a time; ``on_result`` hears each one as it is
    decided (in the calling thread), the results come back in the order asked."""
    mutants = all_mutants()
    unknown = [n for n in names or [] if n not in mutants]
    if unknown:
        raise LookupError(f"no mutant named {', '.join(map(repr, unknown))}")
    chosen = [mutants[n] for n in names] if names else list(mutants.values())
    results: dict[str, MutantResult] = {}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(run_one, m) for m in chosen]
        for future in as_completed(futures):
            result = future.result()
            results[result.name] = result
            if on_result:
                on_result(result)
    return [results[m.name] for m in chosen]


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
             "| mutant | family | rules | verdict | seconds | description | first failing test |",
             "|---|---|---|---|---|---|---|"]
    for r in sorted(results, key=lambda r: (r.family, r.name)):
        lines.append(f"| {r.name} | {r.family} | {', '.join(r.rules)} | {'killed' if r.killed else '**SURVIVED**'} "
                     f"| {r.seconds:.1f} | {r.description.replace('|', '/')} | {r.first_failure.replace('|', '/')[:120]} |")
    if without_mutant is not None:
        lines += ["", f"Required rules no mutant breaks: {', '.join(without_mutant) or 'none'}."]
    (directory / "mutation.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    document: dict[str, object] = {"killed": killed, "total": len(results), "mutants": [asdict(r) for r in results]}
    if without_mutant is not None:
        document["required_rules_without_mutant"] = without_mutant
    (directory / "mutation.json").write_text(json.dumps(document, indent=1), encoding="utf-8")
