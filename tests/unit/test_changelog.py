"""Unit tests of the changelog and layout codecs (CL-*, LAY-*)."""

from __future__ import annotations

import contextlib
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kstate.codecs import changelog as cl
from kstate.codecs import header_values as hv
from kstate.codecs import layout as lay
from kstate.codecs import segments as seg
from kstate.codecs.header_values import encode_aggregation_with_headers, encode_value_timestamp_headers
from kstate.codecs.position import encode_position
from kstate.codecs.store_types import STORE_TYPES, Family, StoreType
from kstate.codecs.timestamped import encode_value_and_timestamp
from kstate.errors import DecodeError, EncodeError, KStateError

CTX = cl.RecordContext(1000, (("h", b"1"),))
T = StoreType


def test_plain_and_timestamped_records() -> None:
    assert cl.kv_put_record(T.KEY_VALUE, b"k", b"v", CTX) == cl.ChangelogRecord(b"k", b"v", 1000)
    stored = encode_value_and_timestamp(b"v", 5)
    assert cl.kv_put_record(T.TIMESTAMPED_KV, b"k", stored, CTX) == cl.ChangelogRecord(b"k", b"v", 5)
    assert cl.kv_put_record(T.TIMESTAMPED_KV, b"k", None, CTX) == cl.ChangelogRecord(b"k", None, 1000)
    assert cl.kv_delete_record(T.TIMESTAMPED_KV, b"k", CTX) == cl.ChangelogRecord(b"k", None, 1000)
    assert cl.kv_put_if_absent_record(T.KEY_VALUE, b"k", b"v", b"old", CTX) is None
    assert cl.kv_put_if_absent_record(T.KEY_VALUE, b"k", None, None, CTX) == cl.ChangelogRecord(b"k", None, 1000)


def test_header_store_records() -> None:
    stored = encode_value_timestamp_headers(b"v", 7, [("a", b"x"), ("a", None)])
    assert stored is not None
    record = cl.kv_put_record(T.TIMESTAMPED_KV_WITH_HEADERS, b"k", stored, CTX)
    assert record == cl.ChangelogRecord(b"k", b"v", 7, (("a", b"x"), ("a", None)))
    assert cl.kv_delete_record(T.TIMESTAMPED_KV_WITH_HEADERS, b"k", CTX).headers == CTX.headers
    aggregate = encode_aggregation_with_headers(b"agg", [("s", b"1")])
    assert aggregate is not None
    session = cl.segmented_put_record(T.SESSION_WITH_HEADERS, b"k", 1, 2, aggregate, CTX, family=Family.SESSION)
    assert session == cl.ChangelogRecord(b"k" + (2).to_bytes(8, "big") + (1).to_bytes(8, "big"), b"agg", 1000, (("s", b"1"),))


def test_segmented_records_take_the_key_layout_from_the_family() -> None:
    """CL-6, CL-7: the segmented write's key is its family's plain key schema; the session and window helpers are
    the same records (issue 33)."""
    aggregate = encode_aggregation_with_headers(b"agg", [("s", b"1")])
    session = cl.segmented_put_record(T.SESSION_WITH_HEADERS, b"k", 1, 2, aggregate, CTX)
    assert session == cl.segmented_put_record(T.SESSION_WITH_HEADERS, b"k", 1, 2, aggregate, CTX, family=Family.SESSION)
    assert session.key == b"k" + (2).to_bytes(8, "big") + (1).to_bytes(8, "big")  # end first (SESS-1)
    assert cl.segmented_put_record(T.WINDOW, b"k", 1, 2, b"v", CTX) == cl.window_put_record(T.WINDOW, b"k", 1, 2, b"v", CTX)
    assert cl.segmented_changelog_key(b"k", 1, 2, family=Family.SESSION) == b"k" + bytes(7) + b"\x02" + bytes(7) + b"\x01"
    assert cl.segmented_changelog_key(b"k", 1, 2, family=Family.WINDOW) == cl.window_changelog_key(b"k", 1, 2)
    for store_type, family in ((T.WINDOW, Family.SESSION), (T.KEY_VALUE, None), (T.VERSIONED_KV, None),
                               (T.TIME_ORDERED_WINDOW_WITH_HEADERS, None)):
        with pytest.raises(EncodeError, match="operation not defined"):
            cl.segmented_put_record(store_type, b"k", 0, 0, b"v", CTX, family=family)


