"""Changelog records per store type, restore conversions and changelog topics (CL-*)."""

from __future__ import annotations

from typing import Any

from kstate.codecs.store_types import Family, StoreType, UnknownFamilyError, family_of
from kstate.fixtures_tool import CaseSpec

CTX = {"timestamp": 1000, "headers": [["trace", "01"], ["dup", None], ["dup", "02"]]}
TS_VALUE = "0000000000000005" + "7631"  # [ts=5]["v1"]
AGG_HDR = "0a" + "0202610278" + "616767"  # [a="x"] + "agg"
POSITION = [["in", [[0, 5]]]]


def _vth(headers_hex: str, ts: int, value_hex: str) -> str:
    size = len(headers_hex) // 2
    return bytes([size << 1]).hex() + headers_hex + f"{ts:016x}" + value_hex


def cases() -> list[CaseSpec]:
    return write_cases() + restore_cases() + consistency_cases() + topic_cases()


def _write(name: str, store_type: str, operation: str, rules: tuple[str, ...], **fields: Any) -> CaseSpec:
    payload: dict[str, Any] = {"store_type": store_type, "operation": operation, "key": "6b", "context": CTX}
    payload.update(fields)
    return CaseSpec(f"write_{store_type}_{name}", "changelog.record_for_write", payload, rules)


def write_cases() -> list[CaseSpec]:
    vth = _vth("0202610278", 7, "7632")  # headers [a="x"], ts 7, "v2"
    vth_no_headers = _vth("", 9, "")
    return [
        _write("put", "kv", "put", ("CL-2", "CL-3"), value="7631"),
        _write("put_empty_value", "kv", "put", ("CL-3",), value=""),
        _write("put_null", "kv", "put", ("CL-3",), value=None),
        _write("put_if_absent_absent", "kv", "put_if_absent", ("CL-3",), value="7631", previous=None),
        _write("put_if_absent_present", "kv", "put_if_absent", ("CL-3",), value="7631", previous="7630"),
        _write("put_if_absent_null_value", "kv", "put_if_absent", ("CL-3",), value=None, previous=None),
        _write("delete", "kv", "delete", ("CL-3",)),
        _write("negative_context_ts", "kv", "put", ("CL-2",), value="7631", context={"timestamp": -1}),
        _write("put", "timestamped_kv", "put", ("CL-4",), value=TS_VALUE),
        _write("put_ts_zero", "timestamped_kv", "put", ("CL-4",), value="0000000000000000"),
        _write("put_negative_stored_ts", "timestamped_kv", "put", ("CL-2", "CL-4"), value="ffffffffffffffff7631"),
        _write("put_null", "timestamped_kv", "put", ("CL-4",), value=None),
        _write("put_short_value", "timestamped_kv", "put", ("CL-4",), value="0000"),
        _write("delete", "timestamped_kv", "delete", ("CL-4",)),
        _write("put_if_absent_absent", "timestamped_kv", "put_if_absent", ("CL-4",), value=TS_VALUE, previous=None),
        _write("put_if_absent_present", "timestamped_kv", "put_if_absent", ("CL-4",), value=TS_VALUE, previous=TS_VALUE),
        _write("put", "versioned_kv", "put", ("CL-5",), value="7631", timestamp=42),
        _write("put_expired_still_logged", "versioned_kv", "put", ("CL-5",), value="7631", timestamp=0),
        _write("delete", "versioned_kv", "delete", ("CL-5",), timestamp=43),
        _write("put_negative_ts", "versioned_kv", "put", ("CL-2", "CL-5"), value="7631", timestamp=-5),
        _write("put", "window", "put", ("CL-6",), value="7631", window_start=60000),
        _write("put_dups", "window", "put", ("CL-6",), value="7631", window_start=60000, seqnum=0, retain_duplicates=True),
        _write("put_null_dups", "window", "put", ("CL-6",), value=None, window_start=60000, seqnum=3, retain_duplicates=True),
        _write("put_dups_wraps", "window", "put", ("CL-6",), value="7631", window_start=0, seqnum=2147483647, retain_duplicates=True),
        _write("put_negative_start", "window", "put", ("CL-6",), value="7631", window_start=-1),
        _write("put", "timestamped_window", "put", ("CL-6",), value=TS_VALUE, window_start=60000),
        _write("put_null", "timestamped_window", "put", ("CL-6",), value=None, window_start=60000),
        _write("put", "session", "put", ("CL-7",), value="616767", start=10, end=20),
        _write("remove", "session", "remove", ("CL-7",), start=10, end=20),
        _write("put", "timestamped_kv_with_headers", "put", ("CL-8",), value=vth),
        _write("put_no_headers", "timestamped_kv_with_headers", "put", ("CL-8",), value=vth_no_headers),
        _write("put_null", "timestamped_kv_with_headers", "put", ("CL-8",), value=None),
        _write("delete", "timestamped_kv_with_headers", "delete", ("CL-8",)),
        _write("put_if_absent_present", "timestamped_kv_with_headers", "put_if_absent", ("CL-8",), value=vth, previous=vth),
        _write("put_duplicate_headers", "timestamped_kv_with_headers", "put", ("CL-8",),
               value=_vth("04" + "0261" + "0231" + "0261" + "01", 3, "")),
        _write("put", "timestamped_window_with_headers", "put", ("CL-8",), value=vth, window_start=120000),
        _write("put_null", "timestamped_window_with_headers", "put", ("CL-8",), value=None, window_start=120000),
        _write("put", "session_with_headers", "put", ("CL-8",), value=AGG_HDR, start=1, end=2),
        _write("remove", "session_with_headers", "remove", ("CL-8",), start=1, end=2),
        _write("put_consistency", "kv", "put", ("CL-12",), value="7631", consistency_position=POSITION),
        _write("put_consistency", "timestamped_kv_with_headers", "put", ("CL-12",), value=vth, consistency_position=POSITION),
        _write("delete_consistency_empty_position", "kv", "delete", ("CL-12",), consistency_position=[]),
        _write("undefined_operation", "window", "delete", ("CL-1",)),
    ]


