"""Typed readers of operation inputs: wrong JSON types are refused naming the field (spec/ops.md OPS-2, OPS-3)."""

from __future__ import annotations

from typing import Any

import pytest

from kstate.errors import KStateError
from kstate.ops import call, load_all
from kstate.ops.inputs import (
    InputError,
    MissingFieldError,
    as_headers,
    as_payload,
    require_bool,
    require_choice,
    require_hex,
    require_int,
    require_list,
    require_object,
)
from kstate_conformance.tests.test_hostile_input import CODEC_EXAMPLES, STORE_EXAMPLES


def test_readers_accept_their_type_and_name_the_field_otherwise() -> None:
    payload = as_payload({"n": 5, "h": "0aff", "b": True, "l": [1], "o": {"x": 1}, "null": None})
    assert require_int(payload, "n") == 5
    assert require_hex(payload, "h") == b"\x0a\xff"
    assert require_hex(payload, "null") is None
    assert require_bool(payload, "b") is True
    assert require_list(payload, "l") == [1]
    assert require_object(payload, "o") == {"x": 1}
    assert require_int(payload, "absent", 7) == 7
    assert require_int(payload, "null", None) is None
    for reader, name in ((require_int, "b"), (require_int, "h"), (require_hex, "n"), (require_bool, "n"),
                         (require_list, "o"), (require_object, "l"), (require_int, "null")):
        with pytest.raises(InputError) as refused:
            reader(payload, name)
        assert refused.value.field == name and name in str(refused.value)
    with pytest.raises(MissingFieldError, match="absent"):
        require_int(payload, "absent")
    with pytest.raises(MissingFieldError):
        as_payload({})["absent"]
    with pytest.raises(InputError, match="outside"):
        require_int({"n": 2**63}, "n")
    with pytest.raises(InputError, match="outside"):
        require_int({"n": 0}, "n", minimum=1)
    with pytest.raises(InputError, match="not a hex string"):
        require_hex({"h": "zz"}, "h")
    with pytest.raises(InputError, match="null"):
        require_hex({"h": None}, "h", nullable=False)
    with pytest.raises(InputError, match="one of"):
        require_choice({"k": "x"}, "k", ("a", "b"))
    with pytest.raises(InputError) as refused:
        as_headers([["k", "01"], ["k", 3]], "record.headers")
    assert refused.value.field == "record.headers[1][1]"
    assert as_headers([["k", "01"], ["n", None]]) == [("k", b"\x01"), ("n", None)]
    assert issubclass(InputError, KStateError)


@pytest.mark.parametrize(("op", "payload", "field"), [
    ("primitives.segment_id", {"timestamp": 1, "segment_interval": None}, "segment_interval"),
    ("window.key_schema.segment_id", {"bytes": "00" * 12, "segment_interval": "10"}, "segment_interval"),
    ("changelog.restore_value", {"store_type": "kv", "record": None}, "record"),
    ("changelog.restore_value", {"store_type": "kv", "record": {"key": "01", "timestamp": 1, "headers": {"a": 1}}},
     "record.headers"),
    ("checkpoint.write", {"entries_in_map_order": {"t": 1}}, "entries_in_map_order"),
    ("checkpoint.write", {"entries_in_map_order": [["t", "0", 1]]}, "entries_in_map_order[0][1]"),
    ("position.serialize", {"position": [["t", [[0, True]]]]}, "position[0][1][0][1]"),
    ("offsets.commit", {"cf": [[1, 2]], "offsets": []}, "cf[0][0]"),
    ("header_values.serialize", {"value": "01", "timestamp": 1, "headers": [1]}, "headers[0]"),
    ("changelog.topic_config", {"store_type": "kv", "log_config": ["x"]}, "log_config"),
    ("timestamped.serialize", {"value": "01"}, "timestamp"),
    ("store.restore", {"handle": "$open", "records": [None]}, "records[0]"),
    ("store.open", {"backend": "memory", "store_type": "no-such-type"}, "store_type"),
    ("store.open", {"backend": "memory", "cache_max_bytes": -1}, "cache_max_bytes"),
])
def test_wrong_json_types_are_refused_naming_the_field(op: str, payload: dict[str, Any], field: str) -> None:
    if payload.get("handle") == "$open":
        payload = {**payload, "handle": call("store.open", {"backend": "memory"})["handle"]}
    out = call(op, payload)
    assert out["error"]["type"] in ("InputError", "MissingFieldError"), out
    assert out["error"]["field"] == field


def test_a_non_object_input_is_refused() -> None:
    assert call("varint.write_varint", [1])["error"]["field"] == "input"  # type: ignore[arg-type]


def test_every_operation_has_a_type_confusion_example() -> None:
    """The hostile-input module feeds wrong JSON types to every operation a testee implements (OPS-3); the
    harness-only operations are the reference's own, checked below."""
    from kstate.ops.index import HARNESS_ONLY

    missing = sorted(set(load_all()) - set(CODEC_EXAMPLES) - set(STORE_EXAMPLES) - set(HARNESS_ONLY))
    assert missing == [], f"operations without an example input in test_hostile_input: {missing}"


def test_the_scenario_operation_refuses_wrong_json_types() -> None:
    """``store.scenario`` is the harness's (never sent to a testee): the reference still answers a wrong type in
    any top-level field or step field with a refusal, never an exception (OPS-3)."""
    from kstate_conformance.fixtures import all_cases
    from kstate_conformance.tests.test_hostile_input import CONFUSIONS, MISSING, _replaced

    example = min((c["input"] for c in all_cases() if c["op"] == "store.scenario" and "error" not in c["output"]
                   and len(c["input"].get("steps", [])) >= 2), key=lambda i: len(str(i)))
    step = example["steps"][1]
    paths = [(key,) for key in example] + [("steps", 1, key) for key in step]
    paths += [("steps", 1, "input", key) for key in step.get("input", {})]
    for path in paths:
        for confusion in (*CONFUSIONS, MISSING):
            out = call("store.scenario", _replaced(example, path, confusion))
            assert isinstance(out, dict), f"{path} = {confusion!r}: {out!r}"


def test_a_refused_close_leaves_the_store_open() -> None:
    """A close refused for its input (OPS-3) closes nothing: its fields are parsed before the handler runs, so the
    handle is not marked closed while its store stays open."""
    from kstate.ops import call

    handle = call("store.open", {"store_type": "kv", "backend": "memory"})["handle"]
    refused = call("store.close", {"handle": handle, "downgrade": "yes"})
    assert refused["error"]["type"] == "InputError" and refused["error"]["field"] == "downgrade"
    assert call("store.flush_cache", {"handle": handle}) == {}  # still open
    assert call("store.close", {"handle": handle}) == {}
