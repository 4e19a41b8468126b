"""The state directory layout and column family decisions (LAY-*)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kstate_conformance import rules
from kstate_conformance import store_types as types
from kstate_conformance.store_types import (
    TIMESTAMPED_KV_WITH_HEADERS,
    TIMESTAMPED_WINDOW_WITH_HEADERS,
)
from kstate_conformance.strategies import NON_NEGATIVE_INT32

# "." and ".." are no store names: Kafka refuses them (Named.validate, as Materialized.as calls it), so they have no paths.
STORE_NAME = st.text(alphabet="abcxyz_-.0123456789", min_size=1, max_size=12).filter(lambda n: n not in (".", ".."))
KV_LIKE = (*types.KV_TYPES, types.VERSIONED_KV)
SEGMENTED_STORE_TYPES = types.SEGMENTED_TYPES


def java_long(value: int) -> int:
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >> 63 else value


def java_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


@rules("LAY-1")
@given(NON_NEGATIVE_INT32, NON_NEGATIVE_INT32, st.one_of(st.none(), st.text(alphabet="abc-", min_size=1, max_size=6)))
def test_task_directory_names(implementation: Any, subtopology: int, partition: int, topology: str | None) -> None:
    payload: dict[str, Any] = {"application_id": "app", "subtopology": subtopology, "partition": partition}
    if topology is not None:
        payload["named_topology"] = topology
    out = implementation.call("layout.task_dir", payload)
    name = f"{subtopology}_{partition}"
    assert out == {"name": name, "task_dir": f"app/{name}" if topology is None else f"app/__{topology}__/{name}"}
    assert implementation.call("layout.parse_task_dir_name", {"name": name}) == {"task": [subtopology, partition]}


@rules("LAY-1")
@pytest.mark.parametrize("name", ["global", "0_", "_0", "0-0", "0_0_0", "a_0", " 0_0", "\u0660_0", "0_0.tmp"])
def test_names_that_are_not_task_directories(implementation: Any, name: str) -> None:
    assert implementation.call("layout.parse_task_dir_name", {"name": name}) == {"task": None}


@rules("LAY-2", "LAY-4")
@given(st.sampled_from(KV_LIKE), STORE_NAME)
def test_key_value_and_versioned_stores_live_under_rocksdb(implementation: Any, store_type: str, name: str) -> None:
    out = implementation.call("layout.store_paths", {"store_type": store_type, "store_name": name})
    assert out == {"store_dir": f"rocksdb/{name}", "position_file": f"{name}.position", "task_checkpoint_file": ".checkpoint",
                   "legacy_store_checkpoint_file": f".checkpoint_{name}"}


@rules("LAY-3", "LAY-4")
@given(st.sampled_from(SEGMENTED_STORE_TYPES), STORE_NAME, st.integers(min_value=0, max_value=1 << 40), st.integers(min_value=1, max_value=1 << 31))
def test_segments_are_named_by_their_start_time(implementation: Any, store_type: str, name: str, segment_id: int, interval: int) -> None:
    out = implementation.call("layout.store_paths", {"store_type": store_type, "store_name": name, "segment_id": segment_id,
                                            "segment_interval": interval})
    start = java_long(segment_id * interval)
    assert out["store_dir"] == name and out["position_file"] == f"{name}.position"
    assert out["segment_dir"] == f"{name}/{name}.{start}"
    assert implementation.call("layout.segment_dir_name", {"store_name": name, "segment_id": segment_id,
                                                  "segment_interval": interval}) == {"name": f"{name}.{start}"}


@rules("LAY-3")
@given(STORE_NAME, st.integers(min_value=0, max_value=1 << 50), st.integers(min_value=1, max_value=1 << 31), st.sampled_from(".:"))
def test_segment_names_parse_back_to_their_id(implementation: Any, name: str, start: int, interval: int, separator: str) -> None:
    out = implementation.call("layout.parse_segment_name", {"store_name": name, "segment_name": f"{name}{separator}{start}",
                                                   "segment_interval": interval})
    segment_id = start // interval
    assert out == {"segment_id": segment_id, "rename_to": None if separator == "." else f"{name}.{segment_id * interval}"}


@rules("LAY-3")
@given(STORE_NAME, st.datetimes(min_value=datetime.datetime(1970, 1, 1), max_value=datetime.datetime(9999, 12, 31)),
       st.integers(min_value=1, max_value=1 << 31))
def test_legacy_date_segment_names_are_read_as_utc_and_renamed(implementation: Any, name: str, when: datetime.datetime, interval: int) -> None:
    minute = when.replace(second=0, microsecond=0, tzinfo=datetime.timezone.utc)
    millis = int(minute.timestamp()) * 1000
    out = implementation.call("layout.parse_segment_name", {"store_name": name, "segment_name": f"{name}-{minute:%Y%m%d%H%M}",
                                                   "segment_interval": interval})
    segment_id = java_div(millis, interval)
    assert out == {"segment_id": segment_id, "rename_to": f"{name}.{java_long(segment_id * interval)}"}


@rules("LAY-3")
def test_unreadable_segment_names(implementation: Any) -> None:
    def parse(segment_name: str) -> dict[str, Any]:
        result: dict[str, Any] = implementation.call("layout.parse_segment_name", {"store_name": "store", "segment_name": segment_name, "segment_interval": 60000})
        return result

    assert parse("store-notadate") == {"segment_id": -1, "rename_to": None}
    for bad in ("store.x", "store.", "store", "sto", "store.1.5"):
        assert "error" in parse(bad), bad


@rules("LAY-3")
@pytest.mark.kstate_level("recommended")
def test_legacy_date_names_are_parsed_leniently(implementation: Any) -> None:
    def parse(segment_name: str) -> dict[str, Any]:
        result: dict[str, Any] = implementation.call("layout.parse_segment_name", {"store_name": "s", "segment_name": segment_name, "segment_interval": 60000})
        return result

    # Month 13 of 2018 is January 2019; trailing characters after the minutes are ignored.
    assert parse("s-201813011200") == parse("s-201901011200")
    assert parse("s-201801011200.old") == parse("s-201801011200")


def plan(implementation: Any, store_type: str, existing: dict[str, bool]) -> dict[str, Any]:
    result: dict[str, Any] = implementation.call("layout.column_families", {"store_type": store_type, "existing": existing})
    return result


#: LAY-5, LAY-6 per store type, from each family's model; the layout-only type has no family and is the last.
COLUMN_FAMILIES_BY_STORE_TYPE = [
    *(row for rows in types.per_family("LAYOUT_COLUMN_FAMILIES") for row in rows),
    (types.TIME_ORDERED_WINDOW_WITH_HEADERS, ["default", "offsets", "windowKeyValueWithHeaders"], "windowKeyValueWithHeaders"),
]


@rules("LAY-5", "LAY-6")
@pytest.mark.parametrize(("store_type", "families", "data_cf"), COLUMN_FAMILIES_BY_STORE_TYPE,
                         ids=[row[0] for row in COLUMN_FAMILIES_BY_STORE_TYPE])
def test_each_store_type_opens_its_column_families(implementation: Any, store_type: str, families: list[str], data_cf: str) -> None:
    out = plan(implementation, store_type, {})
    assert out == {"open": families, "data_cf": data_cf, "mode": "regular", "legacy_cf": None, "conversion": None, "dropped": []}
    assert plan(implementation, store_type, dict.fromkeys(families, True) | {"default": False}) == out


@rules("LAY-7")
@pytest.mark.parametrize(("store_type", "legacy", "conversion"), [
    *(row for rows in types.per_family("LEGACY_UPGRADES") for row in rows),
    (types.TIME_ORDERED_WINDOW_WITH_HEADERS, "default", "convert_to_header_format"),
])
def test_legacy_data_opens_in_upgrade_mode(implementation: Any, store_type: str, legacy: str, conversion: str) -> None:
    out = plan(implementation, store_type, {legacy: True})
    assert (out["mode"], out["legacy_cf"], out["conversion"]) == ("upgrade", legacy, conversion)


@rules("LAY-8")
@pytest.mark.parametrize("store_type", [TIMESTAMPED_KV_WITH_HEADERS, TIMESTAMPED_WINDOW_WITH_HEADERS])
def test_header_store_over_a_timestamped_database(implementation: Any, store_type: str) -> None:
    families = ["default", "keyValueWithTimestamp", "keyValueWithTimestampAndHeaders", "offsets"]
    upgrade = plan(implementation, store_type, {"default": False, "keyValueWithTimestamp": True})
    assert upgrade == {"open": families, "data_cf": "keyValueWithTimestampAndHeaders", "mode": "upgrade",
                       "legacy_cf": "keyValueWithTimestamp", "conversion": "convert_to_header_format", "dropped": []}
    empty = plan(implementation, store_type, {"default": False, "keyValueWithTimestamp": False})
    assert empty["mode"] == "regular" and empty["dropped"] == ["keyValueWithTimestamp"]
    assert "error" in plan(implementation, store_type, {"default": True, "keyValueWithTimestamp": True})
    assert "error" in plan(implementation, store_type, {"default": True, "keyValueWithTimestamp": False})


@rules("LAY-8")
@pytest.mark.parametrize(("store_type", "foreign"), [row for rows in types.per_family("FOREIGN_COLUMN_FAMILIES") for row in rows])
def test_databases_with_unknown_column_families_are_refused(implementation: Any, store_type: str, foreign: str) -> None:
    assert "error" in plan(implementation, store_type, {"default": True, foreign: False})


@rules("LAY-9")
@pytest.mark.kstate_level("recommended")
@given(st.lists(st.tuples(st.sampled_from(["default", "offsets", "keyValueWithTimestamp"]), st.integers(1, 7)), min_size=1,
                max_size=3, unique_by=lambda e: e[0]))
def test_options_file_format_versions(implementation: Any, tables: list[tuple[str, int]]) -> None:
    text = "[Version]\n  rocksdb_version=9.8.4\n" + "".join(
        f'[CFOptions "{cf}"]\n  comparator=leveldb.BytewiseComparator\n[TableOptions/BlockBasedTable "{cf}"]\n'
        f"  block_size=4096\n  format_version={v}\n" for cf, v in tables)
    out = implementation.call("layout.options_format_versions", {"options_text": text})
    assert out == {"format_versions": dict(sorted(tables)), "readable_before_rocksdb_8_6": all(v <= 5 for _, v in tables)}


@rules("LAY-10")
@pytest.mark.parametrize(("name", "kind"), [("rocksdict-config.json", "not_layout"), ("CURRENT", "rocksdb"), ("MANIFEST-000004", "rocksdb"),
                                            ("OPTIONS-000009", "rocksdb"), ("000010.sst", "rocksdb"), ("LOG.old.1712345678901234", "rocksdb"),
                                            ("random.bin", "unknown"), ("kstate-segments", "not_layout"),
                                            ("kstate-segments.tmp", "not_layout"), ("kstate-segments.json", "unknown")])
def test_binding_sidecars_are_not_part_of_the_layout(implementation: Any, name: str, kind: str) -> None:
    assert implementation.call("layout.classify_store_file", {"name": name}) == {"kind": kind}
