"""``store.scenario`` cases reach the implementation as its own ``store.*`` calls (spec/ops.md, OPS-5)."""

from __future__ import annotations

from typing import Any

from kstate_conformance import rules
from kstate_conformance.scenarios import SCENARIO_OP, run_for
from kstate_conformance.store_types import KV


class Recording:
    """Passes calls to the implementation under test and records their operation names."""

    def __init__(self, implementation: Any) -> None:
        self.implementation = implementation
        self.name = implementation.name
        self.ops: list[str] = []

    def supports(self, op: str) -> bool:
        return bool(self.implementation.supports(op))

    def call(self, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        self.ops.append(op)
        out: dict[str, Any] = self.implementation.call(op, payload)
        return out


SCENARIO = {
    "store_type": KV,
    "open_input": {"logging": False},
    "steps": [
        {"op": "store.put", "input": {"key": "01", "value": "0a"}},
        {"op": "store.iterator_open", "input": {"kind": "all"}, "as": "scan"},
        {"op": "store.iterator_next", "input": {"iterator": "scan", "max": 5}},
        {"op": "store.get", "input": {"key": None}},
        {"op": "store.close", "input": {}},
        {"op": "store.open", "input": {"name": "other"}},
        {"op": "store.get", "input": {"key": "01"}},
    ],
}


@rules("OPS-5")
def test_a_scenario_is_expanded_into_store_operations(implementation: Any) -> None:
    recording = Recording(implementation)
    out = run_for(recording, SCENARIO)
    assert SCENARIO_OP not in recording.ops
    assert {"store.open", "store.put", "store.iterator_open", "store.get"} <= set(recording.ops)
    assert out["open"] == {}
    steps = out["steps"]
    assert steps[1] == {"iterator": "scan"} and steps[2] == {"entries": [["01", "0a"]]}
    assert "error" in steps[3]
    assert steps[5] == {} and steps[6] == {"value": None}  # a second store, beside the first, is empty
