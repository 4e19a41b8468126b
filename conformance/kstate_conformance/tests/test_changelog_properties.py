"""Properties of changelog records, restore conversions and changelog topics (CL-*)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kstate_conformance import rules
from kstate_conformance import store_types as types
from kstate_conformance.bytes_model import int64
from kstate_conformance.store_types import (
    KV,
    TIMESTAMPED_KV,
    TIMESTAMPED_KV_WITH_HEADERS,
    TIMESTAMPED_WINDOW,
    VERSIONED_KV,
)
from kstate_conformance.strategies import (
    INT64,
    INT64_MAX,
    NEGATIVE_INT64,
    TIMESTAMPS,
    header_lists,
    nullable_binary,
)

BYTES = st.binary(max_size=12)
HEADERS = header_lists(st.text(max_size=4, alphabet=st.characters(codec="utf-8")), nullable_binary(4), max_size=3)


#: Each family's model (store_types.family_model), by the family's name and by store type: how its records look.
MODELS = {family.name: types.family_model(family) for family in types.FAMILIES}
MODEL_OF = {store_type: MODELS[name] for store_type, name in types.FAMILY_OF.items()}
#: The families whose writes are logged at the context's timestamp or the stored one (CL-2, CL-4), not at a
#: version's (CL-5), in the table's order.
CONTEXT_TIME_FAMILIES = [family for family in types.FAMILIES if MODELS[family.name].LOGS_AT_CONTEXT_TIME]
#: The plain type of each of them.
PLAIN_CONTEXT_TIME_TYPES = [family.types[0] for family in CONTEXT_TIME_FAMILIES]


def stored_value(store_type: str, value: bytes, ts: int, headers: list[tuple[str, bytes | None]]) -> bytes:
    """The bytes a store of ``store_type`` holds for (value, ts, headers), as its family's model writes them."""
    stored: bytes = MODEL_OF[store_type].changelog_stored_value(store_type, value, ts, headers)
    return stored


def json_headers(headers: list[tuple[str, bytes | None]]) -> list[list[Any]]:
    return [[k, None if v is None else v.hex()] for k, v in headers]


def write(implementation: Any, store_type: str, operation: str, key: bytes, value: bytes | None, ctx_ts: int,
          ctx_headers: list[tuple[str, bytes | None]], **extra: Any) -> dict[str, Any]:
    payload = {"store_type": store_type, "operation": operation, "key": key.hex(),
               "value": None if value is None else value.hex(),
               "context": {"timestamp": ctx_ts, "headers": json_headers(ctx_headers)}, **extra}
    result: dict[str, Any] = implementation.call("changelog.record_for_write", payload)
    return result


def shape_extra(store_type: str, start: int = 100, end: int = 200) -> dict[str, Any]:
    """The fields beyond key and value a write of the type's family takes; none for a type of no family (refused)."""
    model = MODEL_OF.get(store_type)
    return {} if model is None else dict(model.changelog_shape(start, end))


def changelog_key(store_type: str, key: bytes, start: int = 100, end: int = 200, seqnum: int = 0) -> bytes:
    logged: bytes = MODEL_OF[store_type].changelog_key(key, start, end, seqnum)
    return logged


# --- records per write ---------------------------------------------------------------------------------


@rules("CL-2", "CL-3", "CL-6", "CL-7")
@given(st.sampled_from(PLAIN_CONTEXT_TIME_TYPES), BYTES, BYTES, TIMESTAMPS, HEADERS)
def test_plain_stores_log_the_value_at_the_context_timestamp(implementation: Any, store_type: str, key: bytes, value: bytes,
                                                            ctx_ts: int, ctx_headers: list[tuple[str, bytes | None]]) -> None:
    out = write(implementation, store_type, "put", key, value, ctx_ts, ctx_headers, **shape_extra(store_type))
    assert out["record"] == {"key": changelog_key(store_type, key).hex(), "value": value.hex(), "timestamp": ctx_ts, "headers": []}


@rules("CL-4", "CL-6")
@given(st.sampled_from([TIMESTAMPED_KV, TIMESTAMPED_WINDOW]), BYTES, BYTES, TIMESTAMPS, TIMESTAMPS)
def test_timestamped_stores_log_the_raw_value_at_the_stored_timestamp(implementation: Any, store_type: str, key: bytes, value: bytes,
                                                                     stored_ts: int, ctx_ts: int) -> None:
    stored = stored_value(store_type, value, stored_ts, [])
    out = write(implementation, store_type, "put", key, stored, ctx_ts, [("h", b"1")], **shape_extra(store_type))
    assert out["record"] == {"key": changelog_key(store_type, key).hex(), "value": value.hex(), "timestamp": stored_ts, "headers": []}


