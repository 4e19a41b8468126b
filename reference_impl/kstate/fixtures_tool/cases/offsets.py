"""Offsets column family, PositionSerde and checkpoint files: the edges the JVM vectors leave open (OFF-*)."""

from __future__ import annotations

from typing import Any

from kstate.fixtures_tool import CaseSpec

STATUS = "737461747573"
POSITION = "706f736974696f6e"
OPEN = "0000000000000001"
CLOSED = "0000000000000000"
# "app-s-changelog-0"
TP0 = "6170702d732d6368616e67656c6f672d30"
EMPTY_POSITION = "00" * 40
#: OFF-4, OFF-5: a commit writes the position again; Kafka 4.4.0 does it in the same call as the offsets.
POSITION_REWRITTEN = ("Kafka 4.4.0 has no commit of offsets alone: AbstractColumnFamilyAccessor.commit(db, position, "
                      "offsets) writes the store's position (the image's, else the empty one) in the same batch, after "
                      "the wipe of an empty map (OFF-4: 'then the position is written again'; OFF-5); 4.3.1's "
                      "commit(db, offsets) leaves it to the CommitCallback's second write")


def with_position_rewritten(rows: list[list[str]], position: str = EMPTY_POSITION) -> dict[str, Any]:
    """The ``also_accepted`` output of a commit that also writes ``position`` (Kafka 4.4.0): ``rows`` and the
    position row, in key order as the image is read back (OFF-4, OFF-5)."""
    return {"output": {"cf": sorted([*rows, [POSITION, position]])}, "why": POSITION_REWRITTEN}


def _hex(text: str) -> str:
    return text.encode("utf-8").hex()


def cases() -> list[CaseSpec]:
    return checkpoint_write_cases() + checkpoint_read_cases() + position_cases() + cf_cases() + migration_cases()


def checkpoint_write_cases() -> list[CaseSpec]:
    def write(name: str, entries: list[list[Any]], rules: tuple[str, ...] = (), note: str = "") -> CaseSpec:
        return CaseSpec(f"write_{name}", "checkpoint.write", {"entries_in_map_order": entries}, rules, note)

    return [
        write("empty_map_no_file", [], ("OFF-15",)),
        write("only_unknown", [["store-changelog", 0, -4]], ("OFF-14",)),
        write("zero_offset", [["t", 0, 0]], ("OFF-13",)),
        write("max_long", [["t", 2147483647, 9223372036854775807]], ("OFF-13",)),
        write("min_int_partition", [["t", -2147483648, 1]], ("OFF-13",)),
        write("minus_three_refused", [["t", 0, -3]], ("OFF-14",)),
        write("min_long_refused", [["t", 0, -9223372036854775808]], ("OFF-14",)),
        write("negative_last_refused", [["a", 0, 1], ["b", 0, 2], ["c", 0, -5]], ("OFF-14",)),
        write("tab_in_topic_unreadable", [["a\tb", 0, 1]], ("OFF-13", "OFF-16")),
        write("nbsp_in_topic_reads_back", [["a\u00a0b", 0, 1]], ("OFF-13", "OFF-16")),
        write("vt_in_topic_unreadable", [["a\u000bb", 0, 1]], ("OFF-16",)),
        write("duplicate_partition_refused", [["t", 0, 1], ["t", 0, 2]], ("OFF-13",),
              "a Java map cannot hold a partition twice; the neutral operation refuses such input"),
        write("map_order_kept", [["z", 1, 1], ["a", 0, 2], ["m", 5, 3]], ("OFF-13",)),
    ]


