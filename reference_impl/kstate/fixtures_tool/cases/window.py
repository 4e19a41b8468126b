"""Window store keys: layouts, decoding limits, window overflow, range-bound quirks, seqnums, segments (WIN-*)."""

from __future__ import annotations

from kstate.codecs import window_keys as wk
from kstate.fixtures_tool import CaseSpec
from kstate.fixtures_tool.cases.changelog import (
    TS_VALUE,
    VTH,
    headers_restore_cases,
    plain_restore_cases,
    timestamped_restore_cases,
    topic_config_case,
    write_case,
)
from kstate.fixtures_tool.cases.layout import column_family_case, segment_paths_case, store_paths_case
from kstate.fixtures_tool.key_schema_cases import schema_cases, short_input_cases, store_key_hex

LONG_MAX = (1 << 63) - 1
LONG_MIN = -(1 << 63)
INT_MAX = (1 << 31) - 1
INT_MIN = -(1 << 31)


def cases() -> list[CaseSpec]:
    return (_store_keys() + _decoding() + _windows() + _ranges() + _conversions() + _pipe_serde()
            + _seqnums_and_segments())


def _store_keys() -> list[CaseSpec]:
    out: list[CaseSpec] = []
    for schema in wk.SCHEMAS:
        out += schema_cases(schema, "to_store_key_binary", "encode", ("key", "timestamp", "seqnum"), [
            ("empty_key", "", 0, 0),
            ("key_ts_seq", "6b6579", 1700000000000, 1),
            ("ts_minus_one", "01", -1, 0),
            ("ts_extremes_min", "ff", LONG_MIN, INT_MIN),
            ("ts_extremes_max", "ff", LONG_MAX, INT_MAX),
            ("negative_seq_bit_pattern", "00", 5, -1),
        ])
        out += schema_cases(schema, "to_store_key_binary", "encode", ("key", "timestamp", "seqnum"),
                            [("null_key", None, 0, 0)], ("WIN-7",))
    return out


def _decoding() -> list[CaseSpec]:
    # Wrong prefix bytes are left out: Kafka accepts them, the spec only recommends doing the same (WIN-4).
    out: list[CaseSpec] = []
    for schema in wk.SCHEMAS:
        out += short_input_cases(schema, "extract_store_key", _store_key_hex(schema, "", 5, 2), ("WIN-4",))
    # A key whose bytes look like a timestamp: only the positions decide.
    out.append(CaseSpec("key_schema.decode.key_from_the_end", "window.key_schema.extract_store_key",
                        {"bytes": "7fffffffffffffff" + "0000018bcfe56800" + "7fffffff"}, ("WIN-1", "WIN-4")))
    out.append(CaseSpec("time_first.decode.key_in_the_middle", "window.time_first.extract_store_key",
                        {"bytes": "00" + "0000018bcfe56800" + "6b6579" + "00000003"}, ("WIN-2", "WIN-4")))
    for data in ("", "00", "01", "0100", "ff"):
        out.append(CaseSpec(f"is_time_first.{data or 'empty'}", "window.is_time_first_schema_key", {"bytes": data}))
    return out


def _windows() -> list[CaseSpec]:
    out: list[CaseSpec] = []
    for name, start, size in [
        ("size_zero_refused", 0, 0),
        ("size_long_max", 0, LONG_MAX),
        ("overflow_to_long_max", 1, LONG_MAX),
        ("overflow_equal_start_refused", LONG_MAX, 1),
        ("negative_start_refused", -1, 5000),
        ("negative_size_wraps_negative_becomes_max", 5, -10),
        ("negative_size_end_before_start_refused", 10, -5),
        ("long_min_size", 0, LONG_MIN),
        ("plain", 1700000000000, 60000),
    ]:
        for schema in wk.SCHEMAS:
            key = _store_key_hex(schema, "6b", start, 7)
            out += schema_cases(schema, "extract_store_window", "window", ("bytes", "window_size"), [(name, key, size)],
                                ("WIN-8", "WIN-9"))
    return out


