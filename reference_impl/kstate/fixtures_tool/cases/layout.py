"""State directory paths, segment names and column family decisions (LAY-*)."""

from __future__ import annotations

from typing import Any

from kstate.fixtures_tool import CaseSpec

OPTIONS_V5 = """[Version]
  rocksdb_version=9.8.4
[CFOptions "default"]
  comparator=leveldb.BytewiseComparator
[TableOptions/BlockBasedTable "default"]
  format_version=5
  block_size=4096
[CFOptions "offsets"]
[TableOptions/BlockBasedTable "offsets"]
  format_version=5
"""


def cases() -> list[CaseSpec]:
    return path_cases() + segment_cases() + column_family_cases() + file_cases()


def path_cases() -> list[CaseSpec]:
    out = [
        CaseSpec("task_dir", "layout.task_dir", {"application_id": "app", "subtopology": 0, "partition": 3}, ("LAY-1",)),
        CaseSpec("task_dir_named_topology", "layout.task_dir",
                 {"application_id": "app", "subtopology": 2, "partition": 11, "named_topology": "orders"}, ("LAY-1",)),
        CaseSpec("task_dir_out_of_range", "layout.task_dir", {"application_id": "app", "subtopology": 2147483648, "partition": 0}, ("LAY-1",)),
    ]
    for name in ["0_0", "12_345", "01_2", "1_", "_1", "a_1", "1_2_3", "\u0661_2", "2147483648_0", "0_2147483647"]:
        safe = name.replace("\u0661", "arabic1") or "empty"
        out.append(CaseSpec(f"parse_task_dir_{safe}", "layout.parse_task_dir_name", {"name": name}, ("LAY-1",)))
    for store_type in ["kv", "timestamped_kv", "timestamped_kv_with_headers", "versioned_kv", "window",
                       "timestamped_window", "session", "session_with_headers", "timestamped_window_with_headers"]:
        out.append(CaseSpec(f"store_paths_{store_type}", "layout.store_paths", {"store_type": store_type, "store_name": "s"},
                            ("LAY-2", "LAY-3", "LAY-4")))
    out += [
        CaseSpec("store_paths_window_segment", "layout.store_paths",
                 {"store_type": "window", "store_name": "w", "segment_id": 3, "segment_interval": 60000}, ("LAY-3",)),
        CaseSpec("store_paths_kv_has_no_segments", "layout.store_paths",
                 {"store_type": "kv", "store_name": "k", "segment_id": 3, "segment_interval": 60000}, ("LAY-2",)),
    ]
    return out


def segment_cases() -> list[CaseSpec]:
    out = []
    for name, seg_id, interval in [("zero", 0, 60000), ("three", 3, 60000), ("large", 28333333, 60000),
                                   ("wraps", 9223372036854775807, 2), ("negative", -1, 60000)]:
        out.append(CaseSpec(f"segment_dir_name_{name}", "layout.segment_dir_name",
                            {"store_name": "store", "segment_id": seg_id, "segment_interval": interval}, ("LAY-3",)))
    for case, name, interval in [
        ("dot", "store.180000", 60000),
        ("dot_unaligned", "store.150", 100),
        ("colon_renamed", "store:180000", 60000),
        ("date_renamed", "store-201801011200", 3600000),
        ("date_before_epoch", "store-196912312359", 3600000),
        ("date_month_13_rolls", "store-201813011200", 60000),
        ("date_trailing_text_ignored", "store-201801011200.bak", 60000),
        ("date_unparseable_skipped", "store-2018", 60000),
        ("other_separator", "storex60000", 60000),
        ("prefix_not_checked", "other.60000", 60000),
        ("number_not_long", "store.abc", 60000),
        ("empty_number", "store.", 60000),
        ("too_short", "stor", 60000),
        ("negative_timestamp", "store.-60000", 60000),
        ("plus_sign", "store.+60000", 60000),
    ]:
        out.append(CaseSpec(f"parse_segment_{case}", "layout.parse_segment_name",
                            {"store_name": "store", "segment_name": name, "segment_interval": interval}, ("LAY-3",)))
    return out


