"""The ``store.scenario`` expansion (OPS-5): handles and iterator ids replaced, backends compared, refusals kept."""

from __future__ import annotations

from typing import Any

import pytest

from kstate.ops import call
from kstate.ops.store_scenario_ops import ScenarioError, run_scenario


def test_backends_must_agree() -> None:
    opened: list[str] = []

    def one_backend_differs(op: str, payload: dict[str, Any]) -> dict[str, Any]:
        if op == "store.open":
            opened.append(payload["backend"])
        if op == "store.get":
            return {"value": "0a" if opened[-1] == "memory" else None}
        return call(op, payload)

    scenario = {"store_type": "kv", "steps": [{"op": "store.get", "input": {"key": "01"}}]}
    with pytest.raises(ScenarioError, match="memory and rocksdb"):
        run_scenario(one_backend_differs, scenario)
    assert opened == ["memory", "rocksdb"]
    assert run_scenario(call, scenario) == {"open": {}, "steps": [{"value": None}]}


def test_refusals_agree_whatever_their_details() -> None:
    # The backends refuse an empty cached prefix scan with different error types; both are refusals (OPS-4).
    scenario = {"store_type": "kv", "options": {"caching": True},
                "steps": [{"op": "store.prefix_scan", "input": {"prefix": ""}}]}
    assert "error" in run_scenario(call, scenario)["steps"][0]


def test_a_refused_open_names_the_store_by_location() -> None:
    scenario = {"store_type": "kv", "backend": "rocksdb", "open_fields": ["manages_offsets"],
                "steps": [{"op": "store.put", "input": {"key": "01", "value": "0a"}},
                          {"op": "store.crash", "input": {}},
                          {"op": "store.open", "input": {}},
                          {"op": "store.dump", "input": {}, "keep": ["default"]},
                          {"op": "store.get", "input": {"key": "01"}}]}
    out = run_scenario(call, scenario)
    assert out["open"] == {"manages_offsets": True}
    assert "error" in out["steps"][2]
    assert out["steps"][3] == {"families": ["default", "offsets"], "column_families": {"default": []}}
    assert "error" in out["steps"][4]


@pytest.mark.parametrize("steps", [None, [{"op": "codec.x", "input": {}}], [{"op": "store.scenario", "input": {}}],
                                   [{"op": "store.get", "input": []}]])
def test_malformed_scenarios_are_refused(steps: Any) -> None:
    with pytest.raises(ScenarioError):
        run_scenario(call, {"store_type": "kv", "backend": "memory", "steps": steps})