def test_window_keys_and_seqnums() -> None:
    assert cl.window_changelog_key(b"k", 1, 2) == b"k" + (1).to_bytes(8, "big") + (2).to_bytes(4, "big")
    assert cl.next_seqnum(0x7FFFFFFF, True) == 0
    assert cl.next_seqnum(4, False) == 4
    with pytest.raises(EncodeError):
        cl.next_seqnum(1 << 31, True)


def test_negative_timestamps_are_refused() -> None:
    with pytest.raises(EncodeError, match="Invalid timestamp"):
        cl.kv_put_record(T.KEY_VALUE, b"k", b"v", cl.RecordContext(-1))
    with pytest.raises(EncodeError):
        cl.versioned_record(b"k", b"v", -2)
    with pytest.raises(EncodeError):
        cl.kv_put_record(T.TIMESTAMPED_KV, b"k", encode_value_and_timestamp(b"v", -1), CTX)


@pytest.mark.parametrize("bad", [1 << 40, "k", 3.5], ids=["huge-int", "str", "float"])
def test_keys_values_and_header_values_that_are_not_bytes_are_encode_errors(bad: object) -> None:
    """KV-26, CL-2: the record builders take bytes only; ``bytes(1 << 40)`` is never tried, a str is no TypeError."""
    builds = [
        lambda: cl.kv_put_record(T.KEY_VALUE, bad, b"v", CTX),  # type: ignore[arg-type]
        lambda: cl.kv_put_record(T.TIMESTAMPED_KV, b"k", bad, CTX),  # type: ignore[arg-type]
        lambda: cl.kv_put_record(T.TIMESTAMPED_KV_WITH_HEADERS, b"k", bad, CTX),  # type: ignore[arg-type]
        lambda: cl.kv_delete_record(T.KEY_VALUE, bad, CTX),  # type: ignore[arg-type]
        lambda: cl.versioned_record(bad, b"v", 5),  # type: ignore[arg-type]
        lambda: cl.versioned_record(b"k", b"v", 5, headers=[("h", bad)]),  # type: ignore[list-item]
        lambda: cl.window_put_record(T.WINDOW, bad, 0, 1, b"v", CTX),  # type: ignore[arg-type]
        lambda: cl.segmented_put_record(T.SESSION, bad, 0, 0, b"v", CTX),  # type: ignore[arg-type]
        lambda: cl.window_changelog_key(bad, 0, 1),  # type: ignore[arg-type]
        lambda: cl.segmented_changelog_key(bad, 0, 0, family=Family.SESSION),  # type: ignore[arg-type]
    ]
    for build in builds:
        with pytest.raises(EncodeError):
            build()


def test_operations_are_checked_against_the_store_type() -> None:
    with pytest.raises(EncodeError):
        cl.kv_put_record(T.WINDOW, b"k", b"v", CTX)
    with pytest.raises(EncodeError):
        cl.window_put_record(T.KEY_VALUE, b"k", 0, 0, b"v", CTX)
    with pytest.raises(EncodeError):
        cl.restore_value(T.TIME_ORDERED_WINDOW_WITH_HEADERS, cl.ChangelogRecord(b"k", b"v", 1))
    with pytest.raises(EncodeError):
        StoreType.parse("nope")


def test_consistency_headers_and_restore_merge() -> None:
    record = cl.kv_put_record(T.KEY_VALUE, b"k", b"v", CTX, position={"in": {0: 5}})
    assert record.headers == (("v", b"\x00"), ("c", encode_position({"in": {0: 5}})))
    assert cl.apply_consistency({"in": {0: 9}}, record.headers) == {"in": {0: 9}}
    assert cl.apply_consistency({"in": {0: 1}}, record.headers) == {"in": {0: 5}}
    assert cl.apply_consistency({}, [("v", b"\x02")]) == {}
    assert cl.apply_consistency({}, [("v", b"\x00")], enabled=False) == {}
    with pytest.raises(DecodeError):
        cl.apply_consistency({}, [("v", b"\x00")])
    with pytest.raises(DecodeError):
        cl.apply_consistency({}, [("v", None)])