def column_family_cases() -> list[CaseSpec]:
    def plan(name: str, store_type: str, existing: dict[str, Any], rules: tuple[str, ...]) -> CaseSpec:
        return CaseSpec(f"cf_{store_type}_{name}", "layout.column_families", {"store_type": store_type, "existing": existing}, rules)

    return [
        plan("fresh", "kv", {}, ("LAY-5", "LAY-6")),
        plan("existing", "kv", {"default": True, "offsets": True}, ("LAY-5",)),
        plan("pre_4_3", "kv", {"default": True}, ("LAY-5", "LAY-6")),
        plan("timestamped_db_refused", "kv", {"default": False, "keyValueWithTimestamp": True, "offsets": True}, ("LAY-8",)),
        plan("fresh", "versioned_kv", {}, ("LAY-5",)),
        plan("fresh", "timestamped_kv", {}, ("LAY-5", "LAY-7")),
        plan("legacy_data", "timestamped_kv", {"default": True, "keyValueWithTimestamp": False}, ("LAY-7",)),
        plan("legacy_empty", "timestamped_kv", {"default": False, "keyValueWithTimestamp": True}, ("LAY-7",)),
        plan("headers_db_refused", "timestamped_kv", {"default": False, "keyValueWithTimestampAndHeaders": True}, ("LAY-8",)),
        plan("fresh", "timestamped_kv_with_headers", {}, ("LAY-5", "LAY-8")),
        plan("from_plain", "timestamped_kv_with_headers", {"default": True}, ("LAY-8",)),
        plan("from_timestamped", "timestamped_kv_with_headers",
             {"default": False, "keyValueWithTimestamp": True, "offsets": True}, ("LAY-8",)),
        plan("empty_timestamped_dropped", "timestamped_kv_with_headers",
             {"default": False, "keyValueWithTimestamp": False, "keyValueWithTimestampAndHeaders": True, "offsets": True}, ("LAY-8",)),
        plan("both_plain_and_timestamped_refused", "timestamped_kv_with_headers",
             {"default": True, "keyValueWithTimestamp": True}, ("LAY-8",)),
        plan("segment_from_timestamped", "timestamped_window_with_headers", {"default": False, "keyValueWithTimestamp": True}, ("LAY-8",)),
        plan("fresh", "window", {}, ("LAY-5",)),
        plan("fresh", "timestamped_window", {}, ("LAY-5",)),
        plan("fresh", "session", {}, ("LAY-5",)),
        plan("fresh", "session_with_headers", {}, ("LAY-5",)),
        plan("legacy_data", "session_with_headers", {"default": True}, ("LAY-7",)),
        plan("legacy_data", "time_ordered_window_with_headers", {"default": True, "offsets": False}, ("LAY-5", "LAY-7")),
        plan("unknown_cf_refused", "session", {"default": True, "__offsets": False}, ("LAY-8",)),
    ]


def file_cases() -> list[CaseSpec]:
    out = [
        CaseSpec("options_format_version_5", "layout.options_format_versions", {"options_text": OPTIONS_V5}, ("LAY-9",)),
        CaseSpec("options_format_version_6", "layout.options_format_versions",
                 {"options_text": OPTIONS_V5.replace("format_version=5\n  block", "format_version=6\n  block")}, ("LAY-9",)),
        CaseSpec("options_without_tables", "layout.options_format_versions", {"options_text": "[Version]\n"}, ("LAY-9",)),
    ]
    for name in ["CURRENT", "IDENTITY", "LOCK", "LOG", "LOG.old.1700000000000000", "MANIFEST-000005", "OPTIONS-000007",
                 "000012.sst", "000013.log", "rocksdict-config.json", "speedict-config.json", "notes.txt"]:
        safe = name.replace("-", "_").replace(".", "_")
        out.append(CaseSpec(f"classify_{safe}", "layout.classify_store_file", {"name": name}, ("LAY-10",)))
    return out
