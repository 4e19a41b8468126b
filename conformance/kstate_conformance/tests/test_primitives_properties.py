"""Properties of the primitive encodings, checked through the adapter (PRIM-*)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kstate_conformance import rules
from kstate_conformance.strategies import INT32, INT64


@rules("PRIM-5", "PRIM-6")
@given(INT32)
def test_varint_round_trips(implementation: Any, value: int) -> None:
    written = implementation.call("varint.write_varint", {"value": value})
    assert written["size"] == len(written["bytes"]) // 2
    assert implementation.call("varint.read_varint", {"bytes": written["bytes"]}) == {"value": value, "bytes_consumed": written["size"]}


@rules("PRIM-5", "PRIM-6")
@given(INT64)
def test_varlong_round_trips(implementation: Any, value: int) -> None:
    written = implementation.call("varint.write_varlong", {"value": value})
    assert implementation.call("varint.read_varlong", {"bytes": written["bytes"]}) == {"value": value, "bytes_consumed": written["size"]}


@rules("PRIM-6")
@given(INT32)
def test_zigzag_keeps_small_magnitudes_short(implementation: Any, value: int) -> None:
    size = implementation.call("varint.write_varint", {"value": value})["size"]
    magnitude = value if value >= 0 else -value - 1
    assert size == max(1, -(-(magnitude * 2 + 1).bit_length() // 7))


@rules("PRIM-4")
@given(INT64, st.integers(min_value=1, max_value=1 << 40))
def test_segment_id_truncates_toward_zero(implementation: Any, timestamp: int, interval: int) -> None:
    got = implementation.call("primitives.segment_id", {"timestamp": timestamp, "segment_interval": interval})["segment_id"]
    assert abs(got) * interval <= abs(timestamp) < (abs(got) + 1) * interval
    assert got == 0 or (got > 0) == (timestamp > 0)


@rules("PRIM-2")
@given(st.binary(max_size=8), st.binary(max_size=8))
def test_order_is_unsigned_lexicographic(implementation: Any, a: bytes, b: bytes) -> None:
    expected = (a > b) - (a < b)
    assert implementation.call("primitives.compare", {"a": a.hex(), "b": b.hex()})["result"] == expected


@rules("PRIM-3")
@given(st.binary(min_size=1, max_size=8).filter(lambda b: any(x != 0xFF for x in b)))
def test_increment_is_the_next_number_of_the_same_width(implementation: Any, data: bytes) -> None:
    got = bytes.fromhex(implementation.call("primitives.increment", {"bytes": data.hex()})["bytes"])
    assert len(got) == len(data) and int.from_bytes(got, "big") == int.from_bytes(data, "big") + 1
