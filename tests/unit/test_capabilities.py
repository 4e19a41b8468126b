"""``store.capabilities`` parsed once into one type (OPS-1, issue 33): absent means not offered, a malformed field is
a typed error naming it, the legacy store-type alias is one type, and nothing else in the suite reads the answer."""

from __future__ import annotations

import ast
import dataclasses
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


#: The harness modules: the type itself, and the Kit whose require() takes a feature by its OPS-1 name.
HARNESS = {"conformance/kstate_conformance/capabilities.py", "conformance/kstate_conformance/harness.py"}
FIELDS = {f.name for f in dataclasses.fields(Capabilities)} - {"answer"}
#: Keys of the answer that name nothing else in the suite (``dump``, ``offsets``, ``logging`` also name column
#: families and store options, so a subscript by them is no capability read).
ANSWER_ONLY_KEYS = {"store_types", "store_backends", "backends", "cache_flush_listener", "iterators", "upgrade"}


def string_reads(source: str) -> list[str]:
    """The places of ``source`` that read a capability by its name instead of its attribute: ``offers_feature("x")``,
    ``getattr(caps, "x")``, ``.answer`` (kept for reports only), or a subscript or ``.get`` by a key only an answer
    has (``["store_types"]``)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            key = node.args[0] if node.args else None
            if name == "offers_feature":
                found.append(f"line {node.lineno}: offers_feature")
            elif (name == "getattr" and len(node.args) >= 2 and "cap" in ast.unparse(node.args[0]).lower()
                  and isinstance(node.args[1], ast.Constant) and node.args[1].value in FIELDS):
                found.append(f"line {node.lineno}: getattr {node.args[1].value}")
            elif name == "get" and isinstance(key, ast.Constant) and key.value in ANSWER_ONLY_KEYS:
                found.append(f"line {node.lineno}: .get({key.value!r})")
        elif isinstance(node, ast.Attribute) and node.attr == "answer" and "cap" in ast.unparse(node.value).lower():
            found.append(f"line {node.lineno}: .answer")
        elif (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
              and node.slice.value in ANSWER_ONLY_KEYS):
            found.append(f"line {node.lineno}: [{node.slice.value!r}]")
    return found


def test_no_code_outside_the_harness_reads_a_capability_by_string() -> None:
    """Outside the harness modules the suite reads ``caps.dump``, ``caps.offers(...)``, ``caps.lacks(...)``: a typo or
    a field the type does not have is then a mypy error, not a silent "not offered" (issue 33)."""
    readers: dict[str, list[str]] = {}
    for folder in ("conformance", "benchmarks", "system_tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative not in HARNESS:
                found = string_reads(path.read_text(encoding="utf-8"))
                if found:
                    readers[relative] = found
    assert readers == {}


@pytest.mark.parametrize("line", [
    'if caps.offers_feature("dump", backend): pass',
    'crash = getattr(self.capabilities, "crash")',
    'types = capabilities_of(impl).answer["store_types"]',
    'types = implementation.call("store.capabilities", {})["store_types"]',
    'where = answer.get("store_backends", {})',
])
def test_the_string_read_check_catches_each_kind_of_read(line: str) -> None:
    assert string_reads(line), line


def test_the_string_read_check_leaves_attributes_and_column_families_alone() -> None:
    assert string_reads('ok = caps.dump and caps.offers("kv", "rocksdb")\nrows = store.dump()["offsets"]\n'
                        'getattr(self, "upgrade")(data)') == []


def test_the_capabilities_are_parsed_once_as_the_implementation_is_loaded() -> None:
    """loading parses the answer (a malformed one is a setup error), and the suite's wrapper shares what it parsed."""
    from kstate_conformance.loading import ImplementationError, load_implementation
    from kstate_conformance.plugin import SkippingAdapter

    adapter = load_implementation("reference")
    wrapper = SkippingAdapter(adapter)
    assert capabilities_of(wrapper) is capabilities_of(adapter)
    assert not wrapper.calls, "the wrapper asked store.capabilities again"
    with pytest.raises(ImplementationError, match="store_types"):
        load_implementation(f"{__name__}:malformed")


class _Malformed(ImplementationAdapter):
    name = "malformed"

    def supports(self, op: str) -> bool:
        return op == "store.capabilities"

    def call(self, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"store_types": "kv"}


def malformed() -> ImplementationAdapter:
    """A ``module:factory`` whose ``store.capabilities`` answer is not OPS-1's shape."""
    return _Malformed()
