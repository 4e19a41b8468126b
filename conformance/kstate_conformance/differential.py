"""Differential runs: two runs of the suite (in process and through a testee, say) must give identical
verdicts per stable test id; within one run, a test must give the same verdict on every backend.

``python -m kstate_conformance.differential A B`` compares two ``results.json`` files (or report
directories); ``kstate conformance --report DIR --compare OTHER`` does it after a run.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kstate_conformance.expectations import stable_test_id


def _results_path(path: Path) -> Path:
    return path / "results.json" if path.is_dir() else path


def load_outcomes(path: Path) -> list[dict[str, Any]]:
    outcomes: list[dict[str, Any]] = json.loads(_results_path(path).read_text(encoding="utf-8"))["outcomes"]
    for outcome in outcomes:
        outcome.setdefault("test_id", stable_test_id(outcome["nodeid"]))
    return outcomes


def load_verdicts(path: Path) -> dict[str, str]:
    """``{stable test id: outcome}`` of one run."""
    return {o["test_id"]: o["outcome"] for o in load_outcomes(path)}


@dataclass
class Comparison:
    label_a: str
    label_b: str
    changed: list[tuple[str, str, str]] = field(default_factory=list)
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    compared: int = 0

    @property
    def identical(self) -> bool:
        return not (self.changed or self.only_a or self.only_b)

    def describe(self, limit: int = 30) -> list[str]:
        if self.identical:
            return [f"identical verdicts for all {self.compared} tests of {self.label_a} and {self.label_b}"]
        lines = [f"{len(self.changed)} tests differ between {self.label_a} and {self.label_b} "
                 f"({len(self.only_a)} only in the first, {len(self.only_b)} only in the second)"]
        lines += [f"  {t}: {a} vs {b}" for t, a, b in self.changed[:limit]]
        lines += [f"  only in {self.label_a}: {t}" for t in self.only_a[:limit]]
        lines += [f"  only in {self.label_b}: {t}" for t in self.only_b[:limit]]
        return lines


def compare_verdicts(a: dict[str, str], b: dict[str, str], label_a: str = "A", label_b: str = "B") -> Comparison:
    result = Comparison(label_a, label_b, compared=len(set(a) & set(b)))
    result.changed = [(t, a[t], b[t]) for t in sorted(set(a) & set(b)) if a[t] != b[t]]
    result.only_a = sorted(set(a) - set(b))
    result.only_b = sorted(set(b) - set(a))
    return result


def compare_runs(a: Path, b: Path) -> Comparison:
    return compare_verdicts(load_verdicts(a), load_verdicts(b), str(_results_path(a)), str(_results_path(b)))


def without_backend(test_id: str, backend: str) -> str:
    """The test id with the backend's token taken out of its parameters: the key tests are grouped by."""
    name, bracket, params = test_id.partition("[")
    if not bracket or not backend:
        return test_id
    tokens = [t for t in params.rstrip("]").split("-") if t != backend]
    return f"{name}[{'-'.join(tokens)}]" if tokens else name


def backend_disagreements(outcomes: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """Tests run on several backends whose verdicts differ: ``{test without backend: {backend: outcome}}``.

    A skip says nothing about behaviour (a test may not apply to one backend), so only the verdicts of
    backends where the test ran are compared.
    """
    groups: dict[str, dict[str, str]] = {}
    for o in outcomes:
        if o.get("backend"):
            groups.setdefault(without_backend(o["test_id"], o["backend"]), {})[o["backend"]] = o["outcome"]
    return {k: v for k, v in sorted(groups.items())
            if len({outcome for outcome in v.values() if outcome != "skipped"}) > 1}


def backend_groups(outcomes: list[dict[str, Any]]) -> int:
    """How many tests ran on more than one backend."""
    groups: dict[str, set[str]] = {}
    for o in outcomes:
        if o.get("backend"):
            groups.setdefault(without_backend(o["test_id"], o["backend"]), set()).add(o["backend"])
    return sum(1 for v in groups.values() if len(v) > 1)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m kstate_conformance.differential RESULTS_A RESULTS_B", file=sys.stderr)
        return 2
    comparison = compare_runs(Path(args[0]), Path(args[1]))
    for line in comparison.describe():
        print(line)
    disagreements = {label: backend_disagreements(load_outcomes(Path(p))) for label, p in zip("AB", args, strict=True)}
    for label, found in disagreements.items():
        for test, verdicts in found.items():
            print(f"  run {label}: {test} differs across backends: {verdicts}")
    return 0 if comparison.identical and not any(disagreements.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