def _ranges() -> list[CaseSpec]:
    out: list[CaseSpec] = []
    for schema in wk.SCHEMAS:
        out += schema_cases(schema, "ranges", "ranges", ("key", "time"), [
            ("null_key", None, 10),
            ("empty_key", "", 10),
            ("key_bytes_below_first_ts_byte", "807f00ff", LONG_MIN),
            ("first_ts_byte_zero_keeps_all", "807f00ff", 0),
            ("key_bytes_equal_first_ts_byte", "0101010001", 1 << 56),
            ("negative_time", "6b6579", -5),
            ("time_max", "6b6579", LONG_MAX),
        ])
    return out


def _conversions() -> list[CaseSpec]:
    out: list[CaseSpec] = []
    for schema in (wk.TIME_FIRST, wk.KEY_FIRST):
        out += schema_cases(schema, "from_non_prefix_window_key", "from_non_prefix", ("bytes",), [
            ("empty_key", "0000000000000005" + "00000001"),
            ("with_key", "6b6579" + "0000018bcfe56800" + "7fffffff"),
        ], ("WIN-12",))
    # Short input: time-first must refuse it. (Key-first prefixes anything in Kafka, which the spec only
    # recommends, so those cases stay with the recorded vectors where they are marked lenient.)
    for name, data in [("eleven_bytes", "0000000000000005" + "000000"), ("empty", "")]:
        out.append(CaseSpec(f"time_first.from_non_prefix.{name}", "window.time_first.from_non_prefix_window_key",
                            {"bytes": data}, ("WIN-12",)))
    return out


def _pipe_serde() -> list[CaseSpec]:
    out = [
        CaseSpec("to_binary.plain", "window.key_schema.to_binary",
                 {"key": "6b6579", "window_start": 5, "window_end": 15}),
        CaseSpec("to_binary.empty_key", "window.key_schema.to_binary", {"key": "", "window_start": 0, "window_end": 1}),
        CaseSpec("to_binary.null_key", "window.key_schema.to_binary", {"key": None, "window_start": 0, "window_end": 1},
                 ("WIN-7",)),
        CaseSpec("to_binary.empty_window_refused", "window.key_schema.to_binary",
                 {"key": "6b", "window_start": 5, "window_end": 5}, ("WIN-8",)),
        CaseSpec("to_binary.negative_start_refused", "window.key_schema.to_binary",
                 {"key": "6b", "window_start": -1, "window_end": 5}, ("WIN-8",)),
    ]
    for name, data, size in [
        ("plain", "6b6579" + "0000000000000005", 10),
        ("overflow", "0000000000000005", LONG_MAX),
        ("seven_bytes", "00000000000005", 10),
        ("empty", "", 10),
        ("negative_start", "ffffffffffffffff", 10),
    ]:
        out.append(CaseSpec(f"from_binary.{name}", "window.key_schema.from_binary", {"bytes": data, "window_size": size}))
    return out


def _seqnums_and_segments() -> list[CaseSpec]:
    out: list[CaseSpec] = []
    for seq, dups in [(0, False), (7, False), (0, True), (1, True), (INT_MAX, True), (INT_MAX - 1, True)]:
        out.append(CaseSpec(f"next_seqnum.{seq}.{'dups' if dups else 'no_dups'}", "window.next_seqnum",
                            {"seqnum": seq, "retain_duplicates": dups}))
    for name, retention, size, interval in [
        ("default_floor", 0, 0, None),
        ("default_half", 86400000, 60000, None),
        ("default_odd_truncates", 120003, 0, None),
        ("explicit", 1000, 10, 7),
        ("negative_retention", -1, 0, None),
        ("negative_size", 1000, -1, None),
        ("zero_interval", 1000, 10, 0),
        ("size_above_retention", 1000, 1001, None),
    ]:
        payload: dict[str, object] = {"retention": retention, "window_size": size}
        if interval is not None:
            payload["segment_interval"] = interval
        out.append(CaseSpec(f"segment_interval.{name}", "window.segment_interval", payload))
    for schema in wk.SCHEMAS:
        out += schema_cases(schema, "segment_id", "segment_id", ("bytes", "segment_interval"), [
            (name, _store_key_hex(schema, "6b", start, 0), interval)
            for name, start, interval in [("positive", 25, 10), ("boundary", 20, 10), ("negative_truncates", -1, 10),
                                          ("negative_past_interval", -11, 10), ("big", 1700000000000, 43200000)]
        ])
    return out


