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
    scenario = {"store_type": "kv", "open_input": {"caching": True},
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


def test_fs_steps_run_on_the_state_directory_and_are_never_sent() -> None:
    """``fs.*`` steps act on the scenario's state directory itself; the implementation never sees them (OPS-5)."""
    sent: list[str] = []

    def recording(op: str, payload: dict[str, Any]) -> dict[str, Any]:
        sent.append(op)
        return call(op, payload)

    steps = [{"op": "fs.snapshot", "input": {}},
             {"op": "fs.write", "input": {"path": "app/0_0/x", "hex": "00ff00"}},
             {"op": "fs.corrupt", "input": {"path": "app/0_0/*", "offset": -1, "length": 5}},
             {"op": "fs.changed", "input": {}},
             {"op": "fs.truncate", "input": {"path": "app/0_0/x", "size": 0}},
             {"op": "fs.delete", "input": {"path": "app/0_0/x"}},
             {"op": "fs.changed", "input": {}}]
    out = run_scenario(recording, {"store_type": "kv", "backend": "rocksdb", "steps": steps})
    assert out["steps"] == [{}, {}, {}, {"changed": ["app/0_0/x"]}, {}, {}, {"changed": []}]
    assert not any(op.startswith("fs.") for op in sent)


@pytest.mark.parametrize("step", [
    {"op": "fs.write", "input": {"path": "../outside", "text": "x"}},
    {"op": "fs.delete", "input": {"path": "app/0_0/absent"}},
    {"op": "fs.changed", "input": {"since": "never-taken"}},
    {"op": "fs.truncate", "input": {"path": "app/0_0/rocksdb/store/CURRENT", "size": "3"}},
])
def test_malformed_fs_steps_are_refused(step: dict[str, Any]) -> None:
    with pytest.raises(ScenarioError):
        run_scenario(call, {"store_type": "kv", "backend": "rocksdb", "steps": [step]})


def test_open_input_is_the_scenarios_store_open_fields_and_options_is_refused_by_name() -> None:
    """``open_input`` names the scenario's other store.open fields (OPS-5); ``options``, its retired name, is
    refused by name, with or without ``open_input`` (OPS-3)."""
    steps = [{"op": "store.put", "input": {"key": "01", "value": "0a"}}, {"op": "store.changelog", "input": {}}]
    new = call("store.scenario", {"backend": "memory", "open_input": {"logging": False}, "steps": steps})
    assert new["steps"][1]["records"] == []  # logging off: the declared input reached store.open
    for retired in ({"options": {"logging": False}}, {"open_input": {}, "options": {}}):
        answer = call("store.scenario", {"backend": "memory", **retired, "steps": steps})
        assert answer["error"]["type"] == "ScenarioError" and "open_input" in answer["error"]["message"]
