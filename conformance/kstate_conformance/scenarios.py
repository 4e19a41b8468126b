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
from kstate_conformance.capabilities import canonical_store_type, capabilities_of, lacks_reason
from kstate_conformance.store_types import ALL_TYPES

__all__ = ["SCENARIO_OP", "run_for"]


def run_for(implementation: Any, payload: dict[str, Any], requires: dict[str, Any] | None = None) -> dict[str, Any]:
    """The scenario's answer from ``implementation``; skips when it lacks the store type, backend or record cache
    the case ``requires`` (a golden case declares it; otherwise it is derived from the scenario)."""
    needs = requires if requires is not None else scenario_requires(payload)
    caps = capabilities_of(implementation)
    store_type = needs["store_type"]
    if not caps.offers_store_type(store_type):
        if canonical_store_type(store_type) in ALL_TYPES:
            pytest.skip(lacks_reason(implementation.name, f"the {canonical_store_type(store_type)} store"))
        pytest.skip(f"{implementation.name} does not support the {store_type} store")
    if "caching" in needs.get("features", ()) and not caps.caching:
        pytest.skip(f"{implementation.name} offers no record cache")
    offered = [b for b in ALL_BACKENDS if caps.offers(store_type, b)]
    backend = needs.get("backend")
    lacked = caps.lacks(store_type, backend) if backend is not None else None
    if lacked is not None:
        pytest.skip(lacks_reason(implementation.name, lacked))
    if not offered:
        pytest.skip(f"{implementation.name} offers no store backend")
    if backend is not None:
        return run_scenario(implementation.call, payload, None)
    # A backend that lacks this store type without saying so in store_backends answers the scenario's first
    # store.open unsupported: the scenario runs on the backends that have the type.
    while True:
        try:
            return run_scenario(_backend_probe(implementation.call), payload, offered)
        except _BackendLacksType as lack:
            offered = [b for b in offered if b != lack.backend]
            if not offered:
                pytest.skip(f"{implementation.name} does not support operation store.open of a {store_type} store "
                            f"on any backend it offers: {lack.reason}")


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
