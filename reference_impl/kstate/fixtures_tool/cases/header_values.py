"""KIP-1271 header-aware values chosen to pin empty headers, layout order, refusals and laziness (HV-*).

Inputs that Kafka merely tolerates (HV-5, HV-14) are left to the recorded vectors and to the suite's
recommended-level tests, since a reference fixture case is always at its operation's level.
"""

from __future__ import annotations

from typing import Any

from kstate.fixtures_tool import CaseSpec

TS5 = "0000000000000005"


def cases() -> list[CaseSpec]:
    return (_header_byte_cases() + _value_cases() + _lazy_cases() + _aggregation_cases()
            + _conversion_cases() + _restore_cases())


def _header_byte_cases() -> list[CaseSpec]:
    encode: list[tuple[str, list[list[Any]] | None, tuple[str, ...]]] = [
        ("null", None, ("HV-1",)),
        ("empty", [], ("HV-1",)),
        ("empty_key_null_value", [["", None]], ("HV-1", "HV-2")),
        ("null_vs_empty_value", [["n", None], ["e", ""]], ("HV-2",)),
        ("duplicates_in_order", [["a", "31"], ["b", "32"], ["a", None], ["a", "33"]], ("HV-2",)),
        ("key_of_64_bytes", [["k" * 64, "00"]], ("HV-2",)),
        ("value_of_64_bytes", [["k", "ab" * 64]], ("HV-2",)),
        ("non_bmp_key", [["\U0001f389", "01"]], ("HV-2", "HV-4")),
        ("two_byte_and_three_byte_keys", [["\u00e9", None], ["\u65e5", None]], ("HV-4",)),
        ("consistency_headers", [["v", "00"], ["c", "00" * 4]], ("HV-2", "HV-3")),
    ]
    out = [CaseSpec(f"serialize_headers_{name}", "header_values.serialize_headers", {"headers": headers}, rules)
           for name, headers, rules in encode]
    out.append(CaseSpec("serialize_headers_count_64", "header_values.serialize_headers",
                        {"headers": [[f"h{i}", None] for i in range(64)]}, ("HV-1", "HV-2")))
    decode = [
        ("null", None, ("HV-1",)),
        ("empty", "", ("HV-1",)),
        ("explicit_zero_count", "00", ("HV-1",)),
        ("null_and_empty_values", "04026e01026500", ("HV-2",)),
        ("truncated_count", "80", ("HV-13",)),
        ("varint_too_long", "ffffffffff01", ("HV-13",)),
        ("truncated_key", "020a6162", ("HV-13",)),
        ("negative_key_length", "0201", ("HV-13",)),
        ("value_length_minus_two", "0202610300", ("HV-13",)),
        ("value_past_end", "020261087878", ("HV-13",)),
        ("huge_key_length", "02feffffff0f", ("HV-13",)),
        ("count_beyond_input", "7e02610178", ("HV-13",)),
    ]
    out += [CaseSpec(f"deserialize_headers_{name}", "header_values.deserialize_headers", {"bytes": data}, rules)
            for name, data, rules in decode]
    return out


def _value_cases() -> list[CaseSpec]:
    out: list[CaseSpec] = []
    serialize: list[tuple[str, str | None, int, list[list[Any]] | None]] = [
        ("null_value_with_headers", None, 5, [["a", "78"]]),
        ("empty_value_no_headers", "", 5, None),
        ("empty_value_empty_headers", "", -1, []),
        ("one_header", "76", 5, [["a", "78"]]),
        ("null_header_value", "76", 5, [["a", None]]),
        ("duplicate_keys", "76", 5, [["a", "31"], ["a", "32"]]),
        ("header_section_of_64_bytes", "76", 5, [["k", "00" * 60]]),
        ("ts_min", "76", -(1 << 63), None),
    ]
    for name, value, ts, headers in serialize:
        out.append(CaseSpec(f"serialize_{name}", "header_values.serialize",
                            {"value": value, "timestamp": ts, "headers": headers}, ("HV-6", "HV-7")))
    deserialize = [
        ("null", None, ("HV-7", "HV-9")),
        ("no_headers", "00" + TS5 + "76", ("HV-6", "HV-9")),
        ("empty_value", "00" + TS5, ("HV-6", "HV-7")),
        ("one_header", "0a0202610278" + TS5 + "76", ("HV-6", "HV-9")),
        ("timestamp_missing", "0a0202610278" + "000000", ("HV-9", "HV-13")),
        ("headers_size_past_end", "20" + TS5, ("HV-13",)),
        ("garbage_header_bytes", "04" + "0201" + TS5 + "76", ("HV-10", "HV-13")),
        ("empty_input", "", ("HV-13",)),
        ("truncated_headers_size", "80", ("HV-13",)),
    ]
    out += [CaseSpec(f"deserialize_{name}", "header_values.deserialize", {"bytes": data}, rules)
            for name, data, rules in deserialize]
    return out


