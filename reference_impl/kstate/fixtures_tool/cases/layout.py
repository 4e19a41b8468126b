"""State directory paths, segment names and column family decisions (LAY-*)."""

from __future__ import annotations

from typing import Any

from kstate.fixtures_tool import CaseSpec
from kstate.fixtures_tool.cases import family_cases

#: The families' parts of this file: each family's cases module defines these functions (issue 33).
STORE_PATH_CASES, COLUMN_FAMILY_CASES = "layout_store_path_cases", "layout_column_family_cases"

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
    out += family_cases(STORE_PATH_CASES)
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


def store_paths_case(store_type: str) -> CaseSpec:
    """Case ``store_paths_<store type>``: the paths of a store of ``store_type`` (LAY-2 to LAY-4)."""
    return CaseSpec(f"store_paths_{store_type}", "layout.store_paths", {"store_type": store_type, "store_name": "s"},
                    ("LAY-2", "LAY-3", "LAY-4"))


def segment_paths_case(name: str, store_type: str, store_name: str, rules: tuple[str, ...]) -> CaseSpec:
    """Case ``store_paths_<name>``: the paths with segment 3 of interval 60000 (LAY-3; refused without segments)."""
    return CaseSpec(f"store_paths_{name}", "layout.store_paths",
                    {"store_type": store_type, "store_name": store_name, "segment_id": 3, "segment_interval": 60000}, rules)


def column_family_case(name: str, store_type: str, existing: dict[str, Any], rules: tuple[str, ...]) -> CaseSpec:
    """Case ``cf_<store type>_<name>``: the column families a store opens over ``existing`` (LAY-5 to LAY-8)."""
    return CaseSpec(f"cf_{store_type}_{name}", "layout.column_families", {"store_type": store_type, "existing": existing},
                    rules)


def column_family_cases() -> list[CaseSpec]:
    """Every family's column-family cases (its cases module's ``layout_column_family_cases``)."""
    return family_cases(COLUMN_FAMILY_CASES)


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
