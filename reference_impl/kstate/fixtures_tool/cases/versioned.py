"""KIP-889 versioned store rows, keys and per-key store behaviour chosen to pin each VER rule."""

from __future__ import annotations

from typing import Any

from kstate.fixtures_tool import CaseSpec
from kstate.fixtures_tool.cases.changelog import (
    plain_restore_cases,
    topic_config_case,
    write_case,
)
from kstate.fixtures_tool.cases.layout import column_family_case, store_paths_case

SCENARIO = "versioned.segment_scenario"
Step = dict[str, Any]

MIN64 = -(1 << 63)
MAX64 = (1 << 63) - 1


def _new(value: str | None, valid_from: int, valid_to: int) -> Step:
    return {"op": "new", "value": value, "valid_from": valid_from, "valid_to": valid_to}


def _latest(valid_from: int, valid_to: int, value: str | None) -> Step:
    return {"op": "insert_as_latest", "valid_from": valid_from, "valid_to": valid_to, "value": value}


def _earliest(timestamp: int, value: str | None) -> Step:
    return {"op": "insert_as_earliest", "timestamp": timestamp, "value": value}


def _find(timestamp: int, include_value: bool = True) -> Step:
    return {"op": "find", "timestamp": timestamp, "include_value": include_value}


def _find_all(from_time: int = MIN64, to_time: int = MAX64) -> Step:
    return {"op": "find_all", "from": from_time, "to": to_time}


def _insert(timestamp: int, value: str | None, index: int) -> Step:
    return {"op": "insert", "timestamp": timestamp, "value": value, "index": index}


def _update(timestamp: int, value: str | None, index: int) -> Step:
    return {"op": "update_record", "timestamp": timestamp, "value": value, "index": index}


RELOAD: Step = {"op": "reload"}

# RocksDBVersionedStoreSegmentValueFormatterTest's non-exceptional rows: next timestamp, then
# (value, validFrom) newest first; values are "foo"/"bar"/"baz" in hex, None a tombstone.
FOO, BAR, BAZ = "666f6f", "626172", "62617a"
KAFKA_ROWS: list[tuple[str, int, list[tuple[str | None, int]]]] = [
    ("single_record", 10, [(FOO, 1)]),
    ("multiple_records", 10, [(FOO, 8), (BAR, 3), (BAZ, 0)]),
    ("single_tombstone", 10, [(None, 1)]),
    ("multiple_tombstones", 10, [(None, 4), (None, 1)]),
    ("r_t_r", 10, [(FOO, 5), (None, 2), (BAR, 1)]),
    ("t_r_t", 10, [(None, 5), (FOO, 2), (None, 1)]),
    ("r_r_t_t", 10, [(FOO, 6), (BAR, 5), (None, 2), (None, 1)]),
    ("t_t_r_r", 10, [(None, 7), (None, 6), (FOO, 2), (BAR, 1)]),
    ("empty_value", 10, [("", 1)]),
    ("r_e", 10, [(FOO, 4), ("", 1)]),
    ("e_e_r", 10, [("", 8), ("", 2), (FOO, 1)]),
]

# RocksDBVersionedStoreSegmentValueFormatterTest's exceptional rows: insertAsLatest(10, 13, "new")
# into a row whose next timestamp is 15 (VER-16).
NEW = "6e6577"
TRUNCATION_ROWS: list[tuple[str, list[tuple[str | None, int]]]] = [
    ("all_single", [(None, 12)]),
    ("all_single_exact", [(None, 10)]),
    ("all_multiple", [(None, 12), (FOO, 11)]),
    ("all_multiple_exact", [(None, 12), (FOO, 11), (None, 10)]),
    ("partial_single", [(None, 8)]),
    ("partial_multiple", [(FOO, 12), (BAR, 8)]),
    ("partial_on_boundary", [(FOO, 12), (BAR, 10), (BAZ, 8)]),
]


def _built_by_latest(next_ts: int, records: list[tuple[str | None, int]]) -> list[Step]:
    oldest = records[-1]
    newer_bound = records[-2][1] if len(records) > 1 else next_ts
    steps = [_new(oldest[0], oldest[1], newer_bound)]
    for i in range(len(records) - 2, -1, -1):
        bound = records[i - 1][1] if i > 0 else next_ts
        steps.append(_latest(records[i][1], bound, records[i][0]))
    return steps


