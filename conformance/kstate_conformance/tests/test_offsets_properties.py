"""Properties of store-managed offsets, PositionSerde and OffsetCheckpoint files (OFF-*)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from kstate.ops.position_order import position_bytes_in_canonical_order
from kstate_conformance import rules
from kstate_conformance.strategies import INT32, INT64, INT64_MAX

JAVA_WHITESPACE = " \t\n\x0b\x0c\r"
STATUS = b"status".hex()
POSITION = b"position".hex()
OPEN = (1).to_bytes(8, "big").hex()
CLOSED = (0).to_bytes(8, "big").hex()

# Topics a checkpoint line can carry: no Java whitespace, no surrogates (Java would write '?').
CHECKPOINT_TOPIC = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters=JAVA_WHITESPACE), max_size=12
)
CHECKPOINT_OFFSET = st.one_of(st.integers(min_value=0, max_value=INT64_MAX), st.just(-4))
CHECKPOINT_ENTRIES = st.lists(
    st.tuples(CHECKPOINT_TOPIC, INT32, CHECKPOINT_OFFSET), min_size=1, max_size=8, unique_by=lambda e: (e[0], e[1])
)
POSITION_TOPIC = st.text(alphabet=st.characters(codec="utf-8"), max_size=10)
POSITIONS = st.dictionaries(POSITION_TOPIC, st.dictionaries(INT32, INT64, max_size=4), max_size=4)


def java_order(entries: list[tuple[str, int, int]]) -> list[list[Any]]:
    """Entries sorted as the vectors list them: topic in UTF-16 order, then partition."""
    return [list(e) for e in sorted(entries, key=lambda e: (e[0].encode("utf-16-be"), e[1]))]


def checkpoint_text(entries: list[tuple[str, int, int]]) -> str:
    return f"0\n{len(entries)}\n" + "".join(f"{t} {p} {o}\n" for t, p, o in entries)


def position_json(position: dict[str, dict[int, int]]) -> list[list[Any]]:
    return [[topic, [[p, o] for p, o in partitions.items()]] for topic, partitions in position.items()]


def canonical(position: dict[str, dict[int, int]]) -> list[list[Any]]:
    return [[t, [[p, o] for p, o in sorted(position[t].items())]] for t in sorted(position, key=lambda t: t.encode("utf-16-be"))]


def meaningful_position_bytes(position: dict[str, dict[int, int]]) -> bytes:
    out = b"\x00" + len(position).to_bytes(4, "big")
    for topic, partitions in position.items():
        raw = topic.encode("utf-8")
        out += len(raw).to_bytes(4, "big") + raw + len(partitions).to_bytes(4, "big")
        for partition, offset in partitions.items():
            out += partition.to_bytes(4, "big", signed=True) + offset.to_bytes(8, "big", signed=True)
    return out


def kafka_capacity(position: dict[str, dict[int, int]]) -> int:
    return 8 + 32 + sum(32 + len(t.encode("utf-8")) + 32 + 96 * len(p) for t, p in position.items())


def read(implementation: Any, text: str | bytes | None) -> dict[str, Any]:
    data = None if text is None else (text if isinstance(text, bytes) else text.encode("utf-8")).hex()
    result: dict[str, Any] = implementation.call("checkpoint.read", {"file": data})
    return result


# --- OffsetCheckpoint: writing ------------------------------------------------------------------------


@rules("OFF-13", "OFF-16")
@given(CHECKPOINT_ENTRIES)
def test_checkpoint_write_is_the_documented_text_and_reads_back(implementation: Any, entries: list[tuple[str, int, int]]) -> None:
    out = implementation.call("checkpoint.write", {"entries_in_map_order": [list(e) for e in entries]})
    expected = checkpoint_text(entries)
    assert out["file_exists"] is True
    assert out["file_text"] == expected
    assert bytes.fromhex(out["file"]) == expected.encode("utf-8")
    assert out["read_back"] == {"entries": java_order(entries)}


@rules("OFF-14")
@given(CHECKPOINT_ENTRIES, st.integers(min_value=-(1 << 63), max_value=-1).filter(lambda v: v != -4), st.data())
def test_checkpoint_write_refuses_negative_offsets_other_than_unknown(implementation: Any, entries: list[tuple[str, int, int]],
                                                                      bad: int, data: st.DataObject) -> None:
    index = data.draw(st.integers(min_value=0, max_value=len(entries) - 1))
    topic, partition, _ = entries[index]
    entries[index] = (topic, partition, bad)
    out = implementation.call("checkpoint.write", {"entries_in_map_order": [list(e) for e in entries]})
    assert "error" in out and out.get("file_exists") is False


@rules("OFF-14")
@given(CHECKPOINT_TOPIC, INT32)
def test_checkpoint_unknown_offset_is_written_as_minus_four(implementation: Any, topic: str, partition: int) -> None:
    out = implementation.call("checkpoint.write", {"entries_in_map_order": [[topic, partition, -4]]})
    assert out["file_text"] == f"0\n1\n{topic} {partition} -4\n"
    assert out["read_back"] == {"entries": [[topic, partition, -4]]}


@rules("OFF-15")
def test_checkpoint_empty_map_writes_no_file(implementation: Any) -> None:
    out = implementation.call("checkpoint.write", {"entries_in_map_order": []})
    # No file exists afterwards, so there are no file bytes or text to report; the missing file reads as empty.
    assert out == {"file_exists": False, "read_back": {"entries": []}}
    assert read(implementation, None) == {"entries": []}


@rules("OFF-20", "OFF-14")
@given(st.lists(st.tuples(CHECKPOINT_TOPIC, INT32, st.one_of(st.none(), st.integers(0, INT64_MAX))), max_size=5,
                unique_by=lambda e: (e[0], e[1])))
def test_downgrade_checkpoint_writes_null_as_unknown(implementation: Any, committed: list[tuple[str, int, int | None]]) -> None:
    out = implementation.call("checkpoint.write_downgrade", {"committed": [list(e) for e in committed]})
    if not committed:
        assert out["file"] is None
        return
    expected = [(t, p, -4 if o is None else o) for t, p, o in committed]
    # The entries in the map's iteration order (OFF-20): Kafka's maybeDowngradeOffsets copies the offsets into a
    # HashMap and writes its order, the reference writes the committed order. The header is exact, the entries
    # are every committed partition once, a null as -4.
    text = bytes.fromhex(out["file"]).decode("utf-8")
    prefix = f"0\n{len(expected)}\n"
    assert text.startswith(prefix) and text.endswith("\n"), text
    assert sorted(text[len(prefix):].split("\n")[:-1]) == sorted(f"{t} {p} {o}" for t, p, o in expected)


# --- OffsetCheckpoint: reading ------------------------------------------------------------------------


@rules("OFF-16")
@given(CHECKPOINT_ENTRIES, st.lists(st.text(alphabet=" \t\x0b\x0c", min_size=1, max_size=3), min_size=16, max_size=16))
def test_checkpoint_fields_split_on_java_whitespace_runs(implementation: Any, entries: list[tuple[str, int, int]], seps: list[str]) -> None:
    assume(all(t for t, _, _ in entries))  # an empty topic needs the separator at the start of the line
    lines = "".join(f"{t}{seps[2 * i % 16]}{p}{seps[(2 * i + 1) % 16]}{o}\n" for i, (t, p, o) in enumerate(entries))
    assert read(implementation, f"0\n{len(entries)}\n{lines}") == {"entries": java_order(entries)}


@rules("OFF-16")
@given(st.sampled_from(["\u00a0", "\u2007", "\u202f", "\u3000", "\u0085", "\u2028", "\x1c", "\x1f"]))
def test_checkpoint_unicode_spaces_are_not_separators(implementation: Any, space: str) -> None:
    assert "error" in read(implementation, f"0\n1\nt{space}0 5\n")
    if space not in "\u0085\u2028\x1c\x1f":  # never line breaks for BufferedReader either
        assert read(implementation, f"0\n1\nt{space}x 0 5\n") == {"entries": [[f"t{space}x", 0, 5]]}


@rules("OFF-16")
@given(st.text(alphabet=" \t\x0b\x0c", min_size=1, max_size=3), CHECKPOINT_TOPIC.filter(bool))
def test_checkpoint_leading_whitespace_makes_a_line_malformed(implementation: Any, lead: str, topic: str) -> None:
    assert "error" in read(implementation, f"0\n1\n{lead}{topic} 0 5\n")


@rules("OFF-16")
@pytest.mark.parametrize("line", ["t 0", "t 0 5 6", "", "t 0 x", "t x 5", "t 0 5L", "t 0 0x5", "t 2147483648 5",
                                  "t 0 9223372036854775808", "t 0 5_0", "t 0 +", "t 0 -"])
def test_checkpoint_malformed_lines_are_refused(implementation: Any, line: str) -> None:
    assert "error" in read(implementation, f"0\n1\n{line}\n")


@rules("OFF-16")
@pytest.mark.parametrize("text", [b"", b"0\n", b"1\n0\n", b" 0\n0\n", b"0 \n0\n", b"0\n 1\nt 0 5\n",
                                  b"\xef\xbb\xbf0\n0\n", b"0\n1\nt\xff 0 5\n", b"0\n1\nt\xc0\xaf 0 5\n"])
def test_checkpoint_bad_headers_and_encodings_are_refused(implementation: Any, text: bytes) -> None:
    assert "error" in read(implementation, text)


@rules("OFF-16")
@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"])
def test_checkpoint_lines_end_at_any_java_line_terminator(implementation: Any, ending: str) -> None:
    text = ending.join(["0", "2", "a 0 1", "b 1 2"]) + ending
    assert read(implementation, text) == {"entries": [["a", 0, 1], ["b", 1, 2]]}


@rules("OFF-17")
@given(CHECKPOINT_ENTRIES, st.integers(min_value=-(1 << 63), max_value=-1).filter(lambda v: v != -4), st.data())
def test_checkpoint_negative_offsets_are_skipped_and_counted_out(implementation: Any, entries: list[tuple[str, int, int]],
                                                                 bad: int, data: st.DataObject) -> None:
    at = data.draw(st.integers(min_value=0, max_value=len(entries)))
    lines = [f"{t} {p} {o}" for t, p, o in entries]
    lines.insert(at, f"skipped 0 {bad}")
    text = f"0\n{len(lines)}\n" + "".join(line + "\n" for line in lines)
    assert read(implementation, text) == {"entries": java_order(entries)}
    wrong = f"0\n{len(lines) - 1}\n" + "".join(line + "\n" for line in lines)
    assert "error" in read(implementation, wrong)


@rules("OFF-17")
@given(CHECKPOINT_ENTRIES, st.sampled_from([-1, 1, 2]))
def test_checkpoint_count_mismatch_is_refused(implementation: Any, entries: list[tuple[str, int, int]], delta: int) -> None:
    text = f"0\n{len(entries) + delta}\n" + "".join(f"{t} {p} {o}\n" for t, p, o in entries)
    assert "error" in read(implementation, text)


@rules("OFF-17")
@given(CHECKPOINT_ENTRIES, st.data())
def test_checkpoint_duplicate_partition_fails_the_count(implementation: Any, entries: list[tuple[str, int, int]], data: st.DataObject) -> None:
    t, p, o = entries[data.draw(st.integers(min_value=0, max_value=len(entries) - 1))]
    rows = [*entries, (t, p, o)]
    text = f"0\n{len(rows)}\n" + "".join(f"{a} {b} {c}\n" for a, b, c in rows)
    assert "error" in read(implementation, text)


@rules("OFF-21")
@pytest.mark.kstate_level("recommended")
@pytest.mark.parametrize("text", ["+0\n1\nt 0 5\n", "0\n+1\nt 0 5\n", "0\n1\nt +0 +5\n", "0\n1\nt\t0\x0b5\n",
                                  "0\n1\nt 0 5", "0\r\n1\r\nt 0 5\r\n", "0\n1\nt 00 005\n", "0\n1\nt \u0660 \u0665\n"])
def test_checkpoint_reader_accepts_forms_no_writer_produces(implementation: Any, text: str) -> None:
    assert read(implementation, text) == {"entries": [["t", 0, 5]]}


# --- <store>.position ----------------------------------------------------------------------------------


@rules("OFF-18")
@given(st.dictionaries(CHECKPOINT_TOPIC.filter(bool), st.dictionaries(INT32, st.integers(0, INT64_MAX), min_size=1, max_size=3),
                       max_size=3))
def test_position_file_round_trips(implementation: Any, position: dict[str, dict[int, int]]) -> None:
    written = implementation.call("position.to_checkpoint", {"position": position_json(position)})
    if not position:
        assert written["file"] is None
        return
    assert implementation.call("position.from_checkpoint", {"file": written["file"]}) == {"position": canonical(position)}


# --- PositionSerde -------------------------------------------------------------------------------------


@rules("OFF-8", "OFF-9")
@given(POSITIONS)
def test_position_bytes_are_padded_to_the_bit_size_capacity(implementation: Any, position: dict[str, dict[int, int]]) -> None:
    data = bytes.fromhex(implementation.call("position.serialize", {"position": position_json(position)})["bytes"])
    body = meaningful_position_bytes(position)
    assert len(data) == kafka_capacity(position)
    # OFF-8: the map's iteration order (a hash order in Kafka), so the topics and partitions may come in any order.
    assert position_bytes_in_canonical_order(data) == position_bytes_in_canonical_order(body + bytes(len(data) - len(body)))


@rules("OFF-9")
def test_position_fixed_examples(implementation: Any) -> None:
    assert implementation.call("position.serialize", {"position": []})["bytes"] == "00" * 40
    one = bytes.fromhex(implementation.call("position.serialize", {"position": [["in", [[0, 5]]]]})["bytes"])
    assert len(one) == 202 and one[:27] == meaningful_position_bytes({"in": {0: 5}}) and one[27:] == bytes(175)


@rules("OFF-10", "OFF-12")
@given(POSITIONS, st.binary(max_size=16))
def test_position_decoding_ignores_trailing_bytes(implementation: Any, position: dict[str, dict[int, int]], tail: bytes) -> None:
    body = meaningful_position_bytes(position)
    out = implementation.call("position.deserialize", {"bytes": (body + tail).hex()})
    assert out == {"position": canonical(position), "bytes_consumed": len(body)}


@rules("OFF-10", "OFF-12")
@given(POSITIONS)
def test_position_order_is_not_part_of_equality(implementation: Any, position: dict[str, dict[int, int]]) -> None:
    reordered = {t: dict(reversed(list(p.items()))) for t, p in reversed(list(position.items()))}
    first = implementation.call("position.deserialize", {"bytes": implementation.call("position.serialize", {"position": position_json(position)})["bytes"]})
    second = implementation.call("position.deserialize", {"bytes": implementation.call("position.serialize", {"position": position_json(reordered)})["bytes"]})
    assert first["position"] == second["position"] == canonical(position)


@rules("OFF-10")
@given(st.binary(max_size=64))
def test_position_decoding_of_arbitrary_bytes_refuses_or_stays_in_bounds(implementation: Any, data: bytes) -> None:
    out = implementation.call("position.deserialize", {"bytes": data.hex()})
    if "error" not in out:
        assert data[:1] == b"\x00" and 5 <= out["bytes_consumed"] <= len(data)


@rules("OFF-10")
@pytest.mark.parametrize("data", ["", "01", "7f", "00", "0000000001", "00ffffffff", "007fffffff",
                                  "0000000001" + "7fffffff", "0000000001" + "00000001" + "74" + "7fffffff"])
def test_position_decoding_refuses_bad_versions_and_counts(implementation: Any, data: str) -> None:
    assert "error" in implementation.call("position.deserialize", {"bytes": data})


@rules("OFF-11")
@given(POSITIONS, POSITIONS)
def test_position_merge_keeps_the_larger_offset(implementation: Any, a: dict[str, dict[int, int]], b: dict[str, dict[int, int]]) -> None:
    merged = implementation.call("position.merge", {"base": position_json(a), "other": position_json(b)})["position"]
    expected: dict[str, dict[int, int]] = {t: dict(p) for t, p in a.items()}
    for topic, partitions in b.items():
        target = expected.setdefault(topic, {})
        for partition, offset in partitions.items():
            target[partition] = max(offset, target.get(partition, offset))
    # A topic only `b` has, with no partitions, MAY be left out (Kafka merges partition by partition, OFF-11).
    without_empty_new = {t: p for t, p in expected.items() if p or t in a}
    assert merged in (canonical(expected), canonical(without_empty_new))


# --- the offsets column family ------------------------------------------------------------------------


@rules("OFF-1", "OFF-2", "OFF-3")
@given(CHECKPOINT_TOPIC, INT32, INT64)
def test_offset_entries_are_topic_partition_strings_and_longs(implementation: Any, topic: str, partition: int, offset: int) -> None:
    out = implementation.call("offsets.encode_entry", {"topic": topic, "partition": partition, "offset": offset})
    assert out == {"key": f"{topic}-{partition}".encode().hex(), "value": offset.to_bytes(8, "big", signed=True).hex()}
    back = implementation.call("offsets.decode_entry", out)
    assert back == {"kind": "offset", "topic_partition": f"{topic}-{partition}", "offset": offset}


@rules("OFF-2", "OFF-3")
def test_status_entries(implementation: Any) -> None:
    assert implementation.call("offsets.encode_entry", {"status": "open"}) == {"key": STATUS, "value": OPEN}
    assert implementation.call("offsets.encode_entry", {"status": "closed"}) == {"key": STATUS, "value": CLOSED}
    for bad in ["00000001", "00" * 9, ""]:
        assert "error" in implementation.call("offsets.decode_entry", {"key": STATUS, "value": bad})


@rules("OFF-5", "OFF-9")
@given(POSITIONS)
def test_position_entry_holds_padded_position_bytes(implementation: Any, position: dict[str, dict[int, int]]) -> None:
    entry = implementation.call("offsets.encode_entry", {"position": position_json(position)})
    assert entry["key"] == POSITION
    assert entry["value"] == implementation.call("position.serialize", {"position": position_json(position)})["bytes"]
    assert len(entry["value"]) // 2 == kafka_capacity(position)


CF_OFFSETS = st.lists(st.tuples(st.sampled_from(["a", "b", "app-s-changelog"]), st.integers(0, 3),
                                st.one_of(st.none(), st.integers(0, INT64_MAX))), min_size=1, max_size=6,
                      unique_by=lambda e: (e[0], e[1]))


def _cf_with(offsets: dict[tuple[str, int], int]) -> list[list[str]]:
    rows = [[STATUS, OPEN], [POSITION, "00" * 40]]
    rows += [[f"{t}-{p}".encode().hex(), o.to_bytes(8, "big").hex()] for (t, p), o in offsets.items()]
    return rows


@rules("OFF-4")
@given(st.dictionaries(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 3)), st.integers(0, INT64_MAX), max_size=5), CF_OFFSETS)
def test_commit_puts_offsets_and_deletes_nulls(implementation: Any, before: dict[tuple[str, int], int],
                                               commit: list[tuple[str, int, int | None]]) -> None:
    cf = implementation.call("offsets.commit", {"cf": _cf_with(before), "offsets": [list(e) for e in commit]})["cf"]
    expected: dict[tuple[str, int], int | None] = dict(before)
    for topic, partition, offset in commit:
        expected[(topic, partition)] = offset
    for (topic, partition), offset in expected.items():
        got = implementation.call("offsets.committed_offset", {"cf": cf, "topic": topic, "partition": partition})
        assert got == {"offset": offset}
    assert [STATUS, OPEN] in cf and [POSITION, "00" * 40] in cf


@rules("OFF-4")
@given(st.dictionaries(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 3)), st.integers(0, INT64_MAX), max_size=5))
def test_empty_commit_wipes_everything_but_status(implementation: Any, before: dict[tuple[str, int], int]) -> None:
    out = implementation.call("offsets.commit", {"cf": _cf_with(before), "offsets": []})
    # Every key but status is wiped, position included; "then the position is written again, as on every
    # commit" (OFF-4): Kafka 4.3 does that in a second call (commit(Position), offsets.commit_position), 4.4's one
    # commit(db, position, offsets) in the same one, with the store's position (the image's: empty, 40 zero bytes).
    assert out in ({"cf": [[STATUS, OPEN]]}, {"cf": [[POSITION, "00" * 40], [STATUS, OPEN]]}), out


@rules("OFF-6", "OFF-7")
def test_open_close_state_machine(implementation: Any) -> None:
    opened = implementation.call("offsets.open", {"cf": []})
    assert opened == {"cf": [[STATUS, OPEN]], "position": []}
    assert "error" in implementation.call("offsets.open", {"cf": opened["cf"]})
    assert implementation.call("offsets.open", {"cf": opened["cf"], "ignore_invalid_state": True})["cf"] == [[STATUS, OPEN]]
    never = implementation.call("offsets.close", {"cf": opened["cf"], "opened": False})
    assert never == {"cf": [[STATUS, OPEN]]}
    closed = implementation.call("offsets.close", {"cf": opened["cf"], "opened": True})
    assert closed == {"cf": [[STATUS, CLOSED]]}
    assert implementation.call("offsets.open", {"cf": closed["cf"]})["cf"] == [[STATUS, OPEN]]


@rules("OFF-6")
@given(st.binary(max_size=9).filter(lambda b: b != bytes(8)))
def test_open_refuses_any_status_but_closed(implementation: Any, status: bytes) -> None:
    assert "error" in implementation.call("offsets.open", {"cf": [[STATUS, status.hex()]]})


@rules("OFF-6", "OFF-5")
@given(POSITIONS)
def test_open_loads_the_committed_position(implementation: Any, position: dict[str, dict[int, int]]) -> None:
    cf = implementation.call("offsets.commit_position", {"cf": [[STATUS, CLOSED]], "position": position_json(position)})["cf"]
    assert implementation.call("offsets.open", {"cf": cf})["position"] == canonical(position)


@rules("OFF-19")
@given(CF_OFFSETS.map(lambda es: [(t, p, -4 if o is None else o) for t, p, o in es]))
def test_checkpoint_migration_commits_known_offsets_of_own_partitions(implementation: Any, entries: list[tuple[str, int, int]]) -> None:
    file = checkpoint_text(entries).encode().hex()
    own = [["a", 0], ["a", 1], ["app-s-changelog", 2]]
    cf = implementation.call("offsets.migrate_checkpoint", {"cf": [[STATUS, OPEN]], "checkpoint": file, "changelog_partitions": own})["cf"]
    for topic, partition, offset in entries:
        got = implementation.call("offsets.committed_offset", {"cf": cf, "topic": topic, "partition": partition})["offset"]
        assert got == (offset if [topic, partition] in own and offset != -4 else None)
    assert [STATUS, OPEN] in cf


@rules("OFF-22")
@pytest.mark.kstate_level("tentative")
def test_position_file_migration_merges_into_the_position_entry(implementation: Any) -> None:
    stored = implementation.call("offsets.commit_position", {"cf": [[STATUS, OPEN]], "position": [["in", [[0, 9], [1, 1]]]]})["cf"]
    file = b"0\n2\nin 1 4\nx 0 2\n".hex()
    cf = implementation.call("offsets.migrate_position_file", {"cf": stored, "file": file})["cf"]
    position = dict((k, v) for k, v in cf)[POSITION]
    decoded = implementation.call("position.deserialize", {"bytes": position})["position"]
    assert decoded == [["in", [[0, 9], [1, 4]]], ["x", [[0, 2]]]]