def checkpoint_read_cases() -> list[CaseSpec]:
    def read(name: str, text: str | bytes | None, rules: tuple[str, ...] = ()) -> CaseSpec:
        data = None if text is None else (text if isinstance(text, bytes) else text.encode("utf-8")).hex()
        return CaseSpec(f"read_{name}", "checkpoint.read", {"file": data}, rules)

    return [
        read("missing_file", None, ("OFF-15",)),
        read("empty_file", "", ("OFF-16",)),
        read("version_only", "0\n", ("OFF-16",)),
        read("unknown_version", "1\n0\n", ("OFF-16",)),
        read("negative_version", "-1\n0\n", ("OFF-16",)),
        read("unknown_kept", "0\n1\nt 0 -4\n", ("OFF-14", "OFF-17")),
        read("skipped_negative_decrements", "0\n2\nt 0 5\nu 0 -1\n", ("OFF-17",)),
        read("skipped_min_long", "0\n1\nt 0 -9223372036854775808\n", ("OFF-17",)),
        read("skipped_but_count_not_lowered", "0\n1\nt 0 5\nu 0 -2\n", ("OFF-17",)),
        read("duplicate_last_wins_then_count_fails", "0\n2\nt 0 5\nt 0 6\n", ("OFF-17",)),
        read("duplicate_with_matching_count", "0\n1\nt 0 5\nt 0 6\n", ("OFF-17",)),
        read("count_minus_one_empty", "0\n-1\n", ("OFF-17",)),
        read("tab_separator", "0\n1\nt\t0\t5\n", ("OFF-16", "OFF-21")),
        read("vt_ff_separators", "0\n1\nt\u000b0\u000c5\n", ("OFF-16", "OFF-21")),
        read("nbsp_is_not_whitespace", "0\n1\nt\u00a0x 0 5\n", ("OFF-16",)),
        read("nbsp_separator_malformed", "0\n1\nt\u00a00 5\n", ("OFF-16",)),
        read("ideographic_space_not_whitespace", "0\n1\nt\u30000 5\n", ("OFF-16",)),
        read("multiple_spaces", "0\n1\nt   0  5\n", ("OFF-16", "OFF-21")),
        read("trailing_spaces", "0\n1\nt 0 5  \n", ("OFF-16", "OFF-21")),
        read("leading_space_empty_topic", "0\n1\n 0 5\n", ("OFF-16",)),
        read("only_spaces_line", "0\n1\n   \n", ("OFF-16",)),
        read("crlf_endings", "0\r\n1\r\nt 0 5\r\n", ("OFF-16", "OFF-21")),
        read("cr_endings", "0\r1\rt 0 5\r", ("OFF-16", "OFF-21")),
        read("no_final_newline", "0\n1\nt 0 5", ("OFF-16", "OFF-21")),
        read("blank_line_after_entries", "0\n1\nt 0 5\n\n", ("OFF-16",)),
        read("arabic_indic_digits", "0\n1\nt \u0660 \u0665\n", ("OFF-16", "OFF-21")),
        read("fullwidth_digits", "0\n1\nt 0 \uff15\n", ("OFF-16", "OFF-21")),
        read("supplementary_digit_refused", "0\n1\nt 0 \U0001d7d3\n", ("OFF-16",)),
        read("underscore_refused", "0\n1\nt 0 5_0\n", ("OFF-16",)),
        read("plus_only_refused", "0\n1\nt 0 +\n", ("OFF-16",)),
        read("plus_plus_refused", "0\n1\nt 0 ++5\n", ("OFF-16",)),
        read("minus_zero_partition", "0\n1\nt -0 5\n", ("OFF-16", "OFF-21")),
        read("leading_zeros", "00\n01\nt 007 0042\n", ("OFF-16", "OFF-21")),
        read("min_int_partition", "0\n1\nt -2147483648 5\n", ("OFF-16",)),
        read("partition_overflow", "0\n1\nt -2147483649 5\n", ("OFF-16",)),
        read("max_long_offset", "0\n1\nt 0 9223372036854775807\n", ("OFF-16",)),
        read("bom_refused", b"\xef\xbb\xbf0\n1\nt 0 5\n", ("OFF-16",)),
        read("invalid_utf8_refused", b"0\n1\nt\xff 0 5\n", ("OFF-16",)),
        read("encoded_surrogate_refused", b"0\n1\nt\xed\xa0\x80 0 5\n", ("OFF-16",)),
        read("utf8_topic", "0\n1\nt\u00f6pic-\u65e5\u672c 3 9\n", ("OFF-16",)),
        read("sorted_output", "0\n3\nb 1 1\na 2 2\na 0 3\n", ("OFF-16",)),
        read("utf16_order_of_topics", "0\n2\n\U0001f389 0 1\n\uff5e 0 2\n", ("OFF-16",)),
    ]