def _built_by_earliest(next_ts: int, records: list[tuple[str | None, int]]) -> list[Step]:
    newest = records[0]
    steps = [_new(newest[0], newest[1], next_ts)]
    steps += [_earliest(ts, value) for value, ts in records[1:]]
    return steps


def segment_cases() -> list[CaseSpec]:
    out = [
        CaseSpec("worked_example", SCENARIO, {"steps": [_new("61", 1, 5), _latest(5, 9, "6263"), _find_all()]},
                 ("VER-4", "VER-5", "VER-6", "VER-7", "VER-15"),
                 "spec example: 'a'@1 then 'bc'@5, next 9"),
        CaseSpec("worked_example_gap", SCENARIO,
                 {"steps": [_new("61", 1, 5), _latest(7, 9, "6263"), _find(5), _find(6), _find_all()]},
                 ("VER-7", "VER-11", "VER-15"), "a gap from 5 to 7 becomes a tombstone"),
        CaseSpec("worked_example_degenerate", SCENARIO,
                 {"steps": [_new(None, 7, 7), _find(7), _find_all(), _insert(7, "61", 0)]},
                 ("VER-10", "VER-11", "VER-12", "VER-18"), "degenerate tombstone @7: 28 bytes"),
        CaseSpec("tombstone_vs_empty", SCENARIO,
                 {"steps": [_new("", 1, 2), _latest(2, 3, None), _latest(3, 4, ""), RELOAD, _find(1), _find(2),
                            _find(3), _find_all()]},
                 ("VER-8", "VER-11", "VER-12")),
        CaseSpec("find_bounds", SCENARIO,
                 {"steps": [_new("61", 10, 20), _find(9), _find(10), _find(19), _find(20), _find(MAX64)]},
                 ("VER-11",)),
        CaseSpec("find_all_bounds", SCENARIO,
                 {"steps": [_new("61", 10, 20), _latest(20, 30, "62"), _find_all(20, 20), _find_all(19, 19),
                            _find_all(30, 40), _find_all(0, 9), _find_all(0, 10)]},
                 ("VER-12",)),
        CaseSpec("deser_index_after_reload", SCENARIO,
                 {"steps": [_new("61", 10, 20), _latest(20, 30, "62"), _update(21, "63", 0), RELOAD,
                            _update(22, "64", 0), _find(25, False), _update(22, "64", 0), _find_all(),
                            _update(12, "65", 1), _find(10, False), _update(12, "65", 1), _insert(11, "66", 2)]},
                 ("VER-19", "VER-20")),
        CaseSpec("insert_index_rules", SCENARIO,
                 {"steps": [_new("61", 10, 20), _latest(20, 30, "62"), _latest(30, 40, "63"), RELOAD,
                            _insert(35, "64", 0), _find(25, False), _insert(27, "64", 1), _insert(22, "65", 3),
                            _insert(5, "66", 3), _insert(6, "67", -1), _find_all()]},
                 ("VER-18", "VER-20")),
        CaseSpec("insert_after_oldest_moves_min", SCENARIO,
                 {"steps": [_new("61", 10, 20), _find(10, False), _insert(5, None, 1), _find_all(), _find(7)]},
                 ("VER-18",)),
        CaseSpec("update_oldest_moves_min", SCENARIO,
                 {"steps": [_new("61", 10, 20), _latest(20, 30, "6262"), _find(15, False), _update(4, None, 1),
                            _find(4), _update(4, "", 1), _find_all()]},
                 ("VER-19",)),
        CaseSpec("update_resizes_value", SCENARIO,
                 {"steps": [_new("61", 10, 20), _latest(20, 30, "6262"), _latest(30, 40, "636363"),
                            _find(25, False), _update(25, "ffffffffffff", 1), _find_all(), _find(35, False),
                            _update(35, None, 0), _find_all()]},
                 ("VER-6", "VER-19")),
        CaseSpec("earliest_into_degenerate", SCENARIO,
                 {"steps": [_new(None, 50, 50), _earliest(40, "61"), _earliest(30, None), _find_all(), _find(35)]},
                 ("VER-10", "VER-17")),
        CaseSpec("latest_onto_degenerate", SCENARIO,
                 {"steps": [_new(None, 50, 50), _latest(50, 60, "61"), _find_all()]},
                 ("VER-10", "VER-15")),
        CaseSpec("latest_onto_degenerate_with_gap", SCENARIO,
                 {"steps": [_new(None, 50, 50), _latest(55, 60, "61"), _find(52), _find(57)]},
                 ("VER-10", "VER-15")),
        CaseSpec("truncate_partial_then_latest", SCENARIO,
                 {"steps": [_new("61", 10, 20), _latest(20, 30, "6262"), _latest(30, 40, "636363"),
                            _latest(25, 50, "64"), _find_all()]},
                 ("VER-16",)),
        CaseSpec("truncate_to_min", SCENARIO,
                 {"steps": [_new("61", 10, 20), _latest(20, 30, "6262"), _latest(10, 50, "64"), _find_all()]},
                 ("VER-16",)),
        CaseSpec("truncate_below_min", SCENARIO,
                 {"steps": [_new("61", 10, 20), _latest(5, 50, "64"), _find_all()]},
                 ("VER-16",)),
        CaseSpec("deserialize_short_row", SCENARIO,
                 {"steps": [{"op": "deserialize", "bytes": "000000000000000a0000000000"}]},
                 ("VER-21",)),
        CaseSpec("deserialize_header_only", SCENARIO,
                 {"steps": [{"op": "deserialize", "bytes": "000000000000000a0000000000000005"}, _find(5),
                            _find_all()]},
                 ("VER-9", "VER-21"), "a header with no index: reading it runs past the end"),
        CaseSpec("deserialize_extreme_timestamps", SCENARIO,
                 {"steps": [_new("61", MIN64, MAX64), RELOAD, _find(0), _find(MIN64), _earliest(MIN64, "62")]},
                 ("VER-11", "VER-17", "VER-21")),
    ]
    for name, next_ts, records in KAFKA_ROWS:
        probes = [_find(ts) for _, ts in records] + [_find(next_ts - 1), _find_all()]
        out.append(CaseSpec(f"kafka_row_{name}_by_latest", SCENARIO,
                            {"steps": [*_built_by_latest(next_ts, records), RELOAD, *probes]},
                            ("VER-5", "VER-6", "VER-7", "VER-14", "VER-15")))
        out.append(CaseSpec(f"kafka_row_{name}_by_earliest", SCENARIO,
                            {"steps": [*_built_by_earliest(next_ts, records), *probes]},
                            ("VER-5", "VER-6", "VER-7", "VER-14", "VER-17")))
    for name, records in TRUNCATION_ROWS:
        out.append(CaseSpec(f"kafka_truncate_{name}", SCENARIO,
                            {"steps": [*_built_by_latest(15, records), _latest(10, 13, NEW), _find_all()]},
                            ("VER-16",)))
    out.append(CaseSpec("kafka_degenerate_row", SCENARIO, {"steps": [_new(None, 10, 10), RELOAD, _find_all()]},
                        ("VER-10", "VER-14")))
    return out


