"""Unit tests of the offsets, PositionSerde and checkpoint codecs (OFF-*)."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kstate.codecs import offsets as o
from kstate.codecs import position as pos
from kstate.errors import DecodeError, EncodeError, KStateError

# --- PositionSerde ----------------------------------------------------------------------------------


def test_empty_position_is_forty_zero_bytes() -> None:
    assert pos.encode_position({}) == bytes(40)
    assert pos.kafka_capacity({}) == 40


def test_one_topic_one_partition_is_202_bytes() -> None:
    data = pos.encode_position({"in": {0: 5}})
    assert len(data) == 202
    assert data[:27] == bytes.fromhex("00" "00000001" "00000002" "696e" "00000001" "00000000" "0000000000000005")
    assert data[27:] == bytes(175)
    assert pos.decode_position(data) == ({"in": {0: 5}}, 27)


def test_position_input_forms_and_refusals() -> None:
    assert pos.to_position([("a", [(1, 2)])]) == {"a": {1: 2}}
    with pytest.raises(EncodeError):
        pos.to_position([("a", []), ("a", [])])
    with pytest.raises(EncodeError):
        pos.to_position([("a", [(1, 2), (1, 3)])])
    with pytest.raises(EncodeError):
        pos.to_position({"a": {1 << 31: 0}})
    with pytest.raises(EncodeError):
        pos.to_position({"a": {0: 1 << 63}})


def test_unpaired_surrogate_topic_is_written_as_question_mark() -> None:
    assert pos.meaningful_bytes({"a\ud800": {}})[9:11] == b"a?"


@pytest.mark.parametrize("data", [b"", b"\x01", b"\x00", b"\x00\xff\xff\xff\xff", b"\x00\x7f\xff\xff\xff",
                                  b"\x00\x00\x00\x00\x01\xff\xff\xff\xff"])
def test_position_refusals(data: bytes) -> None:
    with pytest.raises(DecodeError):
        pos.decode_position(data)


def test_huge_counts_are_refused_before_allocating() -> None:
    with pytest.raises(DecodeError, match="cannot fit"):
        pos.decode_position(b"\x00\x7f\xff\xff\xff" + bytes(16))
    with pytest.raises(DecodeError, match="cannot fit"):
        pos.decode_position(b"\x00\x00\x00\x00\x01\x00\x00\x00\x01t\x7f\xff\xff\xff" + bytes(24))
    with pytest.raises(DecodeError):
        pos.decode_position(b"\x00\x00\x00\x00\x01\x7f\xff\xff\xff")


@given(st.binary(max_size=80))
def test_position_decoder_raises_only_typed_errors(data: bytes) -> None:
    try:
        decoded, used = pos.decode_position(data)
    except DecodeError:
        return
    assert used <= len(data)
    assert pos.decode_position(pos.encode_position(decoded))[0] == decoded


def test_merge_and_sorted_form() -> None:
    merged = pos.merge_positions({"b": {1: 5}, "a": {}}, {"b": {1: 3, 0: 1}, "c": {2: 2}})
    assert merged == {"b": {1: 5, 0: 1}, "a": {}, "c": {2: 2}}
    assert pos.sorted_position(merged) == [("a", []), ("b", [(0, 1), (1, 5)]), ("c", [(2, 2)])]
    assert [t for t, _ in pos.sorted_position({"\uff5e": {}, "\U0001f389": {}})] == ["\U0001f389", "\uff5e"]


# --- offsets column family -------------------------------------------------------------------------


def test_keys_and_values() -> None:
    assert o.topic_partition_key("app-s-changelog", 3) == b"app-s-changelog-3"
    assert o.topic_partition_key("t", -1) == b"t--1"
    assert o.encode_offset_value(42) == bytes(7) + b"\x2a"
    assert o.decode_offset_value(bytes(8)) == 0
    for bad in (b"", bytes(4), bytes(9)):
        with pytest.raises(DecodeError):
            o.decode_offset_value(bad)


def test_decode_entry_kinds() -> None:
    assert o.decode_entry(o.STATUS_KEY, o.encode_status(True)) == {"kind": "status", "status": "open", "value": 1}
    assert o.decode_entry(o.STATUS_KEY, o.encode_status(False))["status"] == "closed"
    assert o.decode_entry(o.POSITION_KEY, bytes(40)) == {"kind": "position", "position": {}, "bytes_consumed": 5}
    assert o.decode_entry(b"t-0", bytes(8)) == {"kind": "offset", "topic_partition": "t-0", "offset": 0}


@given(st.binary(max_size=12), st.binary(max_size=48))
def test_decode_entry_raises_only_typed_errors(key: bytes, value: bytes) -> None:
    with contextlib.suppress(DecodeError):
        o.decode_entry(key, value)


def test_commit_open_close_cycle() -> None:
    cf, position = o.open_offsets({})
    assert cf == {o.STATUS_KEY: o.encode_status(True)} and position == {}
    with pytest.raises(o.UncleanShutdownError):
        o.open_offsets(cf)
    cf = o.commit_position(o.commit_offsets(cf, {("t", 0): 9}), {"in": {0: 4}})
    assert o.committed_offset(cf, "t", 0) == 9
    cf = o.commit_offsets(cf, {("t", 0): None, ("t", 1): 2})
    assert o.committed_offset(cf, "t", 0) is None and o.committed_offset(cf, "t", 1) == 2
    assert o.close_offsets(cf, opened=False) == cf
    closed = o.close_offsets(cf, opened=True)
    reopened, position = o.open_offsets(closed)
    assert position == {"in": {0: 4}} and reopened[o.STATUS_KEY] == o.encode_status(True)
    assert o.commit_offsets(reopened, {}) == {o.STATUS_KEY: o.encode_status(True)}


def test_open_refuses_malformed_status_unless_told_to_ignore() -> None:
    with pytest.raises(o.UncleanShutdownError):
        o.open_offsets({o.STATUS_KEY: b"\x00"})
    assert o.open_offsets({o.STATUS_KEY: b"\x00"}, ignore_invalid_state=True)[0][o.STATUS_KEY] == o.encode_status(True)


def test_migrations() -> None:
    cf = o.migrate_checkpoint_offsets({}, {("a", 0): 5, ("a", 1): -4, ("b", 0): 7}, [("a", 0), ("a", 1)])
    assert cf == {b"a-0": o.encode_offset_value(5)}
    assert o.migrate_checkpoint_offsets({b"x": b"y"}, {("a", 1): -4}, [("a", 1)]) == {b"x": b"y"}
    migrated = o.migrate_position_file(o.commit_position({}, {"in": {0: 9}}), {"in": {0: 3, 1: 1}})
    assert pos.decode_position(migrated[o.POSITION_KEY])[0] == {"in": {0: 9, 1: 1}}
    assert o.downgrade_checkpoint_offsets({("a", 0): None, ("a", 1): 3}) == {("a", 0): -4, ("a", 1): 3}


# --- checkpoint text --------------------------------------------------------------------------------


def test_write_text_and_refusals() -> None:
    assert o.write_checkpoint_text([]) is None
    assert o.write_checkpoint_text({("t", 0): 5, ("u", 1): -4}) == b"0\n2\nt 0 5\nu 1 -4\n"
    with pytest.raises(EncodeError, match="negative offset"):
        o.write_checkpoint_text([("t", 0, -1)])
    with pytest.raises(EncodeError):
        o.write_checkpoint_text([("t", 0, None)])
    with pytest.raises(EncodeError):
        o.write_checkpoint_text([("t", 0, 1), ("t", 0, 2)])
    assert o.write_checkpoint_text([("a\ud800", 0, 1)]) == b"0\n1\na? 0 1\n"


@pytest.mark.parametrize(("text", "pieces"), [("a b c", ["a", "b", "c"]), (" a b", ["", "a", "b"]), ("a b  ", ["a", "b"]),
                                             ("", [""]), ("   ", []), ("a\x0bb\x0cc", ["a", "b", "c"]), ("a\u00a0b", ["a\u00a0b"])])
def test_java_whitespace_split(text: str, pieces: list[str]) -> None:
    assert o.java_whitespace_split(text) == pieces


@pytest.mark.parametrize(("text", "value"), [("0", 0), ("+7", 7), ("-0", 0), ("007", 7), ("\u0663", 3), ("\uff19", 9),
                                             ("2147483647", 2147483647), ("-2147483648", -2147483648)])
def test_java_parse_int(text: str, value: int) -> None:
    assert o.parse_java_int(text) == value


@pytest.mark.parametrize("text", ["", "+", "-", " 1", "1 ", "1_0", "0x1", "2147483648", "-2147483649", "\U0001d7d3", "١٢٣x", "9" * 400])
def test_java_parse_int_refusals(text: str) -> None:
    with pytest.raises(DecodeError):
        o.parse_java_int(text)


def test_read_unknown_as_none_and_leniencies() -> None:
    assert o.read_checkpoint_text(b"0\n1\nt 0 -4\n") == {("t", 0): -4}
    assert o.read_checkpoint_text(b"0\n1\nt 0 -4\n", unknown_as_none=True) == {("t", 0): None}
    assert o.checkpoint_text_leniencies(b"0\n1\nt 0 5\n") == []
    assert o.checkpoint_text_leniencies(b"0\n1\nt 0 +5\n") != []
    assert o.checkpoint_text_leniencies(b"0\n2\nt 0 5\nu 0 -1\n") != []
    assert o.checkpoint_text_leniencies(b"0\n1\nt 0 5") != []
    assert o.checkpoint_text_leniencies(b"garbage") == []


@given(st.binary(max_size=60))
def test_checkpoint_reader_raises_only_typed_errors(data: bytes) -> None:
    with contextlib.suppress(KStateError):
        o.read_checkpoint_text(data)


@given(st.text(alphabet="0123456789 -+\t\n\r\x0bab\u00a0", max_size=40))
def test_checkpoint_reader_on_near_valid_text(text: str) -> None:
    try:
        entries = o.read_checkpoint_text(text.encode("utf-8"))
    except DecodeError:
        return
    rewritten = o.write_checkpoint_text({tp: v for tp, v in entries.items() if v is not None})
    assert rewritten is None or o.read_checkpoint_text(rewritten) == entries


def test_position_checkpoint_conversions() -> None:
    assert o.position_to_checkpoint({"a": {0: 1}, "b": {}}) == {("a", 0): 1}
    assert o.position_from_checkpoint({("a", 0): 1, ("a", 1): None}) == {"a": {0: 1}}
