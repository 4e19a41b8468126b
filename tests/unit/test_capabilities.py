"""``store.capabilities`` parsed once into one type (OPS-1, issue 33): absent means not offered, a malformed field is
a typed error naming it, the legacy store-type alias is one type, and nothing else in the suite reads the answer."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from kstate_conformance.adapter import ImplementationAdapter, ReferenceAdapter
from kstate_conformance.capabilities import NOTHING, Capabilities, CapabilitiesError, capabilities_of

ROOT = Path(__file__).resolve().parents[2]


def test_the_references_answer_parses_to_what_it_offers() -> None:
    caps = capabilities_of(ReferenceAdapter())
    assert caps.offers("versioned_kv", "rocksdb") and caps.offers("session_with_headers", "memory")
    assert caps.offers_feature("dump", "rocksdb") and not caps.offers_feature("dump", "memory")
    assert caps.offers_feature("caching") and caps.crash and caps.backends == ("rocksdb", "memory")


def test_absent_fields_are_not_offered_and_the_legacy_alias_is_one_type() -> None:
    caps = Capabilities.parse({"store_types": ["timestamped_kv_headers"], "backends": ["memory", "tape"]})
    assert caps.offers_store_type("timestamped_kv_with_headers") and caps.offers_store_type("timestamped_kv_headers")
    assert caps.backends == ("memory",)  # a backend the spec does not know is not offered
    assert not caps.logging and not caps.crash and not caps.offers_feature("offsets", "memory")
    assert Capabilities.parse({}) == NOTHING


@pytest.mark.parametrize(("answer", "field"), [
    ({"store_types": "kv"}, "store_types"),
    ({"backends": [1]}, "backends"),
    ({"logging": "yes"}, "logging"),
    ({"dump": True}, "dump"),
    ({"error": {"type": "X", "message": "no"}}, "refused"),
])
def test_a_malformed_answer_is_a_typed_error_naming_the_field(answer: dict[str, Any], field: str) -> None:
    with pytest.raises(CapabilitiesError, match=field):
        Capabilities.parse(answer)


def test_an_unknown_feature_is_an_error_not_a_plausible_no() -> None:
    with pytest.raises(CapabilitiesError, match="teleport"):
        NOTHING.offers_feature("teleport")


def test_capabilities_are_asked_once_per_implementation() -> None:
    class Counting(ImplementationAdapter):
        name = "counting"
        asked = 0

        def supports(self, op: str) -> bool:
            return op == "store.capabilities"

        def call(self, op: str, payload: dict[str, Any]) -> dict[str, Any]:
            self.asked += 1
            return {"store_types": ["kv"], "backends": ["memory"]}

    impl = Counting()
    assert capabilities_of(impl).offers("kv", "memory") and capabilities_of(impl).offers("kv", "memory")
    assert impl.asked == 1


def test_no_code_outside_the_capabilities_type_reads_the_answer() -> None:
    """The suite, the benchmarks and the system tests ask through :func:`capabilities_of`; only the protocol's own
    tests (which check the wire) may call the operation directly."""
    allowed = {"conformance/kstate_conformance/capabilities.py", "conformance/kstate_conformance/tests/test_hostile_input.py",
               "conformance/kstate_conformance/tests/test_testee_protocol.py"}
    readers = []
    for folder in ("conformance", "benchmarks", "system_tests"):
        for path in (ROOT / folder).rglob("*.py"):
            relative = path.relative_to(ROOT).as_posix()
            if relative not in allowed and re.search(r"\.call\(\s*[\"']store\.capabilities[\"']", path.read_text()):
                readers.append(relative)
    assert readers == []