def position_cases() -> list[CaseSpec]:
    one = [["in", [[0, 5]]]]
    out = [
        CaseSpec("position_serialize_empty", "position.serialize", {"position": []}, ("OFF-9",)),
        CaseSpec("position_serialize_one", "position.serialize", {"position": one}, ("OFF-8", "OFF-9")),
        CaseSpec("position_serialize_two_topics", "position.serialize",
                 {"position": [["b", [[1, 7], [0, -1]]], ["a", [[2147483647, 9223372036854775807]]]]}, ("OFF-8", "OFF-9")),
        CaseSpec("position_serialize_topic_without_partitions", "position.serialize", {"position": [["t", []]]}, ("OFF-9",)),
        CaseSpec("position_serialize_utf8_topic", "position.serialize", {"position": [["t\u00f6", [[0, 1]]]]}, ("OFF-8", "OFF-9")),
        CaseSpec("position_serialize_duplicate_topic_refused", "position.serialize",
                 {"position": [["t", [[0, 1]]], ["t", [[1, 1]]]]}, ("OFF-8",)),
    ]
    meaningful_one = "00" + "00000001" + "00000002" + _hex("in") + "00000001" + "00000000" + "0000000000000005"
    for name, data in [
        ("empty_padded", EMPTY_POSITION),
        ("empty_meaningful_only", "0000000000"),
        ("one_meaningful_only", meaningful_one),
        ("one_padded", meaningful_one + "00" * 175),
        ("trailing_garbage", meaningful_one + "deadbeef"),
        ("no_bytes", ""),
        ("unknown_version", "7f"),
        ("version_ff", "ff00000000"),
        ("truncated_count", "00000000"),
        ("negative_topic_count", "00ffffffff"),
        ("huge_topic_count", "007fffffff"),
        ("negative_topic_length", "0000000001ffffffff"),
        ("topic_length_past_end", "000000000100000010" + _hex("in")),
        ("negative_partition_count", "00" + "00000001" + "00000001" + _hex("t") + "ffffffff"),
        ("huge_partition_count", "00" + "00000001" + "00000001" + _hex("t") + "10000000" + "00" * 12),
        ("truncated_offset", "00" + "00000001" + "00000001" + _hex("t") + "00000001" + "00000000" + "00000005"),
        ("topic_without_partitions", "00" + "00000001" + "00000001" + _hex("t") + "00000000"),
        ("invalid_utf8_topic", "00" + "00000001" + "00000002" + "74ff" + "00000000"),
        ("duplicate_topic_last_wins", "00" + "00000002" + ("00000001" + _hex("t") + "00000001" + "00000000" + "%016x") % 1
         + ("00000001" + _hex("t") + "00000001" + "00000001" + "%016x") % 2),
        ("duplicate_partition_last_wins", "00" + "00000001" + "00000001" + _hex("t") + "00000002"
         + "00000000" + "0000000000000001" + "00000000" + "0000000000000002"),
    ]:
        out.append(CaseSpec(f"position_deserialize_{name}", "position.deserialize", {"bytes": data}, ("OFF-10",)))
    out += [
        CaseSpec("position_merge_max", "position.merge",
                 {"base": [["a", [[0, 5], [1, 9]]]], "other": [["a", [[0, 7], [1, 3]]], ["b", [[0, 1]]]]}, ("OFF-11",)),
        # A topic of `other` with no partitions MAY be left out (Kafka's merge does, OFF-11): only the base's is kept.
        CaseSpec("position_merge_empty_base_topic_kept", "position.merge", {"base": [["a", []]], "other": [["b", [[0, 1]]]]},
                 ("OFF-11", "OFF-12")),
        CaseSpec("position_to_checkpoint", "position.to_checkpoint", {"position": [["in", [[0, 5]]]]}, ("OFF-18",)),
        CaseSpec("position_to_checkpoint_empty", "position.to_checkpoint", {"position": [["in", []]]}, ("OFF-18",)),
        CaseSpec("position_from_checkpoint", "position.from_checkpoint", {"file": b"0\n2\nin 0 5\nin 1 -4\n".hex()}, ("OFF-18",)),
        CaseSpec("position_from_missing_file", "position.from_checkpoint", {"file": None}, ("OFF-18",)),
    ]
    return out


