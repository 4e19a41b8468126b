"""The key-value family's parts of the files over every family: its changelog records (CL-3, CL-4, CL-8, CL-12),
restores (CL-9 to CL-11) and topic (CL-15), and its store paths and column families (LAY-2, LAY-5 to LAY-8).

It writes no file of its own (no ``cases()``): the family's store operations have no reference fixtures.
"""

from __future__ import annotations

from kstate.fixtures_tool import CaseSpec
from kstate.fixtures_tool.cases.changelog import (
    POSITION,
    TS_VALUE,
    VTH,
    headers_restore_cases,
    plain_restore_cases,
    timestamped_restore_cases,
    topic_config_case,
    vth,
    write_case,
)
from kstate.fixtures_tool.cases.layout import column_family_case, segment_paths_case, store_paths_case

TOPIC_CONFIG_RULES = ("CL-15",)


def changelog_write_cases() -> list[CaseSpec]:
    return [
        write_case("put", "kv", "put", ("CL-2", "CL-3"), value="7631"),
        write_case("put_empty_value", "kv", "put", ("CL-3",), value=""),
        write_case("put_null", "kv", "put", ("CL-3",), value=None),
        write_case("put_if_absent_absent", "kv", "put_if_absent", ("CL-3",), value="7631", previous=None),
        write_case("put_if_absent_present", "kv", "put_if_absent", ("CL-3",), value="7631", previous="7630"),
        write_case("put_if_absent_null_value", "kv", "put_if_absent", ("CL-3",), value=None, previous=None),
        write_case("delete", "kv", "delete", ("CL-3",)),
        write_case("negative_context_ts", "kv", "put", ("CL-2",), value="7631", context={"timestamp": -1}),
        write_case("put", "timestamped_kv", "put", ("CL-4",), value=TS_VALUE),
        write_case("put_ts_zero", "timestamped_kv", "put", ("CL-4",), value="0000000000000000"),
        write_case("put_negative_stored_ts", "timestamped_kv", "put", ("CL-2", "CL-4"), value="ffffffffffffffff7631"),
        write_case("put_null", "timestamped_kv", "put", ("CL-4",), value=None),
        write_case("put_short_value", "timestamped_kv", "put", ("CL-4",), value="0000"),
        write_case("delete", "timestamped_kv", "delete", ("CL-4",)),
        write_case("put_if_absent_absent", "timestamped_kv", "put_if_absent", ("CL-4",), value=TS_VALUE, previous=None),
        write_case("put_if_absent_present", "timestamped_kv", "put_if_absent", ("CL-4",), value=TS_VALUE,
                   previous=TS_VALUE),
        write_case("put", "timestamped_kv_with_headers", "put", ("CL-8",), value=VTH),
        write_case("put_no_headers", "timestamped_kv_with_headers", "put", ("CL-8",), value=vth("", 9, "")),
        write_case("put_null", "timestamped_kv_with_headers", "put", ("CL-8",), value=None),
        write_case("delete", "timestamped_kv_with_headers", "delete", ("CL-8",)),
        write_case("put_if_absent_present", "timestamped_kv_with_headers", "put_if_absent", ("CL-8",), value=VTH,
                   previous=VTH),
        write_case("put_duplicate_headers", "timestamped_kv_with_headers", "put", ("CL-8",),
                   value=vth("04" + "0261" + "0231" + "0261" + "01", 3, "")),
        write_case("put_consistency", "kv", "put", ("CL-12",), value="7631", consistency_position=POSITION),
        write_case("put_consistency", "timestamped_kv_with_headers", "put", ("CL-12",), value=VTH,
                   consistency_position=POSITION),
        write_case("delete_consistency_empty_position", "kv", "delete", ("CL-12",), consistency_position=[]),
    ]


def changelog_restore_cases() -> list[CaseSpec]:
    return (plain_restore_cases("kv") + timestamped_restore_cases("timestamped_kv")
            + headers_restore_cases("timestamped_kv_with_headers"))


def changelog_topic_config_cases() -> list[CaseSpec]:
    return [
        topic_config_case("kv", store_type="kv"),
        topic_config_case("timestamped_kv_headers", store_type="timestamped_kv_with_headers"),
        topic_config_case("kv_user_override", store_type="kv",
                          log_config={"cleanup.policy": "compact,delete", "segment.ms": "1000"}),
        topic_config_case("kv_topic_default", store_type="kv", topic_defaults={"min.insync.replicas": "2"}),
    ]


def layout_store_path_cases() -> list[CaseSpec]:
    return [*(store_paths_case(t) for t in ("kv", "timestamped_kv", "timestamped_kv_with_headers")),
            segment_paths_case("kv_has_no_segments", "kv", "k", ("LAY-2",))]


def layout_column_family_cases() -> list[CaseSpec]:
    return [
        column_family_case("fresh", "kv", {}, ("LAY-5", "LAY-6")),
        column_family_case("existing", "kv", {"default": True, "offsets": True}, ("LAY-5",)),
        column_family_case("pre_4_3", "kv", {"default": True}, ("LAY-5", "LAY-6")),
        column_family_case("timestamped_db_refused", "kv", {"default": False, "keyValueWithTimestamp": True, "offsets": True},
                           ("LAY-8",)),
        column_family_case("fresh", "timestamped_kv", {}, ("LAY-5", "LAY-7")),
        column_family_case("legacy_data", "timestamped_kv", {"default": True, "keyValueWithTimestamp": False}, ("LAY-7",)),
        column_family_case("legacy_empty", "timestamped_kv", {"default": False, "keyValueWithTimestamp": True}, ("LAY-7",)),
        column_family_case("headers_db_refused", "timestamped_kv",
                           {"default": False, "keyValueWithTimestampAndHeaders": True}, ("LAY-8",)),
        column_family_case("fresh", "timestamped_kv_with_headers", {}, ("LAY-5", "LAY-8")),
        column_family_case("from_plain", "timestamped_kv_with_headers", {"default": True}, ("LAY-8",)),
        column_family_case("from_timestamped", "timestamped_kv_with_headers",
                           {"default": False, "keyValueWithTimestamp": True, "offsets": True}, ("LAY-8",)),
        column_family_case("empty_timestamped_dropped", "timestamped_kv_with_headers",
                           {"default": False, "keyValueWithTimestamp": False, "keyValueWithTimestampAndHeaders": True,
                            "offsets": True}, ("LAY-8",)),
        column_family_case("both_plain_and_timestamped_refused", "timestamped_kv_with_headers",
                           {"default": True, "keyValueWithTimestamp": True}, ("LAY-8",)),
    ]