@given(st.lists(st.tuples(st.sampled_from(["v", "c", "x"]), st.one_of(st.none(), st.binary(max_size=24))), max_size=4))
def test_apply_consistency_raises_only_typed_errors(headers: list[tuple[str, bytes | None]]) -> None:
    with contextlib.suppress(KStateError):
        cl.apply_consistency({"in": {0: 1}}, headers)


def test_restore_values() -> None:
    record = cl.ChangelogRecord(b"k", b"v", 5, (("a", b"x"),))
    assert cl.restore_value(T.KEY_VALUE, record) == b"v"
    assert cl.restore_value(T.TIMESTAMPED_WINDOW, record) == encode_value_and_timestamp(b"v", 5)
    assert cl.restore_value(T.TIMESTAMPED_KV_WITH_HEADERS, record) == encode_value_timestamp_headers(b"v", 5, [("a", b"x")])
    assert cl.restore_value(T.SESSION_WITH_HEADERS, record) == encode_aggregation_with_headers(b"v", [("a", b"x")])
    assert cl.restore_value(T.SESSION_WITH_HEADERS, cl.ChangelogRecord(b"k", None, 5)) is None


_HEADER_LISTS = st.lists(st.tuples(st.text(max_size=70), st.one_of(st.none(), st.binary(max_size=80))), max_size=70)
_ROWS = st.lists(st.tuples(st.binary(min_size=1, max_size=8), st.one_of(st.none(), st.binary(max_size=40)),
                           st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1),
                           st.one_of(st.none(), _HEADER_LISTS, _HEADER_LISTS.map(tuple))), max_size=6)


@given(st.sampled_from(list(T)), _ROWS)
def test_batch_restore_equals_record_by_record(store_type: StoreType, rows: list[cl.RestoreRow]) -> None:
    """``restore_entries``' one-loop paths give the bytes of ``restore_value`` for every row (CL-9 to CL-11)."""
    try:
        cl.record_converter(store_type)  # a store type without a restore rule is refused even for no rows
        expected = [(key, cl.restore_value(store_type, cl.ChangelogRecord(key, value, timestamp, tuple(headers or ()))))
                    for key, value, timestamp, headers in rows]
    except EncodeError:
        with pytest.raises(EncodeError):
            cl.restore_entries(store_type, rows)
        return
    assert cl.restore_entries(store_type, rows) == expected


@given(_HEADER_LISTS)
def test_header_fast_path_matches_the_checked_encoder(headers: list[tuple[str, bytes | None]]) -> None:
    """Plain pairs take the fast path; its bytes are the checked encoder's, and decode back (HV-1, HV-2)."""
    encoded = hv.encode_headers(headers)
    assert encoded == hv._encode_checked(headers)
    assert hv.decode_headers(encoded) == [(hv.decode_utf8_java(hv.encode_utf8_java(k)), v) for k, v in headers]


@pytest.mark.parametrize(("store_type", "row", "message"), [
    (T.TIMESTAMPED_KV, (b"k", "text", 1, None), "the value must be bytes"),
    (T.TIMESTAMPED_KV, (b"k", b"v", 1 << 63, None), "outside"),
    (T.TIMESTAMPED_KV_WITH_HEADERS, (b"k", b"v", 1, [("a",)]), "a header is a (key, value) pair"),
    (T.TIMESTAMPED_KV_WITH_HEADERS, (b"k", b"v", 1, [(None, b"x")]), "null header key"),
    (T.TIMESTAMPED_KV_WITH_HEADERS, (b"k", b"v", 1, [("a", "x")]), "header value must be bytes"),
    (T.TIMESTAMPED_KV_WITH_HEADERS, (b"k", 7, 1, None), "the value must be bytes"),
    (T.SESSION_WITH_HEADERS, (b"k", 10**9, 1, None), "the aggregation must be bytes"),
], ids=lambda p: p if isinstance(p, str) else None)
def test_bad_restore_rows_give_typed_errors(store_type: StoreType, row: cl.RestoreRow, message: str) -> None:
    with pytest.raises(EncodeError, match=re.escape(message)):
        cl.restore_entries(store_type, [row])