@rules("CL-8")
@given(st.sampled_from(types.HEADERS_TYPES), BYTES, BYTES, TIMESTAMPS, HEADERS, TIMESTAMPS, HEADERS)
def test_header_stores_log_raw_value_and_stored_headers(implementation: Any, store_type: str, key: bytes, value: bytes, stored_ts: int,
                                                        headers: list[tuple[str, bytes | None]], ctx_ts: int,
                                                        ctx_headers: list[tuple[str, bytes | None]]) -> None:
    stored = stored_value(store_type, value, stored_ts, headers)
    out = write(implementation, store_type, "put", key, stored, ctx_ts, ctx_headers, **shape_extra(store_type))
    # A stored value that keeps no timestamp (the session's) leaves the record the context's (CL-8).
    expected_ts = stored_ts if store_type in types.TIMESTAMPED_TYPES else ctx_ts
    assert out["record"] == {"key": changelog_key(store_type, key).hex(), "value": value.hex(),
                             "timestamp": expected_ts, "headers": json_headers(headers)}


@rules("CL-3", "CL-4", "CL-6", "CL-7", "CL-8")
@given(st.sampled_from([t for family in CONTEXT_TIME_FAMILIES for t in family.types]), BYTES, TIMESTAMPS, HEADERS)
def test_tombstones_carry_the_context_timestamp_and_only_header_stores_the_context_headers(
        implementation: Any, store_type: str, key: bytes, ctx_ts: int, ctx_headers: list[tuple[str, bytes | None]]) -> None:
    expected_headers = json_headers(ctx_headers) if store_type in types.HEADERS_TYPES else []
    expected = {"key": changelog_key(store_type, key).hex(), "value": None, "timestamp": ctx_ts, "headers": expected_headers}
    for operation in MODEL_OF[store_type].TOMBSTONE_WRITES:
        out = write(implementation, store_type, operation, key, None, ctx_ts, ctx_headers, **shape_extra(store_type))
        assert out["record"] == expected, operation


@rules("CL-3", "CL-4", "CL-8")
@given(st.sampled_from(types.KV_TYPES), BYTES, BYTES, st.one_of(st.none(), BYTES), TIMESTAMPS)
def test_put_if_absent_logs_only_when_absent(implementation: Any, store_type: str, key: bytes, value: bytes,
                                             previous: bytes | None, ts: int) -> None:
    stored = stored_value(store_type, value, ts, [])
    prev = None if previous is None else stored_value(store_type, previous, ts, [])
    out = write(implementation, store_type, "put_if_absent", key, stored, ts, [], previous=None if prev is None else prev.hex())
    if prev is None:
        assert out["record"] == {"key": key.hex(), "value": value.hex(), "timestamp": ts, "headers": []}
    else:
        assert out["record"] is None


@rules("CL-5")
@given(BYTES, st.one_of(st.none(), BYTES), TIMESTAMPS, TIMESTAMPS)
def test_versioned_stores_log_at_the_version_timestamp(implementation: Any, key: bytes, value: bytes | None, ts: int, ctx_ts: int) -> None:
    operation = "delete" if value is None else "put"
    out = write(implementation, VERSIONED_KV, operation, key, value, ctx_ts, [("h", None)], timestamp=ts)
    assert out["record"] == {"key": key.hex(), "value": None if value is None else value.hex(), "timestamp": ts, "headers": []}


@rules("CL-2")
@given(st.sampled_from(PLAIN_CONTEXT_TIME_TYPES), BYTES, NEGATIVE_INT64)
def test_negative_context_timestamps_cannot_be_logged(implementation: Any, store_type: str, key: bytes, ctx_ts: int) -> None:
    assert "error" in write(implementation, store_type, "put", key, b"v", ctx_ts, [], **shape_extra(store_type))