def _lazy_cases() -> list[CaseSpec]:
    table = [
        ("null", None),
        ("no_headers", "00" + TS5 + "76"),
        ("negative_key_length_in_headers", "04" + "0201" + TS5 + "76"),
        ("truncated_key_in_headers", "06" + "020a61" + TS5 + "76"),
        ("timestamp_missing", "00" + "0000"),
    ]
    return [CaseSpec(f"deserialize_lazy_{name}", "header_values.deserialize_lazy", {"bytes": data}, ("HV-10",))
            for name, data in table]


def _aggregation_cases() -> list[CaseSpec]:
    out = [
        CaseSpec(f"serialize_aggregation_{name}", "header_values.serialize_aggregation",
                 {"aggregation": agg, "headers": headers}, ("HV-11",))
        for name, agg, headers in [
            ("null", None, [["a", "78"]]), ("empty_no_headers", "", []), ("one_header", "6167", [["a", None]]),
        ]
    ]
    for name, data in [("null", None), ("no_headers", "006167"), ("one_header", "08020261016167"),
                       ("empty_aggregation", "00"), ("size_past_end", "086167"), ("garbage_headers", "040201" + "6167")]:
        out.append(CaseSpec(f"deserialize_aggregation_{name}", "header_values.deserialize_aggregation",
                            {"bytes": data}, ("HV-11", "HV-13")))
    for name, data in [("null", None), ("empty", ""), ("no_headers", "006167"), ("one_header", "08020261016167"),
                       ("garbage_headers_skipped", "040201" + "6167"), ("size_past_end", "086167")]:
        out.append(CaseSpec(f"raw_aggregation_{name}", "header_values.raw_aggregation", {"bytes": data},
                            ("HV-10", "HV-11")))
    return out


def _conversion_cases() -> list[CaseSpec]:
    out = [
        CaseSpec(f"convert_to_header_format_{name}", "header_values.convert_to_header_format",
                 {"value_and_timestamp": data}, ("HV-8",))
        for name, data in [("null", None), ("empty", ""), ("shorter_than_timestamp", "0102"),
                           ("timestamped_value", TS5 + "76"), ("starts_with_varint_like_byte", "0a" + TS5)]
    ]
    out += [
        CaseSpec(f"convert_from_plain_{name}", "header_values.convert_from_plain_to_header_format",
                 {"plain_value": data}, ("HV-8",))
        for name, data in [("null", None), ("empty", ""), ("one_byte", "76")]
    ]
    return out


def _restore_cases() -> list[CaseSpec]:
    consistency = [["v", "00"], ["c", "00" * 40]]
    out = [
        CaseSpec(f"restore_{name}", "header_values.raw_value_to_headers_value",
                 {"record_value": value, "record_timestamp": ts, "record_headers": headers}, ("HV-12",))
        for name, value, ts, headers in [
            ("tombstone", None, 7, [["a", "78"]]), ("no_headers", "76", 7, []),
            ("custom_and_consistency_headers", "76", 7, [["a", "78"], *consistency]),
        ]
    ]
    out += [
        CaseSpec(f"restore_session_{name}", "header_values.raw_value_to_session_headers_value",
                 {"record_value": value, "record_headers": headers}, ("HV-12",))
        for name, value, headers in [("tombstone", None, [["a", "78"]]), ("no_headers", "6167", []),
                                     ("with_headers", "6167", [["a", None], ["b", ""]])]
    ]
    return out
