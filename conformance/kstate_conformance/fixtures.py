"""Golden fixture cases for the suite, read from the shipped ``fixtures/`` directory."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from kstate.ops.compare import differences
from kstate.ops.position_order import comparable_output
from kstate_conformance.data import fixtures_dir


@lru_cache(maxsize=1)
def _every_case() -> tuple[dict[str, Any], ...]:
    cases: list[dict[str, Any]] = []
    for path in sorted(fixtures_dir().glob("*/*.json")):
        cases.extend(json.loads(path.read_text(encoding="utf-8"))["cases"])
    return tuple(cases)


def all_cases() -> tuple[dict[str, Any], ...]:
    """The golden cases: every fixture case but Kafka's recorded answers that depart from the spec (OPS-4)."""
    return tuple(c for c in _every_case() if "deviation" not in c)


def deviating_cases() -> tuple[dict[str, Any], ...]:
    """Kafka's recorded answers marked ``deviation``: evidence for the report, not expectations."""
    return tuple(c for c in _every_case() if "deviation" in c)


def golden_differences(case: dict[str, Any], actual: Any) -> list[str]:
    """How ``actual`` departs from the case's ``output`` (OPS-4; OFF-8's position bytes in any order), or none when
    it matches one of the case's ``also_accepted`` outputs: a harmless difference of Kafka's that the case's rules
    accept (each with its ``why``). The differences named are the output's."""
    diffs = differences(comparable_output(case["op"], case["output"]), comparable_output(case["op"], actual))
    for other in case.get("also_accepted", ()):
        if not differences(comparable_output(case["op"], other["output"]), comparable_output(case["op"], actual)):
            return []
    return diffs
