"""Absent store types (docs/verdicts.md): an operation that names a store type the implementation does not declare,
answered unsupported, is ``absent`` (CL-5 and CL-9 of the versioned store with headers, which Kafka 4.4 lacks);
the same operation on a type it declares stays an unsupported operation."""

from __future__ import annotations

from typing import Any

import pytest

from kstate_conformance.adapter import ImplementationAdapter, JsonDict, Unsupported
from kstate_conformance.plugin import SkippingAdapter
from kstate_conformance.report import ABSENT, UNSUPPORTED, classify_skip


class _WithoutVersionedHeaders(ImplementationAdapter):
    """An implementation of the key-value and versioned stores only, whose changelog operations it does not answer."""

    name = "porter"

    def supports(self, op: str) -> bool:
        return op == "store.capabilities"

    def call(self, op: str, payload: JsonDict) -> JsonDict:
        if op == "store.capabilities":
            return {"store_types": ["kv", "versioned_kv"], "backends": ["rocksdb"]}
        raise Unsupported(op)


def _skip(op: str, payload: dict[str, Any]) -> tuple[str, str]:
    with pytest.raises(pytest.skip.Exception) as skipped:
        SkippingAdapter(_WithoutVersionedHeaders()).call(op, payload)
    return classify_skip(str(skipped.value))


@pytest.mark.parametrize("op", ["changelog.record_for_write", "changelog.restore_value", "store.open"])
def test_an_operation_on_a_store_type_it_lacks_is_absent(op: str) -> None:
    assert _skip(op, {"store_type": "versioned_kv_with_headers", "key": "6b"}) == (
        ABSENT, "versioned_kv_with_headers store")


@pytest.mark.parametrize("payload", [{"store_type": "versioned_kv"}, {"store_type": "no_such_type"}, {}])
def test_an_operation_on_a_type_it_declares_or_the_spec_does_not_know_stays_unsupported(
        payload: dict[str, Any]) -> None:
    assert _skip("changelog.record_for_write", payload) == (UNSUPPORTED, "changelog.record_for_write")
