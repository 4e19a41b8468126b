"""Codec operations that declare their fields on @op (kstate.ops.fields) refuse as their hand parsing did (OPS-2, OPS-3)."""

from __future__ import annotations

from typing import Any

import pytest

from kstate.ops import call, load_all


@pytest.mark.parametrize(("name", "payload", "error", "field"), [
    # The window is built before the key is read (WIN-8): a bad window is refused first, not the key's JSON type.
    ("window.key_schema.to_binary", {"window_start": 5, "window_end": 1, "key": 7}, "EncodeError", None),
    ("window.key_schema.to_binary", {"window_start": 1, "window_end": 5, "key": 7}, "InputError", "key"),
    # The session key's END is decoded before the interval is read (SESS-11): a short key is refused first.
    ("session.key_schema.segment_id", {"bytes": "00", "segment_interval": "x"}, "DecodeError", None),
    ("session.key_schema.segment_id", {"bytes": "00" * 17, "segment_interval": "x"}, "InputError", "segment_interval"),
    # Declaration order is the old reading order: the first bad field is named.
    ("primitives.compare", {"a": None, "b": 3}, "InputError", "a"),
    ("primitives.segment_id", {"segment_interval": True}, "MissingFieldError", "timestamp"),
    ("window.segment_interval", {"retention": 10, "window_size": "1"}, "InputError", "window_size"),
    ("varint.read_varint", {"bytes": "zz"}, "InputError", "bytes"),
    # The record codec's own typed refusals stay its own (CodecError of the record format, HDR-9).
    ("record_v2.read", {"bytes": "00", "base_offset": "1", "base_timestamp": 0}, "CodecError", None),
    ("record_v2.read", {"bytes": None, "base_offset": "1"}, "CodecError", None),
    ("record_v2.write_headers", {"headers": [["k"]]}, "CodecError", None),
    ("timestamped.values_are_same_and_time_is_increasing", {"old": "00", "new": 1}, "InputError", "new"),
    # The versioned codec's fields keep their own typed refusals: integers and steps of the scenario format, bytes of
    # the row's or key's format; the hex value a JSON-type refusal naming it (VER-3).
    ("versioned.latest_from", {"value": 7, "timestamp": "x"}, "InputError", "value"),
    ("versioned.latest_from", {"value": "61", "timestamp": "x"}, "CodecError", None),
    ("versioned.segment_versions", {"bytes": None}, "CodecError", None),
    ("versioned.segment_scenario", {"steps": {}}, "CodecError", None),
    ("versioned.version_segment", {"valid_from": 1, "valid_to": None, "tombstone": 1, "segment_interval": 10},
     "InputError", "tombstone"),
])
def test_declared_fields_refuse_in_the_order_the_handlers_read_them(
        name: str, payload: dict[str, object], error: str, field: str | None) -> None:
    refusal = call(name, payload)["error"]
    assert refusal["type"] == error, refusal
    assert refusal.get("field") == field


def test_a_deferred_field_is_declared_for_the_index_but_read_by_the_handler() -> None:
    spec = load_all()["window.key_schema.to_binary"]
    assert [f.name for f in spec.inputs or ()] == ["window_start", "window_end", "key"]
    assert [f.name for f in spec.inputs or () if f.deferred] == ["key"]
    assert call("window.key_schema.to_binary", {"window_start": 1, "window_end": 5, "key": "6b"}) == {
        "bytes": "6b0000000000000001"}


def _refusal(name: str, payload: dict[str, object]) -> dict[str, object]:
    refusal = call(name, payload)["error"]
    assert isinstance(refusal, dict)
    return refusal


def test_versioned_fields_are_read_in_the_order_the_handlers_read_them() -> None:
    """The first bad field of a doubly bad input is the one the hand parsing refused (VER-2, VER-23, VER-24)."""
    assert "'store'" in str(_refusal("versioned.segment_name", {"store": 1, "segment_id": "x"})["message"])
    assert "'segment_id'" in str(_refusal("versioned.segment_key", {"segment_id": None, "key": None})["message"])
    # Segment -1 needs no interval: the deferred field is not read for it.
    assert call("versioned.segment_name", {"store": "s", "segment_id": -1}) == {"name": "s.latestValues"}
    assert "'segment_interval'" in str(_refusal("versioned.segment_name", {"store": "s", "segment_id": 2})["message"])
    # The key scenario validates its configuration before it reads the key and the steps.
    bad_config = _refusal("versioned.key_scenario", {"history_retention": -1, "segment_interval": 10, "key": None,
                                                     "steps": 3})
    assert "history" in str(bad_config["message"]).lower(), bad_config
    bad_key = _refusal("versioned.key_scenario", {"history_retention": 100, "key": None, "steps": 3})
    assert "null" in str(bad_key["message"]), bad_key


def test_versioned_step_fields_name_every_step_the_replay_runs() -> None:
    """The step kinds the declarations show are the ones the replays dispatch, and no other is run."""
    from kstate.ops.versioned_ops import SEGMENT_STEP_OPS, STORE_STEP_OPS

    def second_step(kind: str) -> dict[str, Any]:
        first = {"op": "new", "value": "61", "valid_from": 1, "valid_to": 5}
        return call("versioned.segment_scenario", {"steps": [first, {"op": kind}]})["steps"][1]

    for kind in SEGMENT_STEP_OPS:
        assert "unknown step" not in str(second_step(kind).get("error", {}).get("message")), kind
    assert "unknown step" in str(second_step("other")["error"]["message"])
    for kind in STORE_STEP_OPS:
        answer = call("versioned.key_scenario", {"history_retention": 100, "key": "6b", "steps": [{"op": kind}]})
        assert "unknown store step" not in str(answer["steps"][0].get("error", {}).get("message")), kind
    declared = load_all()
    assert all(declared[f"versioned.{name}"].inputs is not None
               for name in ("segment_scenario", "key_scenario", "segment_name", "store_config"))