def hostile_row_cases() -> list[CaseSpec]:
    header = "0000000000000014" + "000000000000000a"  # next 20, min 10
    # Rows Kafka's reader also fails on: the walk or a value runs past the row itself.
    rows = {
        "index_never_reaches_min": header + "0000000000000011" + "00000001" + "61",
        "size_past_row": header + "000000000000000a" + "00000028" + "6161",
        "huge_size": header + "000000000000000a" + "7fffffff",
    }
    out = [CaseSpec(f"hostile_{name}", SCENARIO,
                    {"steps": [{"op": "deserialize", "bytes": row}, _find(15), _find_all()]}, ("VER-9",))
           for name, row in rows.items()]
    # Rows Kafka reads as garbage or as a tombstone, which the checked full read refuses.
    rows["size_below_minus_one"] = header + "000000000000000a" + "fffffffe"
    rows["value_overlaps_index"] = header + "000000000000000a" + "00000005" + "6161"
    rows["bytes_between_index_and_values"] = header + "000000000000000a" + "00000001" + "616161"
    out += [CaseSpec(f"versions_{name}", "versioned.segment_versions", {"bytes": row}, ("VER-9",))
            for name, row in rows.items()]
    out.append(CaseSpec("versions_worked_example", "versioned.segment_versions",
                        {"bytes": "0000000000000009000000000000000100000000000000050000000200000000000000010000000161"
                                  "6263"}, ("VER-5", "VER-6", "VER-7")))
    return out


