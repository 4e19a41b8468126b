"""The adapter protocol's base class (OPS-1): ``begin_test`` and ``close`` are part of it, and an adapter of the
first shape (name, supports, call) is still adopted, its own ``begin_test``/``close`` kept."""

from __future__ import annotations

from typing import Any

import pytest

from kstate_conformance.adapter import CodecAdapter, ImplementationAdapter, ReferenceAdapter, as_implementation


class FirstShape:
    """A third party's adapter written against the protocol's first name: no base class."""

    name = "first"

    def __init__(self) -> None:
        self.events: list[str] = []

    def supports(self, op: str) -> bool:
        return op == "varint.write_varint"

    def call(self, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"op": op}

    def close(self) -> None:
        self.events.append("close")


def test_a_first_shape_adapter_is_adopted_with_its_close() -> None:
    inner = FirstShape()
    assert isinstance(inner, CodecAdapter) and not isinstance(inner, ImplementationAdapter)
    adopted = as_implementation(inner)
    assert isinstance(adopted, ImplementationAdapter) and adopted.name == "first"
    assert adopted.supports("varint.write_varint") and adopted.call("x.y", {}) == {"op": "x.y"}
    adopted.begin_test("t")  # the inner one has none: nothing happens
    adopted.close()
    assert inner.events == ["close"]


def test_the_base_class_makes_begin_test_and_close_no_ops_and_needs_call() -> None:
    reference = ReferenceAdapter()
    assert as_implementation(reference) is reference
    reference.begin_test("t")
    reference.close()

    class Incomplete(ImplementationAdapter):
        name = "incomplete"

        def supports(self, op: str) -> bool:
            return False

    with pytest.raises(TypeError):
        Incomplete()  # type: ignore[abstract]
