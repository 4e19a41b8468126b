"""Kit tools (kstate_conformance.kit_tools, docs/verdicts.md): a case of a kit tool alone is n/a for an implementation
that lacks the tool; one that reached the implementation reads its files with the kit's tool; the reference answers
every kit tool itself, so its verdict is unchanged."""

from __future__ import annotations

from typing import Any

import pytest

from kstate_conformance.adapter import ImplementationAdapter, JsonDict, ReferenceAdapter, Unsupported
from kstate_conformance.kit_tools import KIT_TOOLS
from kstate_conformance.plugin import SkippingAdapter
from kstate_conformance.report import NOT_APPLICABLE, UNSUPPORTED, classify_skip


class _Lacking(ImplementationAdapter):
    """An implementation with one operation of its own and no kit tool."""

    name = "porter"

    def supports(self, op: str) -> bool:
        return op == "primitives.int32"

    def call(self, op: str, payload: JsonDict) -> JsonDict:
        if op != "primitives.int32":
            raise Unsupported(op)
        return {"own": True}


def _skip_reason(adapter: SkippingAdapter, op: str, payload: dict[str, Any]) -> str:
    with pytest.raises(pytest.skip.Exception) as skipped:
        adapter.call(op, payload)
    return str(skipped.value)


def test_every_kit_tool_is_an_operation_of_the_reference() -> None:
    reference = ReferenceAdapter()
    assert KIT_TOOLS and all(reference.supports(op) for op in KIT_TOOLS)


def test_a_case_of_a_kit_tool_alone_is_not_applicable_to_an_implementation_without_it() -> None:
    adapter = SkippingAdapter(_Lacking())
    assert adapter.supports("layout.classify_store_file")
    reason = _skip_reason(adapter, "layout.classify_store_file", {"name": "000012.sst"})
    assert classify_skip(reason) == (NOT_APPLICABLE, "")


def test_after_the_implementations_own_operation_the_kit_tool_answers() -> None:
    adapter = SkippingAdapter(_Lacking())
    assert adapter.call("primitives.int32", {"value": 1}) == {"own": True}
    assert adapter.call("layout.classify_store_file", {"name": "000012.sst"}) == {"kind": "rocksdb"}
    assert adapter.last_call == ("layout.classify_store_file", {"name": "000012.sst"}, {"kind": "rocksdb"})


def test_a_new_test_starts_without_the_implementations_answers() -> None:
    adapter = SkippingAdapter(_Lacking())
    adapter.call("primitives.int32", {"value": 1})
    adapter.answered_own_operation = False  # what pytest_runtest_setup does before each test
    assert classify_skip(_skip_reason(adapter, "versioned.split_segment_key", {"bytes": "00"}))[0] == NOT_APPLICABLE


def test_an_operation_that_is_no_kit_tool_stays_unsupported() -> None:
    adapter = SkippingAdapter(_Lacking())
    adapter.call("primitives.int32", {"value": 1})
    assert not adapter.supports("store.crash")
    assert classify_skip(_skip_reason(adapter, "store.crash", {})) == (UNSUPPORTED, "store.crash")


def test_the_reference_answers_its_kit_tools_itself() -> None:
    adapter = SkippingAdapter(ReferenceAdapter())
    assert adapter.call("layout.classify_store_file", {"name": "rocksdict-config.json"}) == {"kind": "not_layout"}
    assert adapter.answered_own_operation is False  # a kit tool is not the implementation's own operation