def latest_value_cases() -> list[CaseSpec]:
    out = [CaseSpec(f"latest_from_{name}", "versioned.latest_from", {"value": value, "timestamp": ts})
           for name, value, ts in [("empty", "", 0), ("minus_one", "61", -1), ("tombstone", None, 5),
                                   ("max", "ff00", MAX64), ("min", "00", MIN64)]]
    out += [CaseSpec(f"latest_decode_{name}", "versioned.latest_decode", {"bytes": data})
            for name, data in [("eight_bytes", "0000000000000005"), ("value", "ffffffffffffffff6162"),
                               ("seven_bytes", "00000000000000"), ("empty", "")]]
    return out


def key_cases() -> list[CaseSpec]:
    out = [CaseSpec(f"segment_key_{name}", "versioned.segment_key", {"segment_id": sid, "key": key})
           for name, sid, key in [("zero", 0, "6b"), ("latest", -1, "6b"), ("big", 1700000000, ""),
                                  ("max", MAX64, "00ff")]]
    out += [CaseSpec(f"split_segment_key_{name}", "versioned.split_segment_key", {"bytes": data})
            for name, data in [("latest", "ffffffffffffffff6b"), ("regular", "00000000000000036b6b"),
                               ("bare_prefix", "0000000000000003"), ("short", "00000000000003")]]
    out += [CaseSpec(f"segment_name_{name}", "versioned.segment_name",
                     {"store": "prices", "segment_id": sid, "segment_interval": interval})
            for name, sid, interval in [("zero", 0, 60000), ("seven", 7, 60000), ("latest", -1, 60000),
                                        ("reserved", -2, 60000)]]
    out += [CaseSpec(f"version_segment_{name}", "versioned.version_segment",
                     {"valid_from": vf, "valid_to": vt, "tombstone": tomb, "segment_interval": 100})
            for name, vf, vt, tomb in [("latest_value", 250, None, False), ("latest_tombstone", 250, None, True),
                                       ("old_version", 50, 250, False), ("old_tombstone", 50, 250, True),
                                       ("boundary", 50, 300, False), ("negative_valid_to", -150, -50, False)]]
    return out


def config_cases() -> list[CaseSpec]:
    retention_points = [0, 1, 5999, 6000, 6001, 60000, 60001, 100000, 100001, 300000, 300001, 720000, 720001,
                        3600000, 3600001, 7200000, 7200001, 86400000, -1, MAX64]
    out = [CaseSpec(f"default_segment_interval_{hr}", "versioned.default_segment_interval",
                    {"history_retention": hr}) for hr in retention_points]
    out += [CaseSpec(f"store_config_{name}", "versioned.store_config",
                     {"history_retention": hr, "segment_interval": si})
            for name, hr, si in [("defaults", 3600000, None), ("explicit", 0, 1), ("negative_retention", -1, None),
                                 ("zero_interval", 1000, 0), ("negative_interval", 1000, -5)]]
    return out


def _key_case(name: str, steps: list[Step], rules: tuple[str, ...], retention: int = 100, interval: int = 10,
              note: str = "") -> CaseSpec:
    return CaseSpec(name, "versioned.key_scenario",
                    {"key": "6b", "history_retention": retention, "segment_interval": interval, "steps": steps},
                    rules, note)


def _put(ts: int, value: str | None) -> Step:
    return {"op": "put", "timestamp": ts, "value": value}


def _get_as_of(ts: int) -> Step:
    return {"op": "get_as_of", "timestamp": ts}


GET: Step = {"op": "get"}


