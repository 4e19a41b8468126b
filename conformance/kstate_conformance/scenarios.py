"""``store.scenario`` fixture cases, expanded by the harness into the implementation's own ``store.*`` calls.

An implementation under test answers single ``store.*`` operations only; it is never sent
``store.scenario`` (spec/ops.md, OPS-5). A scenario without a backend runs on every backend the
implementation's ``store.capabilities`` offers, and those must answer alike.
"""

from __future__ import annotations

from typing import Any

import pytest

from kstate.ops.store_scenario_ops import ALL_BACKENDS, SCENARIO_OP, run_scenario, scenario_requires
from kstate_conformance.adapter import Unsupported
from kstate_conformance.capabilities import capabilities_of

__all__ = ["SCENARIO_OP", "run_for"]


def run_for(implementation: Any, payload: dict[str, Any], requires: dict[str, Any] | None = None) -> dict[str, Any]:
    """The scenario's answer from ``implementation``; skips when it lacks the store type, backend or record cache
    the case ``requires`` (a golden case declares it; otherwise it is derived from the scenario)."""
    needs = requires if requires is not None else scenario_requires(payload)
    caps = capabilities_of(implementation)
    store_type = needs["store_type"]
    if not caps.offers_store_type(store_type):
        pytest.skip(f"{implementation.name} does not support the {store_type} store")
    if "caching" in needs.get("features", ()) and not caps.caching:
        pytest.skip(f"{implementation.name} offers no record cache")
    offered = [b for b in ALL_BACKENDS if b in caps.backends]
    backend = needs.get("backend")
    if backend is not None and backend not in offered:
        pytest.skip(f"{implementation.name} does not support the {backend} backend")
    if not offered:
        pytest.skip(f"{implementation.name} offers no store backend")
    if backend is not None:
        return run_scenario(implementation.call, payload, None)
    # A backend the implementation offers but that lacks this store type (Kafka has no in-memory versioned store)
    # answers the scenario's first store.open unsupported: the scenario runs on the backends that have the type.
    while True:
        try:
            return run_scenario(_backend_probe(implementation.call), payload, offered)
        except _BackendLacksType as lack:
            offered = [b for b in offered if b != lack.backend]
            if not offered:
                pytest.skip(f"{implementation.name} does not support the {store_type} store on any backend: {lack.reason}")


class _BackendLacksType(Exception):
    """The first store.open of a scenario on ``backend`` was answered unsupported."""

    def __init__(self, backend: str, reason: str) -> None:
        super().__init__(reason)
        self.backend = backend
        self.reason = reason


def _backend_probe(call: Any) -> Any:
    """``call``, where an unsupported answer to the first store.open on a backend becomes :class:`_BackendLacksType`;
    any later unsupported answer (an option, another operation) stays what it is and skips the case."""
    seen: set[str] = set()

    def probe(op: str, payload: dict[str, Any]) -> Any:
        backend = str(payload.get("backend")) if op == "store.open" else ""
        first = op == "store.open" and backend not in seen
        if first:
            seen.add(backend)
        try:
            return call(op, payload)
        except (Unsupported, pytest.skip.Exception) as exc:  # the suite's wrapper turns Unsupported into a skip
            if first:
                raise _BackendLacksType(backend, str(exc)) from exc
            raise
    return probe
