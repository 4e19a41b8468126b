"""Changelog records per store type, restore conversions and changelog topics (CL-*)."""

from __future__ import annotations

from typing import Any

from kstate.codecs.store_types import (
    STORE_TYPES,
    RestoreConversion,
    Source,
    StoreType,
    UnknownFamilyError,
    family_of,
)
from kstate.fixtures_tool import CaseSpec
from kstate.fixtures_tool.cases import family_cases, family_module

CTX = {"timestamp": 1000, "headers": [["trace", "01"], ["dup", None], ["dup", "02"]]}
TS_VALUE = "0000000000000005" + "7631"  # [ts=5]["v1"]
AGG_HDR = "0a" + "0202610278" + "616767"  # [a="x"] + "agg"
POSITION = [["in", [[0, 5]]]]
#: A record with headers, one of them twice, restored by each conversion (CL-9 to CL-11).
RESTORED_HEADERS = [["a", "78"], ["n", None], ["a", "79"]]
RESTORED = {"key": "6b", "value": "7631", "timestamp": 77, "headers": RESTORED_HEADERS}
RESTORED_TOMBSTONE = {**RESTORED, "value": None}


def vth(headers_hex: str, ts: int, value_hex: str) -> str:
    """``[varint hsize][headers][timestamp][value]``: a timestamped value with headers (CL-8)."""
    size = len(headers_hex) // 2
    return bytes([size << 1]).hex() + headers_hex + f"{ts:016x}" + value_hex


#: The headers value each family's headers types write: headers [a="x"], ts 7, "v2" (CL-8).
VTH = vth("0202610278", 7, "7632")

#: The families' parts of this file: each family's cases module defines these functions (issue 33).
WRITE_CASES, RESTORE_CASES, TOPIC_CONFIG_CASES = "changelog_write_cases", "changelog_restore_cases", "changelog_topic_config_cases"
#: The rule a family's ``changelog.topic_config`` cases cite, a constant of its cases module (CL-15 to CL-17).
TOPIC_CONFIG_RULES = "TOPIC_CONFIG_RULES"


def cases() -> list[CaseSpec]:
    return write_cases() + restore_cases() + consistency_cases() + topic_cases()


def write_case(name: str, store_type: str, operation: str, rules: tuple[str, ...], **fields: Any) -> CaseSpec:
    """Case ``write_<store type>_<name>``: the record of one write under :data:`CTX` (``fields`` added or replaced)."""
    payload: dict[str, Any] = {"store_type": store_type, "operation": operation, "key": "6b", "context": CTX}
    payload.update(fields)
    return CaseSpec(f"write_{store_type}_{name}", "changelog.record_for_write", payload, rules)


def _type_info(case: CaseSpec) -> Any:
    return STORE_TYPES[StoreType.parse(case.input["store_type"])]


def _write_order(case: CaseSpec) -> tuple[int, bool, int]:
    """The spec's order: the plain types' records (CL-3 to CL-7), then the headers types' (CL-8), each in the
    table's order, then the records with consistency headers (CL-12), then the refused writes (CL-1)."""
    if "CL-12" in case.rules:
        return (1, False, 0)
    if "CL-1" in case.rules:
        return (2, False, 0)
    info = _type_info(case)
    return (0, info.stores_headers, list(StoreType).index(info.store_type))


def write_cases() -> list[CaseSpec]:
    """Every family's write cases (its cases module's ``changelog_write_cases``), in :func:`_write_order`."""
    return sorted(family_cases(WRITE_CASES), key=_write_order)


def restore_case(name: str, store_type: str, record: dict[str, Any], rules: tuple[str, ...]) -> CaseSpec:
    """Case ``restore_<store type>_<name>``: the value restoring ``record`` writes."""
    return CaseSpec(f"restore_{store_type}_{name}", "changelog.restore_value", {"store_type": store_type, "record": record}, rules)


def plain_restore_cases(store_type: str) -> list[CaseSpec]:
    """A type restoring the record's value as it is (CL-9): a value and a tombstone."""
    return [restore_case("value", store_type, RESTORED, ("CL-9",)),
            restore_case("tombstone", store_type, RESTORED_TOMBSTONE, ("CL-9",))]


def timestamped_restore_cases(store_type: str) -> list[CaseSpec]:
    """A type putting the record's timestamp before its value (CL-10)."""
    return [restore_case("value", store_type, RESTORED, ("CL-10",)),
            restore_case("empty_value", store_type, {**RESTORED, "value": ""}, ("CL-10",)),
            restore_case("tombstone", store_type, RESTORED_TOMBSTONE, ("CL-10",)),
            restore_case("no_timestamp", store_type, {**RESTORED, "timestamp": -1}, ("CL-10",))]