def _store_key_hex(schema: wk.WindowSchema, key: str, start: int, seq: int) -> str:
    # Built by hand from the layouts (WIN-1..3), so that a case's input does not depend on the reference.
    return store_key_hex(schema, key, (start & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "big").hex(),
                         (seq & 0xFFFFFFFF).to_bytes(4, "big").hex())


# --- the family's parts of the files over every family (changelog, layout) ------------------------------------------

TOPIC_CONFIG_RULES = ("CL-16",)


def changelog_write_cases() -> list[CaseSpec]:
    return [
        write_case("put", "window", "put", ("CL-6",), value="7631", window_start=60000),
        write_case("put_dups", "window", "put", ("CL-6",), value="7631", window_start=60000, seqnum=0,
                   retain_duplicates=True),
        write_case("put_null_dups", "window", "put", ("CL-6",), value=None, window_start=60000, seqnum=3,
                   retain_duplicates=True),
        write_case("put_dups_wraps", "window", "put", ("CL-6",), value="7631", window_start=0, seqnum=2147483647,
                   retain_duplicates=True),
        write_case("put_negative_start", "window", "put", ("CL-6",), value="7631", window_start=-1),
        write_case("put", "timestamped_window", "put", ("CL-6",), value=TS_VALUE, window_start=60000),
        write_case("put_null", "timestamped_window", "put", ("CL-6",), value=None, window_start=60000),
        write_case("put", "timestamped_window_with_headers", "put", ("CL-8",), value=VTH, window_start=120000),
        write_case("put_null", "timestamped_window_with_headers", "put", ("CL-8",), value=None, window_start=120000),
        write_case("undefined_operation", "window", "delete", ("CL-1",)),
    ]


def changelog_restore_cases() -> list[CaseSpec]:
    return (plain_restore_cases("window") + timestamped_restore_cases("timestamped_window")
            + headers_restore_cases("timestamped_window_with_headers"))


def changelog_topic_config_cases() -> list[CaseSpec]:
    return [
        topic_config_case("window", store_type="window", retention_ms=3600000),
        topic_config_case("window_saturates", store_type="timestamped_window", retention_ms=9223372036854775807),
        topic_config_case("window_custom_additional", store_type="window", retention_ms=1000, additional_retention_ms=0),
        topic_config_case("window_user_retention", store_type="window", retention_ms=1000,
                          log_config={"retention.ms": "5"}),
        topic_config_case("window_topic_default_retention_overwritten", store_type="window", retention_ms=1000,
                          topic_defaults={"retention.ms": "5"}),
        topic_config_case("window_retain_duplicates", store_type="window", retention_ms=1000, retain_duplicates=True),
        topic_config_case("window_retain_duplicates_log_config_replaced", store_type="window", retention_ms=1000,
                          retain_duplicates=True, log_config={}),
        topic_config_case("timestamped_window_retain_duplicates", store_type="timestamped_window", retention_ms=1000,
                          retain_duplicates=True),
    ]


def layout_store_path_cases() -> list[CaseSpec]:
    return [*(store_paths_case(t) for t in ("window", "timestamped_window", "timestamped_window_with_headers")),
            segment_paths_case("window_segment", "window", "w", ("LAY-3",))]


def layout_column_family_cases() -> list[CaseSpec]:
    return [
        column_family_case("segment_from_timestamped", "timestamped_window_with_headers",
                           {"default": False, "keyValueWithTimestamp": True}, ("LAY-8",)),
        column_family_case("fresh", "window", {}, ("LAY-5",)),
        column_family_case("fresh", "timestamped_window", {}, ("LAY-5",)),
        column_family_case("legacy_data", "time_ordered_window_with_headers", {"default": True, "offsets": False},
                           ("LAY-5", "LAY-7")),
    ]
