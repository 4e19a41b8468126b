"""``store.scenario`` fixture cases, expanded by the harness into the implementation's own ``store.*`` calls.

An implementation under test answers single ``store.*`` operations only; it is never sent
``store.scenario`` (spec/ops.md, OPS-5). A scenario without a backend runs on every backend the
implementation's ``store.capabilities`` offers, and those must answer alike.
"""

from __future__ import annotations

from typing import Any

import pytest

from kstate.ops.store_scenario_ops import ALL_BACKENDS, SCENARIO_OP, open_input, run_scenario
from kstate_conformance.models.kv import offers_store_type

__all__ = ["SCENARIO_OP", "run_for"]


def run_for(implementation: Any, payload: dict[str, Any]) -> dict[str, Any]:
    """The scenario's answer from ``implementation``; skips when it lacks the store type, backend or caching asked for."""
    caps: dict[str, Any] = implementation.call("store.capabilities", {})
    store_type = payload.get("store_type", "kv")
    if not offers_store_type(caps, store_type):
        pytest.skip(f"{implementation.name} does not support the {store_type} store")
    options = open_input(payload)
    if options.get("caching") and not caps.get("caching"):
        pytest.skip(f"{implementation.name} offers no record cache")
    offered = [b for b in ALL_BACKENDS if b in caps.get("backends", [])]
    backend = payload.get("backend")
    if backend is not None and backend not in offered:
        pytest.skip(f"{implementation.name} does not support the {backend} backend")
    if not offered:
        pytest.skip(f"{implementation.name} offers no store backend")
    return run_scenario(implementation.call, payload, None if backend is not None else offered)
