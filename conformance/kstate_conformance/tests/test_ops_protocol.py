"""The operation protocol itself: unsupported is explicit, null is not empty, refusal is an output."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kstate_conformance import rules
from kstate_conformance.strategies import INT64

#: Operations the suite uses, any of which an implementation may claim (OPS-1 needs one claimed, one not).
KNOWN_OPERATIONS = ("varint.write_varint", "varint.read_varint", "primitives.encode_int64", "primitives.read_int64",
                    "timestamped.serialize", "timestamped.deserialize", "header_values.serialize",
                    "header_values.deserialize", "store.open")


@rules("OPS-1")
def test_an_unknown_operation_is_not_claimed(implementation: Any) -> None:
    assert implementation.supports("no_such_family.no_such_operation") is False
    claimed = [op for op in KNOWN_OPERATIONS if implementation.supports(op)]
    if not claimed:
        pytest.skip(f"{implementation.name} implements none of the operations {', '.join(KNOWN_OPERATIONS)}")
    # supports() is an honest yes as well as an honest no: a claimed operation answers, it is not unsupported.
    assert all(implementation.supports(op) is True for op in claimed)


@rules("OPS-2", "PRIM-1")
@given(INT64)
def test_int64_is_hex_of_eight_big_endian_bytes(implementation: Any, value: int) -> None:
    out = implementation.call("primitives.encode_int64", {"value": value})
    assert out == {"bytes": value.to_bytes(8, "big", signed=True).hex()}
    assert implementation.call("primitives.read_int64", {"bytes": out["bytes"]}) == {"value": value}


@rules("OPS-3", "PRIM-8")
@given(st.binary(max_size=7))
def test_truncated_input_is_refused_as_an_output(implementation: Any, data: bytes) -> None:
    out = implementation.call("primitives.read_int64", {"bytes": data.hex()})
    assert set(out) == {"error"}


@rules("OPS-3", "PRIM-7", "PRIM-8")
@given(st.binary(min_size=1, max_size=16).map(lambda b: bytes(x | 0x80 for x in b)))
def test_a_varint_that_never_ends_is_refused(implementation: Any, data: bytes) -> None:
    assert "error" in implementation.call("varint.read_varint", {"bytes": data.hex()})
    assert "error" in implementation.call("varint.read_varlong", {"bytes": data.hex()})


@rules("PRIM-7")
def test_kafka_leniency_on_non_minimal_and_overlong_varints(implementation: Any) -> None:
    assert implementation.call("varint.read_unsigned_varint", {"bytes": "8000"}) == {"value": 0, "bytes_consumed": 2}
    assert implementation.call("varint.read_unsigned_varint", {"bytes": "ffffffff7f"}) == {"value": -1, "bytes_consumed": 5}


@rules("OPS-4")
def test_outputs_carry_exactly_the_documented_fields(implementation: Any) -> None:
    assert set(implementation.call("varint.write_varint", {"value": 300})) == {"bytes", "size"}
    assert set(implementation.call("varint.read_varint", {"bytes": "d804"})) == {"value", "bytes_consumed"}
