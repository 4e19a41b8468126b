"""Codec operations that declare their fields on @op (kstate.ops.fields) refuse as their hand parsing did (OPS-2, OPS-3)."""

from __future__ import annotations

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