def cf_cases() -> list[CaseSpec]:
    full = [[STATUS, OPEN], [POSITION, EMPTY_POSITION], [TP0, "000000000000002a"], [_hex("other-1"), "0000000000000001"]]
    return [
        CaseSpec("entry_status_open", "offsets.encode_entry", {"status": "open"}, ("OFF-2", "OFF-3")),
        CaseSpec("entry_status_closed", "offsets.encode_entry", {"status": "closed"}, ("OFF-2", "OFF-3")),
        CaseSpec("entry_position", "offsets.encode_entry", {"position": [["in", [[0, 5]]]]}, ("OFF-5", "OFF-9")),
        CaseSpec("entry_offset", "offsets.encode_entry", {"topic": "app-s-changelog", "partition": 0, "offset": 42}, ("OFF-2", "OFF-3")),
        CaseSpec("entry_offset_utf8_topic", "offsets.encode_entry", {"topic": "\u00e9", "partition": 12, "offset": -1}, ("OFF-2",)),
        CaseSpec("entry_negative_partition", "offsets.encode_entry", {"topic": "t", "partition": -1, "offset": 0}, ("OFF-2",)),
        CaseSpec("entry_null_offset_is_delete", "offsets.encode_entry", {"topic": "t", "partition": 0, "offset": None}, ("OFF-4",)),
        CaseSpec("decode_status_open", "offsets.decode_entry", {"key": STATUS, "value": OPEN}, ("OFF-3",)),
        CaseSpec("decode_status_unknown", "offsets.decode_entry", {"key": STATUS, "value": "0000000000000002"}, ("OFF-3",)),
        CaseSpec("decode_status_short", "offsets.decode_entry", {"key": STATUS, "value": "00000001"}, ("OFF-3",)),
        CaseSpec("decode_offset", "offsets.decode_entry", {"key": TP0, "value": "000000000000002a"}, ("OFF-2", "OFF-3")),
        CaseSpec("decode_offset_long_value", "offsets.decode_entry", {"key": TP0, "value": "00" * 9}, ("OFF-3",)),
        CaseSpec("decode_ambiguous_key", "offsets.decode_entry", {"key": _hex("t--1"), "value": OPEN}, ("OFF-2",)),
        CaseSpec("decode_position", "offsets.decode_entry", {"key": POSITION, "value": EMPTY_POSITION}, ("OFF-10",)),
        CaseSpec("decode_position_garbage", "offsets.decode_entry", {"key": POSITION, "value": "7f"}, ("OFF-10",)),
        CaseSpec("commit_put_and_delete", "offsets.commit",
                 {"cf": full, "offsets": [["app-s-changelog", 0, 50], ["other", 1, None], ["new", 3, 0]]}, ("OFF-4",)),
        CaseSpec("commit_empty_map_wipes_all_but_status", "offsets.commit", {"cf": full, "offsets": []}, ("OFF-4",),
                 also_accepted=(with_position_rewritten([[STATUS, OPEN]]),)),
        CaseSpec("commit_empty_map_without_status", "offsets.commit", {"cf": full[1:], "offsets": []}, ("OFF-4",),
                 also_accepted=(with_position_rewritten([]),)),
        CaseSpec("commit_position", "offsets.commit_position", {"cf": full, "position": [["in", [[0, 5]]]]}, ("OFF-5",)),
        CaseSpec("open_fresh", "offsets.open", {"cf": []}, ("OFF-6",)),
        CaseSpec("open_closed_loads_position", "offsets.open",
                 {"cf": [[STATUS, CLOSED], [POSITION, "0000000001" + "00000002" + _hex("in") + "00000001" + "00000000" + "0000000000000005"]]},
                 ("OFF-6",)),
        CaseSpec("open_open_refused", "offsets.open", {"cf": [[STATUS, OPEN]]}, ("OFF-6",)),
        CaseSpec("open_garbage_status_refused", "offsets.open", {"cf": [[STATUS, "00000000"]]}, ("OFF-6",)),
        CaseSpec("open_ignore_invalid_state", "offsets.open", {"cf": [[STATUS, OPEN]], "ignore_invalid_state": True}, ("OFF-6",)),
        CaseSpec("open_corrupt_position_refused", "offsets.open", {"cf": [[STATUS, CLOSED], [POSITION, "7f"]]}, ("OFF-6", "OFF-10")),
        CaseSpec("close_opened", "offsets.close", {"cf": full, "opened": True}, ("OFF-7",)),
        CaseSpec("close_never_opened", "offsets.close", {"cf": [[STATUS, OPEN]], "opened": False}, ("OFF-7",)),
        CaseSpec("committed_offset_present", "offsets.committed_offset",
                 {"cf": full, "topic": "app-s-changelog", "partition": 0}, ("OFF-3",)),
        CaseSpec("committed_offset_absent", "offsets.committed_offset", {"cf": full, "topic": "app-s-changelog", "partition": 1}, ("OFF-3",)),
    ]