@rules("CL-2", "CL-4", "CL-5")
@given(NEGATIVE_INT64, BYTES)
def test_negative_stored_or_version_timestamps_cannot_be_logged(implementation: Any, ts: int, value: bytes) -> None:
    assert "error" in write(implementation, TIMESTAMPED_KV, "put", b"k", int64(ts) + value, 5, [])
    assert "error" in write(implementation, VERSIONED_KV, "put", b"k", value, 5, [], timestamp=ts)


@rules("CL-6")
@given(st.sampled_from(types.WINDOW_TYPES), st.integers(min_value=0, max_value=(1 << 31) - 1), st.booleans(), st.booleans(), INT64)
def test_window_logging_layer_counts_its_own_sequence_numbers(implementation: Any, store_type: str, seqnum: int, dups: bool,
                                                              tombstone: bool, start: int) -> None:
    value = None if tombstone else stored_value(store_type, b"v", 1, [])
    out = write(implementation, store_type, "put", b"k", value, 9, [], window_start=start, seqnum=seqnum, retain_duplicates=dups)
    expected = ((seqnum + 1) & 0x7FFFFFFF) if dups else seqnum
    assert out["seqnum"] == expected
    assert out["record"]["key"] == (b"k" + int64(start) + expected.to_bytes(4, "big")).hex()


@rules("CL-6")
@pytest.mark.parametrize(("seqnum", "dups", "expected"), [((1 << 31) - 1, True, 0), ((1 << 31) - 2, True, (1 << 31) - 1),
                                                          (0, True, 1), (5, False, 5)])
def test_window_sequence_numbers_wrap_at_31_bits(implementation: Any, seqnum: int, dups: bool, expected: int) -> None:
    out = write(implementation, "window", "put", b"k", None, 9, [], window_start=0, seqnum=seqnum, retain_duplicates=dups)
    assert out["seqnum"] == expected and out["record"]["key"].endswith(expected.to_bytes(4, "big").hex())


# The position is the store's (CL-12): a store's position names a topic only with an offset of one of its
# partitions (each write adds topic, partition and offset together), so no topic is drawn without a partition.
@rules("CL-12")
@given(st.sampled_from([t for model in MODELS.values() for t in model.CONSISTENCY_CASE_TYPES]), HEADERS,
       st.dictionaries(st.text(max_size=3, alphabet="abc"),
                       st.dictionaries(st.integers(0, 9), st.integers(0, 99), min_size=1, max_size=2), max_size=2))
def test_consistency_headers_are_appended_v_then_c(implementation: Any, store_type: str, headers: list[tuple[str, bytes | None]],
                                                   position: dict[str, dict[int, int]]) -> None:
    pos_json = [[t, [[p, o] for p, o in parts.items()]] for t, parts in position.items()]
    stored = stored_value(store_type, b"v", 3, headers)
    out = write(implementation, store_type, "put", b"k", stored, 3, [], consistency_position=pos_json, **shape_extra(store_type))
    c_value = implementation.call("position.serialize", {"position": pos_json})["bytes"]
    own = json_headers(headers) if store_type in types.HEADERS_TYPES else []
    assert out["record"]["headers"] == [*own, ["v", "00"], ["c", c_value]]
    assert implementation.call("changelog.consistency_headers", {"position": pos_json}) == {"headers": [["v", "00"], ["c", c_value]]}


# --- restore ----------------------------------------------------------------------------------------------


def restore(implementation: Any, store_type: str, key: bytes, value: bytes | None, ts: int,
            headers: list[tuple[str, bytes | None]]) -> dict[str, Any]:
    record = {"key": key.hex(), "value": None if value is None else value.hex(), "timestamp": ts, "headers": json_headers(headers)}
    result: dict[str, Any] = implementation.call("changelog.restore_value", {"store_type": store_type, "record": record})
    return result


@rules("CL-9", "CL-10", "CL-11")
@given(st.sampled_from([*PLAIN_CONTEXT_TIME_TYPES, VERSIONED_KV, TIMESTAMPED_KV, TIMESTAMPED_WINDOW, *types.HEADERS_TYPES]),
       BYTES, BYTES, INT64, HEADERS)
def test_restore_builds_the_stored_format_from_the_record(implementation: Any, store_type: str, key: bytes, value: bytes, ts: int,
                                                          headers: list[tuple[str, bytes | None]]) -> None:
    out = restore(implementation, store_type, key, value, ts, headers)
    assert out["key"] == key.hex()
    assert out["value"] == stored_value(store_type, value, ts, headers).hex()
    if store_type == "versioned_kv":
        assert out["timestamp"] == ts