def _restore(name: str, store_type: str, record: dict[str, Any], rules: tuple[str, ...]) -> CaseSpec:
    return CaseSpec(f"restore_{store_type}_{name}", "changelog.restore_value", {"store_type": store_type, "record": record}, rules)


def restore_cases() -> list[CaseSpec]:
    headers = [["a", "78"], ["n", None], ["a", "79"]]
    rec = {"key": "6b", "value": "7631", "timestamp": 77, "headers": headers}
    tomb = {"key": "6b", "value": None, "timestamp": 77, "headers": headers}
    with_vc = {"key": "6b", "value": "7631", "timestamp": 77, "headers": [["a", "78"], ["v", "00"], ["c", "00" * 40]]}
    out = []
    for store_type in ("kv", "window", "session", "versioned_kv"):
        out.append(_restore("value", store_type, rec, ("CL-9",)))
        out.append(_restore("tombstone", store_type, tomb, ("CL-9",)))
    for store_type in ("timestamped_kv", "timestamped_window"):
        out.append(_restore("value", store_type, rec, ("CL-10",)))
        out.append(_restore("empty_value", store_type, {**rec, "value": ""}, ("CL-10",)))
        out.append(_restore("tombstone", store_type, tomb, ("CL-10",)))
        out.append(_restore("no_timestamp", store_type, {**rec, "timestamp": -1}, ("CL-10",)))
    for store_type in ("timestamped_kv_with_headers", "timestamped_window_with_headers", "session_with_headers"):
        out.append(_restore("value", store_type, rec, ("CL-11",)))
        out.append(_restore("no_headers", store_type, {**rec, "headers": []}, ("CL-11",)))
        out.append(_restore("tombstone", store_type, tomb, ("CL-11",)))
        out.append(_restore("consistency_headers_kept", store_type, with_vc, ("CL-18",)))
    return out


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


#: The rule of each family's changelog topic configuration.
_TOPIC_CONFIG_RULES: dict[Family, tuple[str, ...]] = {
    Family.KEY_VALUE: ("CL-15",),
    Family.WINDOW: ("CL-16",),
    Family.SESSION: ("CL-16",),
    Family.VERSIONED: ("CL-17",),
}


def topic_config_rules(store_type: str) -> tuple[str, ...]:
    """The rule a ``changelog.topic_config`` case of ``store_type`` cites, by its family (CL-15 to CL-17);
    :class:`UnknownStoreTypeError` or :class:`UnknownFamilyError` where the table or this dispatch lacks it."""
    family = family_of(StoreType.parse(store_type))
    try:
        return _TOPIC_CONFIG_RULES[family]
    except KeyError as exc:
        raise UnknownFamilyError(family, "the changelog topic configuration rules") from exc


def topic_cases() -> list[CaseSpec]:
    def name(case: str, app: str, store: str, named: str | None = None) -> CaseSpec:
        payload: dict[str, Any] = {"application_id": app, "store_name": store}
        if named is not None:
            payload["named_topology"] = named
        return CaseSpec(f"topic_name_{case}", "changelog.topic_name", payload, ("CL-14",))

    def config(case: str, **payload: Any) -> CaseSpec:
        rules = topic_config_rules(payload["store_type"])
        return CaseSpec(f"topic_config_{case}", "changelog.topic_config", payload, rules)

    return [
        name("plain", "app", "store"),
        name("named_topology", "app", "store", "topo"),
        name("illegal_char", "my app", "store"),
        name("too_long", "a" * 240, "store"),
        name("max_length", "a" * (249 - len("-s-changelog")), "s"),
        config("kv", store_type="kv"),
        config("timestamped_kv_headers", store_type="timestamped_kv_with_headers"),
        config("kv_user_override", store_type="kv", log_config={"cleanup.policy": "compact,delete", "segment.ms": "1000"}),
        config("kv_topic_default", store_type="kv", topic_defaults={"min.insync.replicas": "2"}),
        config("window", store_type="window", retention_ms=3600000),
        config("window_saturates", store_type="timestamped_window", retention_ms=9223372036854775807),
        config("window_custom_additional", store_type="window", retention_ms=1000, additional_retention_ms=0),
        config("window_user_retention", store_type="window", retention_ms=1000, log_config={"retention.ms": "5"}),
        config("window_topic_default_retention_overwritten", store_type="window", retention_ms=1000,
               topic_defaults={"retention.ms": "5"}),
        config("window_retain_duplicates", store_type="window", retention_ms=1000, retain_duplicates=True),
        config("window_retain_duplicates_log_config_replaced", store_type="window", retention_ms=1000,
               retain_duplicates=True, log_config={}),
        config("timestamped_window_retain_duplicates", store_type="timestamped_window", retention_ms=1000, retain_duplicates=True),
        config("session", store_type="session", retention_ms=0),
        config("session_headers", store_type="session_with_headers", retention_ms=86400000),
        config("versioned", store_type="versioned_kv", history_retention_ms=300000),
        config("versioned_saturates", store_type="versioned_kv", history_retention_ms=9223372036854775000),
        config("versioned_user_lag", store_type="versioned_kv", history_retention_ms=1, log_config={"min.compaction.lag.ms": "0"}),
        config("versioned_ignores_additional_retention", store_type="versioned_kv", history_retention_ms=0,
               additional_retention_ms=5),
    ]