def store_cases() -> list[CaseSpec]:
    return [
        _key_case("in_order_puts", [_put(5, "61"), GET, _put(15, "62"), _put(27, "63"), _get_as_of(4),
                                    _get_as_of(5), _get_as_of(16), _get_as_of(30), GET],
                  ("VER-22", "VER-25", "VER-27", "VER-28", "VER-31", "VER-32")),
        _key_case("same_timestamp_replaces", [_put(5, "61"), _put(5, "62"), GET, _put(15, "63"), _put(8, "64"),
                                              _put(8, "65"), _get_as_of(9)],
                  ("VER-28", "VER-29")),
        _key_case("expired_put_and_delete", [_put(500, "61"), _put(399, "62"), _put(400, "63"),
                                             {"op": "delete", "timestamp": 300}, _get_as_of(399), GET],
                  ("VER-26", "VER-30", "VER-33")),
        _key_case("out_of_order_split", [_put(5, "61"), _put(35, "62"), _put(22, "63"), _get_as_of(10),
                                         _get_as_of(22), _get_as_of(34)],
                  ("VER-22", "VER-29"), note="the version 5..35 splits at 22 into segments 2 and 3"),
        _key_case("out_of_order_earliest", [_put(50, "61"), _put(60, "62"), _put(30, "63"), _put(10, None),
                                            _get_as_of(20), _get_as_of(35), _get_as_of(55)],
                  ("VER-27", "VER-29")),
        _key_case("tombstone_alone_is_degenerate", [_put(42, None), GET, _get_as_of(50), _put(30, "61"),
                                                    _get_as_of(35), _get_as_of(45), GET],
                  ("VER-10", "VER-22", "VER-29", "VER-31")),
        _key_case("delete_returns_previous", [_put(5, "61"), _put(20, "62"), {"op": "delete", "timestamp": 12},
                                              {"op": "delete", "timestamp": 25}, GET, _get_as_of(13),
                                              _get_as_of(21), {"op": "delete", "timestamp": 26}],
                  ("VER-33",)),
        _key_case("segments_expire", [_put(5, "61"), _put(15, "62"), _put(25, "63"), _put(200, "64"),
                                      _get_as_of(7), _get_as_of(99), _get_as_of(100), _get_as_of(150)],
                  ("VER-30", "VER-32"), retention=100, interval=10),
        _key_case("latest_never_expires", [_put(5, "61"), _put(1000, None), _put(2000, "62"), _get_as_of(10),
                                           _get_as_of(1500), _get_as_of(2000)],
                  ("VER-30", "VER-32")),
        _key_case("negative_timestamp_refused", [_put(-50, "61"), _put(-20, "62"), GET],
                  ("VER-30",), retention=1000, interval=10),
        _key_case("grace_boundary", [_put(100, "61"), _put(90, "62"), {"op": "delete", "timestamp": 90},
                                     _put(89, "63"), {"op": "delete", "timestamp": 89}, _get_as_of(90)],
                  ("VER-25", "VER-26", "VER-33"), retention=10, interval=10),
        _key_case("zero_retention", [_put(10, "61"), _put(9, "62"), _put(20, "63"), _get_as_of(15), _get_as_of(20)],
                  ("VER-24", "VER-26", "VER-32"), retention=0, interval=5),
    ]


def cases() -> list[CaseSpec]:
    return segment_cases() + hostile_row_cases() + latest_value_cases() + key_cases() + config_cases() + store_cases()


# --- the family's parts of the files over every family (changelog, layout) ------------------------------------------

TOPIC_CONFIG_RULES = ("CL-17",)


def changelog_write_cases() -> list[CaseSpec]:
    return [
        write_case("put", "versioned_kv", "put", ("CL-5",), value="7631", timestamp=42),
        write_case("put_expired_still_logged", "versioned_kv", "put", ("CL-5",), value="7631", timestamp=0),
        write_case("delete", "versioned_kv", "delete", ("CL-5",), timestamp=43),
        write_case("put_negative_ts", "versioned_kv", "put", ("CL-2", "CL-5"), value="7631", timestamp=-5),
    ]


def changelog_restore_cases() -> list[CaseSpec]:
    return plain_restore_cases("versioned_kv")


def changelog_topic_config_cases() -> list[CaseSpec]:
    return [
        topic_config_case("versioned", store_type="versioned_kv", history_retention_ms=300000),
        topic_config_case("versioned_saturates", store_type="versioned_kv", history_retention_ms=9223372036854775000),
        topic_config_case("versioned_user_lag", store_type="versioned_kv", history_retention_ms=1,
                          log_config={"min.compaction.lag.ms": "0"}),
        topic_config_case("versioned_ignores_additional_retention", store_type="versioned_kv", history_retention_ms=0,
                          additional_retention_ms=5),
    ]


def layout_store_path_cases() -> list[CaseSpec]:
    return [store_paths_case("versioned_kv")]


def layout_column_family_cases() -> list[CaseSpec]:
    return [column_family_case("fresh", "versioned_kv", {}, ("LAY-5",))]