@rules("CL-9", "CL-10", "CL-11")
@given(st.sampled_from([KV, VERSIONED_KV, TIMESTAMPED_KV, TIMESTAMPED_WINDOW, *types.HEADERS_TYPES]), BYTES, INT64, HEADERS)
def test_restore_keeps_tombstones(implementation: Any, store_type: str, key: bytes, ts: int, headers: list[tuple[str, bytes | None]]) -> None:
    assert restore(implementation, store_type, key, None, ts, headers)["value"] is None


@rules("CL-4", "CL-8", "CL-10", "CL-11")
@given(st.sampled_from([TIMESTAMPED_KV, TIMESTAMPED_WINDOW, *types.HEADERS_TYPES]), BYTES, BYTES, TIMESTAMPS, HEADERS)
def test_logging_then_restoring_gives_back_the_stored_value(implementation: Any, store_type: str, key: bytes, value: bytes, ts: int,
                                                            headers: list[tuple[str, bytes | None]]) -> None:
    stored = stored_value(store_type, value, ts, headers)
    record = write(implementation, store_type, "put", key, stored, ts, [], **shape_extra(store_type))["record"]
    back = implementation.call("changelog.restore_value", {"store_type": store_type, "record": record})
    assert back["value"] == stored.hex()


@rules("CL-18")
@pytest.mark.kstate_level("tentative")
def test_restore_embeds_consistency_headers_in_header_values(implementation: Any) -> None:
    c_value = implementation.call("position.serialize", {"position": []})["bytes"]
    headers: list[tuple[str, bytes | None]] = [("a", b"x"), ("v", b"\x00"), ("c", bytes.fromhex(c_value))]
    out = restore(implementation, TIMESTAMPED_KV_WITH_HEADERS, b"k", b"v", 7, headers)
    assert out["value"] == stored_value(TIMESTAMPED_KV_WITH_HEADERS, b"v", 7, headers).hex()


@rules("CL-13")
@given(st.dictionaries(st.sampled_from("ab"), st.dictionaries(st.integers(0, 3), st.integers(0, 50), max_size=3), max_size=2),
       st.dictionaries(st.sampled_from("ab"), st.dictionaries(st.integers(0, 3), st.integers(0, 50), max_size=3), max_size=2))
def test_restore_merges_the_consistency_position(implementation: Any, current: dict[str, dict[int, int]], logged: dict[str, dict[int, int]]) -> None:
    def as_json(p: dict[str, dict[int, int]]) -> list[list[Any]]:
        return [[t, [[q, o] for q, o in parts.items()]] for t, parts in p.items()]

    c_value = implementation.call("position.serialize", {"position": as_json(logged)})["bytes"]
    merged = implementation.call("position.merge", {"base": as_json(current), "other": as_json(logged)})
    applied = implementation.call("changelog.apply_consistency",
                         {"position": as_json(current), "headers": [["v", "00"], ["c", c_value]], "enabled": True})
    assert applied == merged
    unchanged = implementation.call("position.merge", {"base": as_json(current), "other": []})
    for headers, enabled in [([["v", "00"], ["c", c_value]], False), ([["c", c_value]], True), ([["v", "01"], ["c", c_value]], True)]:
        assert implementation.call("changelog.apply_consistency", {"position": as_json(current), "headers": headers, "enabled": enabled}) == unchanged
    for bad in ([["v", "00"]], [["v", ""]], [["v", None]], [["v", "00"], ["c", None]]):
        assert "error" in implementation.call("changelog.apply_consistency", {"position": [], "headers": bad, "enabled": True})


# --- topics -----------------------------------------------------------------------------------------------

TOPIC_PART = st.text(alphabet="abcXYZ019._-", min_size=1, max_size=20)


@rules("CL-14")
@given(TOPIC_PART, TOPIC_PART, st.one_of(st.none(), TOPIC_PART))
def test_changelog_topic_name(implementation: Any, app: str, store: str, topology: str | None) -> None:
    payload: dict[str, Any] = {"application_id": app, "store_name": store}
    if topology is not None:
        payload["named_topology"] = topology
    middle = "" if topology is None else topology + "-"
    assert implementation.call("changelog.topic_name", payload) == {"topic": f"{app}-{middle}{store}-changelog"}


