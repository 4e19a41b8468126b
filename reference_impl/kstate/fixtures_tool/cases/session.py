"""Session store keys: end-first layouts, null keys, window checks, range-bound quirks, segments by end (SESS-*)."""

from __future__ import annotations

from kstate.fixtures_tool import CaseSpec

LONG_MAX = (1 << 63) - 1
LONG_MIN = -(1 << 63)
SCHEMAS = ("key_schema", "time_first", "key_first")


def cases() -> list[CaseSpec]:
    return _encoding() + _decoding() + _ranges() + _conversions() + _windowed() + _segments()


def _encoding() -> list[CaseSpec]:
    # Keys of invalid windows are left to the recorded vectors (marked lenient there): SESS-5 only
    # recommends writing them. A null key with an invalid window is refused by two schemas regardless.
    out: list[CaseSpec] = []
    for schema in SCHEMAS:
        op = f"session.{schema}.to_binary"
        for name, key, start, end in [
            ("end_before_start_in_bytes", "6b6579", 5, 10),
            ("single_record_session", "6b", 7, 7),
            ("empty_key", "", 0, LONG_MAX),
            ("null_key", None, 5, 10),
        ]:
            out.append(CaseSpec(f"{schema}.encode.{name}", op, {"key": key, "start": start, "end": end}))
        if schema != "time_first":
            out.append(CaseSpec(f"{schema}.encode.null_key_invalid_window", op, {"key": None, "start": 10, "end": 5},
                                ("SESS-6",)))
    return out


def _decoding() -> list[CaseSpec]:
    out: list[CaseSpec] = []
    suffix = "000000000000000a" + "0000000000000005"  # end 10, start 5
    for schema, prefix in (("key_schema", ""), ("time_first", "00"), ("key_first", "01")):
        op = f"session.{schema}.extract"
        exact = prefix + suffix
        out.append(CaseSpec(f"{schema}.decode.exact_fixed_part", op, {"bytes": exact}, ("SESS-4",)))
        out.append(CaseSpec(f"{schema}.decode.one_byte_short", op, {"bytes": exact[2:]}, ("SESS-4",)))
        out.append(CaseSpec(f"{schema}.decode.empty", op, {"bytes": ""}, ("SESS-4",)))
        swapped = prefix + "0000000000000005" + "000000000000000a"
        out.append(CaseSpec(f"{schema}.decode.start_after_end_window_refused", op, {"bytes": swapped}, ("SESS-4",)))
        equal = prefix + "0000000000000007" + "0000000000000007"
        out.append(CaseSpec(f"{schema}.decode.start_equals_end_valid", op, {"bytes": equal}, ("SESS-4",)))
        negative = prefix + "0000000000000000" + "ffffffffffffffff"
        out.append(CaseSpec(f"{schema}.decode.negative_start_window_refused", op, {"bytes": negative}, ("SESS-4",)))
    out.append(CaseSpec("key_schema.decode.key_from_the_end", "session.key_schema.extract",
                        {"bytes": "6b6579" + suffix}, ("SESS-1", "SESS-4")))
    out.append(CaseSpec("time_first.decode.key_at_the_end", "session.time_first.extract",
                        {"bytes": "00" + suffix + "6b6579"}, ("SESS-2", "SESS-4")))
    return out


def _ranges() -> list[CaseSpec]:
    out: list[CaseSpec] = []
    for schema in SCHEMAS:
        op = f"session.{schema}.ranges"
        for name, key, time in [
            ("null_key", None, 10),
            ("null_key_negative_time", None, -1),
            ("empty_key", "", 10),
            ("key_bytes_below_7f_dropped", "807f00ff", 10),
            ("key_bytes_all_above_7f_kept", "80ff7f", 10),
            ("negative_time", "6b6579", -5),
            ("time_max", "6b6579", LONG_MAX),
            ("time_min", "6b6579", LONG_MIN),
        ]:
            out.append(CaseSpec(f"{schema}.ranges.{name}", op, {"key": key, "time": time}))
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
    for schema, prefix in (("key_schema", ""), ("time_first", "00"), ("key_first", "01")):
        for name, start, end, interval in [("by_end_not_start", 5, 25, 10), ("end_on_segment_edge", 0, 30, 10),
                                           ("long_session", 0, 1700000000000, 43200000)]:
            times = end.to_bytes(8, "big").hex() + start.to_bytes(8, "big").hex()
            data = (prefix + times + "6b") if schema == "time_first" else (prefix + "6b" + times)
            out.append(CaseSpec(f"{schema}.segment_id.{name}", f"session.{schema}.segment_id",
                                {"bytes": data, "segment_interval": interval}))
    return out