def headers_restore_cases(store_type: str) -> list[CaseSpec]:
    """A type putting the record's headers in its value (CL-11), consistency headers kept (CL-18)."""
    with_vc = {"key": "6b", "value": "7631", "timestamp": 77, "headers": [["a", "78"], ["v", "00"], ["c", "00" * 40]]}
    return [restore_case("value", store_type, RESTORED, ("CL-11",)),
            restore_case("no_headers", store_type, {**RESTORED, "headers": []}, ("CL-11",)),
            restore_case("tombstone", store_type, RESTORED_TOMBSTONE, ("CL-11",)),
            restore_case("consistency_headers_kept", store_type, with_vc, ("CL-18",))]


def _restore_order(case: CaseSpec) -> tuple[int, bool, int]:
    """By the conversion the restore applies (CL-9 to CL-11); of one conversion, the types whose record timestamp
    is the version's (they also answer it, VS-27) after the others; each in the table's order."""
    info = _type_info(case)
    versioned = info.changelog is not None and info.changelog.timestamp is Source.VERSION
    return (list(RestoreConversion).index(info.restore), versioned, list(StoreType).index(info.store_type))


def restore_cases() -> list[CaseSpec]:
    """Every family's restore cases (its cases module's ``changelog_restore_cases``), in :func:`_restore_order`."""
    return sorted(family_cases(RESTORE_CASES), key=_restore_order)


def consistency_cases() -> list[CaseSpec]:
    def apply(name: str, headers: list[list[Any]] | None, enabled: bool = True, rules: tuple[str, ...] = ("CL-13",)) -> CaseSpec:
        return CaseSpec(f"apply_consistency_{name}", "changelog.apply_consistency",
                        {"position": [["in", [[0, 9], [1, 1]]]], "headers": headers, "enabled": enabled}, rules)

    c_hex = "00" + "00000001" + "00000002" + "696e" + "00000002" + "00000000" + f"{4:016x}" + "00000001" + f"{8:016x}"
    return [
        CaseSpec("consistency_headers_empty", "changelog.consistency_headers", {"position": []}, ("CL-12",)),
        CaseSpec("consistency_headers_one", "changelog.consistency_headers", {"position": POSITION}, ("CL-12",)),
        apply("v0_merges", [["v", "00"], ["c", c_hex]]),
        apply("disabled", [["v", "00"], ["c", c_hex]], enabled=False),
        apply("no_version", [["c", c_hex]]),
        apply("future_version_ignored", [["v", "01"], ["c", c_hex]]),
        apply("v0_without_c_refused", [["v", "00"]]),
        apply("v0_null_c_refused", [["v", "00"], ["c", None]]),
        apply("empty_version_refused", [["v", ""], ["c", c_hex]]),
        apply("null_version_refused", [["v", None]]),
        apply("last_v_wins", [["v", "00"], ["v", "02"]]),
        apply("v_first_byte_only", [["v", "0099"], ["c", c_hex]]),
        apply("last_c_wins", [["v", "00"], ["c", "7f"], ["c", c_hex]]),
        apply("corrupt_c_refused", [["v", "00"], ["c", "7f"]]),
    ]


def topic_config_rules(store_type: str) -> tuple[str, ...]:
    """The rule a ``changelog.topic_config`` case of ``store_type`` cites, by its family (CL-15 to CL-17), from the
    family's cases module; :class:`UnknownStoreTypeError` or :class:`UnknownFamilyError` where the table or the
    family's module lacks it."""
    family = family_of(StoreType.parse(store_type))
    rules: tuple[str, ...] | None = getattr(family_module(family, TOPIC_CONFIG_RULES), TOPIC_CONFIG_RULES, None)
    if rules is None:
        raise UnknownFamilyError(family, "the changelog topic configuration rules")
    return rules


def topic_config_case(case: str, **payload: Any) -> CaseSpec:
    """Case ``topic_config_<case>``: the topic configuration of a store of ``payload["store_type"]``."""
    return CaseSpec(f"topic_config_{case}", "changelog.topic_config", payload, topic_config_rules(payload["store_type"]))


def topic_cases() -> list[CaseSpec]:
    """The topic names, then every family's topic configurations (``changelog_topic_config_cases``) by their rule."""
    def name(case: str, app: str, store: str, named: str | None = None) -> CaseSpec:
        payload: dict[str, Any] = {"application_id": app, "store_name": store}
        if named is not None:
            payload["named_topology"] = named
        return CaseSpec(f"topic_name_{case}", "changelog.topic_name", payload, ("CL-14",))

    return [
        name("plain", "app", "store"),
        name("named_topology", "app", "store", "topo"),
        name("illegal_char", "my app", "store"),
        name("too_long", "a" * 240, "store"),
        name("max_length", "a" * (249 - len("-s-changelog")), "s"),
        *sorted(family_cases(TOPIC_CONFIG_CASES), key=lambda case: case.rules),
    ]