@rules("CL-14")
@pytest.mark.parametrize("app", ["my app", "app/1", "app\u00e9", "a" * 240],
                         ids=["space", "slash", "non-ascii", "too-long"])
def test_illegal_changelog_topic_names_are_refused(implementation: Any, app: str) -> None:
    assert "error" in implementation.call("changelog.topic_name", {"application_id": app, "store_name": "s"})


@rules("CL-15")
@pytest.mark.parametrize("store_type", types.KV_TYPES)
def test_key_value_changelogs_are_compacted_create_time_topics(implementation: Any, store_type: str) -> None:
    out = implementation.call("changelog.topic_config", {"store_type": store_type, "topic_defaults": {"cleanup.policy": "delete", "x": "1"},
                                                "log_config": {"y": "2"}})
    assert out == {"config": {"cleanup.policy": "delete", "message.timestamp.type": "CreateTime", "x": "1", "y": "2"}}
    assert implementation.call("changelog.topic_config", {"store_type": store_type})["config"] == {
        "cleanup.policy": "compact", "message.timestamp.type": "CreateTime"}


@rules("CL-15")
@pytest.mark.parametrize("store_type", types.KV_TYPES)
def test_the_stores_log_config_wins_over_the_applications_topic_defaults(implementation: Any, store_type: str) -> None:
    """Library defaults, then ``topic.*`` defaults, then the store's own log config: the last one set wins."""
    out = implementation.call("changelog.topic_config", {"store_type": store_type,
                                                "topic_defaults": {"cleanup.policy": "delete", "segment.ms": "10"},
                                                "log_config": {"segment.ms": "20"}})
    assert out == {"config": {"cleanup.policy": "delete", "message.timestamp.type": "CreateTime", "segment.ms": "20"}}


@rules("CL-16")
@given(st.sampled_from(types.SEGMENTED_TYPES), INT64, st.integers(min_value=0, max_value=INT64_MAX))
def test_windowed_changelog_retention_is_retention_plus_additional_saturating(implementation: Any, store_type: str, retention: int,
                                                                              additional: int) -> None:
    out = implementation.call("changelog.topic_config", {"store_type": store_type, "retention_ms": retention,
                                                "additional_retention_ms": additional})["config"]
    total = retention + additional
    assert out["retention.ms"] == str(total if -(1 << 63) <= total <= INT64_MAX else INT64_MAX)
    assert out["cleanup.policy"] == "compact,delete" and out["message.timestamp.type"] == "CreateTime"
    user = implementation.call("changelog.topic_config", {"store_type": store_type, "retention_ms": retention, "log_config": {"retention.ms": "7"}})
    assert user["config"]["retention.ms"] == "7"


@rules("CL-16")
def test_plain_window_store_with_duplicates_is_delete_only(implementation: Any) -> None:
    dup = implementation.call("changelog.topic_config", {"store_type": "window", "retention_ms": 0, "retain_duplicates": True})["config"]
    assert dup["cleanup.policy"] == "delete" and dup["retention.ms"] == "86400000"
    ts = implementation.call("changelog.topic_config", {"store_type": TIMESTAMPED_WINDOW, "retention_ms": 0, "retain_duplicates": True})
    assert ts["config"]["cleanup.policy"] == "compact,delete"


@rules("CL-17")
@given(st.integers(min_value=0, max_value=INT64_MAX), st.integers(min_value=0, max_value=INT64_MAX))
def test_versioned_changelog_compaction_lag_is_history_plus_one_day(implementation: Any, history: int, additional: int) -> None:
    out = implementation.call("changelog.topic_config", {"store_type": VERSIONED_KV, "history_retention_ms": history,
                                                "additional_retention_ms": additional})["config"]
    assert out["min.compaction.lag.ms"] == str(min(history + 86_400_000, INT64_MAX))
    assert out["cleanup.policy"] == "compact" and "retention.ms" not in out


@rules("CL-1", "CL-2")
@pytest.mark.parametrize(("store_type", "operation"), [
    *(write for model in MODELS.values() for write in model.UNDEFINED_CHANGELOG_WRITES), ("no_such_store", "put")])
def test_undefined_writes_are_refused(implementation: Any, store_type: str, operation: str) -> None:
    assert "error" in write(implementation, store_type, operation, b"k", b"v", 1, [], timestamp=1, **shape_extra(store_type))
