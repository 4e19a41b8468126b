"""The adapter protocol's base class (OPS-1): ``begin_test`` and ``close`` are part of it, and an adapter without
the base class is refused at load."""

from __future__ import annotations

from typing import Any

import pytest

from kstate_conformance.adapter import ImplementationAdapter, ReferenceAdapter
from kstate_conformance.loading import ImplementationError, load_implementation


class FirstShape:
    """A third party's adapter of the protocol's first shape (name, supports, call) with no base class."""

    name = "first"

    def supports(self, op: str) -> bool:
        return op == "varint.write_varint"

    def call(self, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"op": op}


def test_an_adapter_without_the_base_class_is_refused_at_load_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first shape's adoption is retired (issue 33): loading names the base class instead of adopting it."""
    import sys
    import types

    module = types.ModuleType("first_shape_adapter")
    module.create = FirstShape  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "first_shape_adapter", module)
    with pytest.raises(ImplementationError, match="ImplementationAdapter"):
        load_implementation("first_shape_adapter:create")


def test_the_base_class_makes_begin_test_and_close_no_ops_and_needs_call() -> None:
    reference = ReferenceAdapter()
    reference.begin_test("t")
    reference.close()

    class Incomplete(ImplementationAdapter):
        name = "incomplete"

        def supports(self, op: str) -> bool:
            return False

    with pytest.raises(TypeError):
        Incomplete()  # type: ignore[abstract]
