"""Session store keys: end-first layouts, null keys, window checks, range-bound quirks, segments by end (SESS-*)."""

from __future__ import annotations

from kstate.codecs import session_keys as sk
from kstate.fixtures_tool import CaseSpec
from kstate.fixtures_tool.cases.changelog import (
    AGG_HDR,
    headers_restore_cases,
    plain_restore_cases,
    topic_config_case,
    write_case,
)
from kstate.fixtures_tool.cases.layout import column_family_case, store_paths_case
from kstate.fixtures_tool.key_schema_cases import schema_cases, short_input_cases, store_key_hex

LONG_MAX = (1 << 63) - 1
LONG_MIN = -(1 << 63)
END_10_START_5 = "000000000000000a" + "0000000000000005"


def cases() -> list[CaseSpec]:
    return _encoding() + _decoding() + _ranges() + _conversions() + _windowed() + _segments()


def _encoding() -> list[CaseSpec]:
    # Keys of invalid windows are left to the recorded vectors (marked lenient there): SESS-5 only
    # recommends writing them. A null key with an invalid window is refused by two schemas regardless.
    out: list[CaseSpec] = []
    for schema in sk.SCHEMAS:
        out += schema_cases(schema, "to_binary", "encode", ("key", "start", "end"), [
            ("end_before_start_in_bytes", "6b6579", 5, 10),
            ("single_record_session", "6b", 7, 7),
            ("empty_key", "", 0, LONG_MAX),
            ("null_key", None, 5, 10),
        ])
        if not schema.accepts_null_key:
            out += schema_cases(schema, "to_binary", "encode", ("key", "start", "end"),
                                [("null_key_invalid_window", None, 10, 5)], ("SESS-6",))
    return out


def _decoding() -> list[CaseSpec]:
    out: list[CaseSpec] = []
    for schema in sk.SCHEMAS:
        out += short_input_cases(schema, "extract", _key_hex(schema, "", 5, 10), ("SESS-4",))
        out += schema_cases(schema, "extract", "decode", ("bytes",), [
            ("start_after_end_window_refused", _key_hex(schema, "", 10, 5)),
            ("start_equals_end_valid", _key_hex(schema, "", 7, 7)),
            ("negative_start_window_refused", _key_hex(schema, "", -1, 0)),
        ], ("SESS-4",))
    out.append(CaseSpec("key_schema.decode.key_from_the_end", "session.key_schema.extract",
                        {"bytes": "6b6579" + END_10_START_5}, ("SESS-1", "SESS-4")))
    out.append(CaseSpec("time_first.decode.key_at_the_end", "session.time_first.extract",
                        {"bytes": "00" + END_10_START_5 + "6b6579"}, ("SESS-2", "SESS-4")))
    return out


def _ranges() -> list[CaseSpec]:
    out: list[CaseSpec] = []
    for schema in sk.SCHEMAS:
        out += schema_cases(schema, "ranges", "ranges", ("key", "time"), [
            ("null_key", None, 10),
            ("null_key_negative_time", None, -1),
            ("empty_key", "", 10),
            ("key_bytes_below_7f_dropped", "807f00ff", 10),
            ("key_bytes_all_above_7f_kept", "80ff7f", 10),
            ("negative_time", "6b6579", -5),
            ("time_max", "6b6579", LONG_MAX),
            ("time_min", "6b6579", LONG_MIN),
        ])
    return out


def _conversions() -> list[CaseSpec]:
    out: list[CaseSpec] = []
    for name, data in [
        ("empty_key", "000000000000000a" + "0000000000000005"),
        ("with_key", "6b6579" + "000000000000000a" + "0000000000000005"),
        ("fifteen_bytes", "000000000000000a" + "00000000000005"),
        ("empty", ""),
    ]:
        out.append(CaseSpec(f"time_first.from_non_prefix.{name}",
                            "session.time_first.extract_window_bytes_from_non_prefix_session_key", {"bytes": data}))
        if len(data) >= 32:  # shorter input: Kafka prefixes it anyway, which SESS-9 only recommends
            out.append(CaseSpec(f"key_first.from_non_prefix.{name}",
                                "session.key_first.prefix_non_prefix_session_key", {"bytes": data}))
    return out


def _windowed() -> list[CaseSpec]:
    return [
        CaseSpec(f"windowed.{name}", "session.to_binary_windowed", {"key": key, "start": start, "end": end})
        for name, key, start, end in [
            ("plain", "6b6579", 5, 10),
            ("single_record", "", 3, 3),
            ("null_key", None, 5, 10),
            ("end_before_start_refused", "6b", 10, 5),
            ("negative_start_refused", "6b", -1, 5),
        ]
    ]


def _segments() -> list[CaseSpec]:
    out: list[CaseSpec] = []
    for name, retention in [("zero", 0), ("small", 100000), ("day", 86400000), ("odd", 120003), ("negative", -1)]:
        out.append(CaseSpec(f"segment_interval.{name}", "session.segment_interval", {"retention": retention}))
    for schema in sk.SCHEMAS:
        out += schema_cases(schema, "segment_id", "segment_id", ("bytes", "segment_interval"), [
            (name, _key_hex(schema, "6b", start, end), interval)
            for name, start, end, interval in [("by_end_not_start", 5, 25, 10), ("end_on_segment_edge", 0, 30, 10),
                                               ("long_session", 0, 1700000000000, 43200000)]
        ])
    return out


def _key_hex(schema: sk.SessionSchema, key: str, start: int, end: int) -> str:
    # Built by hand from the layouts, end first (SESS-1..3), so that a case's input does not depend on the reference.
    return store_key_hex(schema, key, (end & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "big").hex()
                         + (start & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "big").hex())


# --- the family's parts of the files over every family (changelog, layout) ------------------------------------------

TOPIC_CONFIG_RULES = ("CL-16",)


def changelog_write_cases() -> list[CaseSpec]:
    return [
        write_case("put", "session", "put", ("CL-7",), value="616767", start=10, end=20),
        write_case("remove", "session", "remove", ("CL-7",), start=10, end=20),
        write_case("put", "session_with_headers", "put", ("CL-8",), value=AGG_HDR, start=1, end=2),
        write_case("remove", "session_with_headers", "remove", ("CL-8",), start=1, end=2),
    ]


def changelog_restore_cases() -> list[CaseSpec]:
    return plain_restore_cases("session") + headers_restore_cases("session_with_headers")


def changelog_topic_config_cases() -> list[CaseSpec]:
    return [
        topic_config_case("session", store_type="session", retention_ms=0),
        topic_config_case("session_headers", store_type="session_with_headers", retention_ms=86400000),
    ]


def layout_store_path_cases() -> list[CaseSpec]:
    return [store_paths_case("session"), store_paths_case("session_with_headers")]


def layout_column_family_cases() -> list[CaseSpec]:
    return [
        column_family_case("fresh", "session", {}, ("LAY-5",)),
        column_family_case("fresh", "session_with_headers", {}, ("LAY-5",)),
        column_family_case("legacy_data", "session_with_headers", {"default": True}, ("LAY-7",)),
        column_family_case("unknown_cf_refused", "session", {"default": True, "__offsets": False}, ("LAY-8",)),
    ]