def migration_cases() -> list[CaseSpec]:
    checkpoint = b"0\n3\napp-s-changelog 0 17\napp-u-changelog 0 9\napp-s-changelog 1 -4\n".hex()
    partitions = [["app-s-changelog", 0], ["app-s-changelog", 1]]
    return [
        CaseSpec("migrate_checkpoint", "offsets.migrate_checkpoint",
                 {"cf": [[STATUS, OPEN]], "checkpoint": checkpoint, "changelog_partitions": partitions}, ("OFF-19",),
                 also_accepted=(with_position_rewritten([[TP0, "0000000000000011"], [STATUS, OPEN]]),)),
        CaseSpec("migrate_checkpoint_only_unknown_keeps_store", "offsets.migrate_checkpoint",
                 {"cf": [[STATUS, OPEN], [TP0, "0000000000000003"]], "checkpoint": b"0\n1\napp-s-changelog 0 -4\n".hex(),
                  "changelog_partitions": partitions}, ("OFF-19",)),
        CaseSpec("migrate_checkpoint_missing_file", "offsets.migrate_checkpoint",
                 {"cf": [], "checkpoint": None, "changelog_partitions": partitions}, ("OFF-19",)),
        CaseSpec("migrate_checkpoint_corrupt_file", "offsets.migrate_checkpoint",
                 {"cf": [], "checkpoint": b"0\n2\napp-s-changelog 0 1\n".hex(), "changelog_partitions": partitions}, ("OFF-19",)),
        CaseSpec("downgrade_checkpoint", "checkpoint.write_downgrade",
                 {"committed": [["app-s-changelog", 0, 17], ["app-s-changelog", 1, None]]}, ("OFF-20",)),
        CaseSpec("downgrade_checkpoint_empty", "checkpoint.write_downgrade", {"committed": []}, ("OFF-20",)),
        CaseSpec("migrate_position_file", "offsets.migrate_position_file",
                 {"cf": [[STATUS, OPEN]], "file": b"0\n2\nin 0 5\nin 1 7\n".hex()}, ("OFF-22",)),
        CaseSpec("migrate_position_file_absent", "offsets.migrate_position_file", {"cf": [[STATUS, OPEN]], "file": None}, ("OFF-22",)),
    ]