@given(st.sampled_from([T.TIMESTAMPED_KV, T.TIMESTAMPED_WINDOW, T.TIMESTAMPED_KV_WITH_HEADERS,
                        T.TIMESTAMPED_WINDOW_WITH_HEADERS, T.SESSION_WITH_HEADERS]), st.binary(max_size=24))
def test_logging_hostile_stored_values_raises_only_typed_errors(store_type: StoreType, stored: bytes) -> None:
    try:
        if STORE_TYPES[store_type].single_database:
            cl.kv_put_record(store_type, b"k", stored, CTX)
        else:
            cl.segmented_put_record(store_type, b"k", 0, 0, stored, CTX)
    except KStateError:
        pass


def test_topic_names_and_configs() -> None:
    assert cl.changelog_topic_name("app", "s") == "app-s-changelog"
    assert cl.changelog_topic_name("app", "s", "t") == "app-t-s-changelog"
    for bad in ("a b", "x" * 240):
        with pytest.raises(EncodeError):
            cl.changelog_topic_name(bad, "s")
    with pytest.raises(EncodeError):
        cl.validate_topic_name("..")
    assert cl.changelog_topic_config(T.WINDOW, retention_ms=-(1 << 63), additional_retention_ms=-1)["retention.ms"] == str((1 << 63) - 1)
    with pytest.raises(EncodeError):
        cl.changelog_topic_config(T.WINDOW)
    with pytest.raises(EncodeError):
        cl.changelog_topic_config(T.VERSIONED_KV)


# --- layout -----------------------------------------------------------------------------------------


def test_paths() -> None:
    assert lay.task_dir("app", 1, 2) == "app/1_2"
    assert lay.task_dir("app", 1, 2, "t") == "app/__t__/1_2"
    assert lay.store_dir(T.VERSIONED_KV, "s") == "rocksdb/s"
    assert seg.segment_dir("w", 2, 30000) == "w/w.60000"
    assert lay.position_file_name("s") == "s.position"
    assert lay.legacy_store_checkpoint_name("s") == ".checkpoint_s"
    with pytest.raises(EncodeError):
        lay.store_dir(T.KEY_VALUE, "")


def test_legacy_dates() -> None:
    assert seg.legacy_date_millis("197001010000") == 0
    assert seg.legacy_date_millis("201801011200") == 1514808000000
    assert seg.legacy_date_millis("201800011200") == seg.legacy_date_millis("201712011200")
    assert seg.legacy_date_millis("20180101120") == seg.legacy_date_millis("201801011200")
    assert seg.legacy_date_millis("2018010112") is None


@given(st.text(max_size=24), st.integers(min_value=1, max_value=1 << 40))
def test_segment_name_parsing_raises_only_typed_errors(name: str, interval: int) -> None:
    try:
        parsed = seg.parse_segment_name("store", name, interval)
    except KStateError:
        return
    assert parsed.segment_id >= -(1 << 63)


@given(st.text(max_size=16))
def test_task_dir_name_parsing_raises_only_typed_errors(name: str) -> None:
    with contextlib.suppress(KStateError):
        lay.parse_task_dir_name(name)


def test_column_family_plans() -> None:
    plan = lay.column_family_plan(T.TIMESTAMPED_KV, {"default": True})
    assert plan.mode == "upgrade" and plan.conversion == "convert_to_timestamped_format"
    with pytest.raises(lay.LayoutError):
        lay.column_family_plan(T.KEY_VALUE, {"keyValueWithTimestamp": False})
    with pytest.raises(lay.LayoutError, match="both plain"):
        lay.column_family_plan(T.TIMESTAMPED_KV_WITH_HEADERS, {"default": True, "keyValueWithTimestamp": False})
