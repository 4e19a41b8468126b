"""The Arrow pieces of the audit at scale, without a broker or a JVM: the Kafka source's record batches hold the rows
the row-by-row source yielded, offset ranges cover a partition exactly, the map-side combine keeps the latest record per key, and the
offset options are read or refused by name."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

pytest.importorskip("pyspark")  # the Kafka source module defines pyspark data-source classes
pa = pytest.importorskip("pyarrow")

from kstate.errors import InvalidArgumentError  # noqa: E402
from kstate.spark.kafka_source import (  # noqa: E402
    TO_THE_END,
    arrow_batch,
    arrow_schema,
    collector_paused,
    latest_per_key_batches,
    latest_per_key_option,
    offset_ranges,
    range_batches,
)

Headers = list[tuple[str, bytes | None]] | None


class FakeMessage:
    """The accessors of a confluent-kafka message the source calls (headers None when the record has none)."""

    def __init__(self, offset: int, key: bytes | None, value: bytes | None, timestamp: tuple[int, int],
                 headers: Headers) -> None:
        self._offset, self._key, self._value, self._timestamp, self._headers = offset, key, value, timestamp, headers

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def timestamp(self) -> tuple[int, int]:
        return self._timestamp

    def headers(self) -> Headers:
        return self._headers


def _old_rows(topic: str, partition: int, messages: list[FakeMessage]) -> list[tuple[Any, ...]]:
    """What the source yielded before Arrow, one tuple per message."""
    out = []
    for message in messages:
        timestamp_type, timestamp = message.timestamp()
        headers = message.headers()
        out.append((topic, partition, message.offset(), timestamp, timestamp_type, message.key(), message.value(),
                    [(k, v) for k, v in headers] if headers else []))
    return out


def test_an_arrow_batch_holds_the_rows_the_row_source_yielded() -> None:
    messages = [FakeMessage(0, b"k1", b"v1", (1, 1_700_000_000_000), [("a", b"1"), ("a", b"2"), ("n", None), ("e", b"")]),
                FakeMessage(1, b"k2", b"", (1, 5), None), FakeMessage(2, b"k1", None, (1, 7), [("\u0436", b"\xff")]),
                FakeMessage(3, b"\xff\x00", b"\x00", (0, -1), []), FakeMessage(4, None, b"x", (2, 2**41), None)]
    batch = arrow_batch("topic-a", 3, messages)
    assert batch.schema == arrow_schema()
    got = [tuple(row.values()) for row in batch.to_pylist()]
    expected = [(*row[:7], [{"key": k, "value": v} for k, v in row[7]]) for row in _old_rows("topic-a", 3, messages)]
    assert got == expected


def test_arrow_batches_of_random_messages_equal_the_old_rows() -> None:
    rng = random.Random(7)
    for _ in range(20):
        messages = [FakeMessage(n, rng.choice([None, rng.randbytes(rng.randrange(4))]),
                                rng.choice([None, b"", rng.randbytes(rng.randrange(40))]),
                                (1, rng.randrange(-2**63, 2**63)),
                                rng.choice([None, [], [(rng.choice("abc"), rng.choice([None, rng.randbytes(3)]))
                                                       for _ in range(rng.randrange(4))]]))
                    for n in range(rng.randrange(1, 30))]
        got = [tuple(row.values()) for row in arrow_batch("t", 0, messages).to_pylist()]
        assert got == [(*r[:7], [{"key": k, "value": v} for k, v in r[7]]) for r in _old_rows("t", 0, messages)]


@pytest.mark.parametrize(("start", "end", "splits"), [(0, 10, 3), (5, 6, 4), (0, 0, 2), (100, 1000, 7), (0, 9, 1)])
def test_offset_ranges_cover_the_partition_in_order(start: int, end: int, splits: int) -> None:
    ranges = offset_ranges(start, end, splits)
    assert ranges[0][0] == start and ranges[-1][1] == TO_THE_END
    assert 1 <= len(ranges) <= max(1, min(splits, end - start))
    assert all(low < high for low, high in ranges[:-1])
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))


def _changelog(rng: random.Random, count: int) -> list[FakeMessage]:
    """Messages of one partition in offset order: few keys (each repeated), tombstones, headers on some."""
    return [FakeMessage(n, b"k%d" % rng.randrange(12), None if rng.random() < 0.2 else rng.randbytes(rng.randrange(9)),
                        (1, 1_000 + n), rng.choice([None, [("h", b"%d" % n)]])) for n in range(count)]


def _fetched(messages: list[FakeMessage], sizes: list[int]) -> list[list[FakeMessage]]:
    """The messages as the consumer's fetched batches of the given sizes."""
    bounds = list(itertools.accumulate(sizes, initial=0))
    return [messages[low:high] for low, high in itertools.pairwise(bounds) if messages[low:high]]


def _reduced(batches: Any) -> dict[bytes, tuple[dict[str, Any], int]]:
    """Per key, the row a reduced range yielded (without its count) and its count; every key once."""
    out: dict[bytes, tuple[dict[str, Any], int]] = {}
    for batch in batches:
        assert batch.schema == arrow_schema(True)
        for row in batch.to_pylist():
            records = row.pop("records")
            assert row["key"] not in out
            out[row["key"]] = (row, records)
    return out


@pytest.mark.parametrize("compact_rows", [1_000_000, 50, 1])
def test_a_reduced_range_keeps_the_latest_record_per_key_and_counts_them_all(compact_rows: int) -> None:
    """RST-1: the highest offset wins per key, also across fetched batches and across the reductions of the rows
    held (``compact_rows``); a tombstone as the latest is kept."""
    rng = random.Random(17)
    messages = _changelog(rng, 300)
    messages.append(FakeMessage(300, b"k0", None, (1, 9), None))  # k0 ends deleted
    reduced = _reduced(latest_per_key_batches("t", 2, _fetched(messages, [7, 100, 1, 250]), rows_per_batch=5,
                                             compact_rows=compact_rows))
    last = {m.key(): m for m in messages}
    expected_rows = [tuple(r.values()) for r in arrow_batch("t", 2, list(last.values())).to_pylist()]
    assert sorted(tuple(row.values()) for row, _n in reduced.values()) == sorted(expected_rows)
    assert {k: n for k, (_row, n) in reduced.items()} == {k: sum(m.key() == k for m in messages) for k in last}
    assert sum(n for _row, n in reduced.values()) == len(messages)
    assert reduced[b"k0"][0]["value"] is None and reduced[b"k0"][0]["offset"] == 300


def test_ranges_of_one_partition_reduced_apart_combine_to_the_partitions_latest() -> None:
    """Several offset ranges of one partition, keys repeated across them: the latest by offset across the ranges
    (what Spark picks) is the partition's latest per key, and the counts add up to every record exactly once."""
    rng = random.Random(23)
    messages = _changelog(rng, 500)
    fetched = _fetched(messages, [64] * 8)
    combined: dict[bytes, tuple[dict[str, Any], int]] = {}
    ranges = offset_ranges(0, len(messages), 4)
    for low, high in ranges:
        in_range = [[m for m in batch if m.offset() >= low] for batch in fetched]
        for key, (row, records) in _reduced(latest_per_key_batches("t", 0, range_batches(
                [batch for batch in in_range if batch], high))).items():
            if key in combined:
                assert combined[key][0]["offset"] != row["offset"]  # a key repeated across ranges
            best = row if key not in combined or row["offset"] > combined[key][0]["offset"] else combined[key][0]
            combined[key] = (best, records + (combined[key][1] if key in combined else 0))
    last = {m.key(): m for m in messages}
    assert {k: (row["offset"], row["value"]) for k, (row, _n) in combined.items()} == {
        k: (m.offset(), m.value()) for k, m in last.items()}
    assert {k: n for k, (_row, n) in combined.items()} == {k: sum(m.key() == k for m in messages) for k in last}
    assert len(ranges) == 4


def test_a_range_is_cut_at_its_end_offset() -> None:
    messages = _changelog(random.Random(1), 40)
    cut = list(range_batches(_fetched(messages, [15, 15, 15]), 20))
    assert [m.offset() for batch in cut for m in batch] == list(range(20))
    assert [len(b) for b in cut] == [15, 5]
    assert [m.offset() for batch in range_batches(_fetched(messages, [15, 15, 15]), TO_THE_END) for m in batch] == list(range(40))


def test_the_collector_is_paused_while_a_range_is_read_and_left_as_it_was() -> None:
    import gc

    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_an_empty_range_reduces_to_nothing() -> None:
    assert list(latest_per_key_batches("t", 0, iter([]))) == []


@pytest.mark.parametrize(("given", "meant"), [({}, False), ({"latest_per_key": "true"}, True),
                                              ({"latest_per_key": "False"}, False), ({"latest_per_key": " TRUE "}, True)])
def test_the_latest_per_key_option_is_read(given: dict[str, str], meant: bool) -> None:
    assert latest_per_key_option(given) is meant


def test_a_latest_per_key_option_that_is_not_a_boolean_is_refused_by_name() -> None:
    with pytest.raises(InvalidArgumentError, match="option latest_per_key: must be true or false, not 'yes'"):
        latest_per_key_option({"latest_per_key": "yes"})


@pytest.mark.parametrize("name", ["offsets", "ends"])
def test_a_malformed_offsets_option_is_refused_by_name(name: str) -> None:
    from kstate.spark.kafka_source import KafkaTopicReader

    with pytest.raises(InvalidArgumentError, match=f"option {name}: must be partition:offset pairs, not '0:x'"):
        KafkaTopicReader({"bootstrap": "b", "topic": "t", name: "0:x"})
    assert KafkaTopicReader({"bootstrap": "b", "topic": "t", name: "0:3,2:7"}).__dict__[
        "starts" if name == "offsets" else "ends"] == {0: 3, 2: 7}


def test_the_header_bytes_column_holds_what_the_codec_encodes() -> None:
    """``header_bytes``: each record's headers as header-aware stores embed them (HV-1, HV-2): empty for none, in
    order, null values and duplicates kept; also through the map-side combine, beside the ``records`` column."""
    from kstate.codecs.header_values import encode_headers

    long_value = b"\x01" * 300  # a two-byte length varint
    header_sets: list[Headers] = [None, [], [("a", b"1"), ("a", None), ("\u0436", long_value)], [("e", b"")]]
    messages = [FakeMessage(n, b"k%d" % (n % 3), b"v", (1, n), header_sets[n % 4]) for n in range(12)]
    batch = arrow_batch("t", 0, messages, header_bytes=True)
    assert batch.schema == arrow_schema(False, True)
    assert batch.column("header_bytes").to_pylist() == [encode_headers(m.headers()) for m in messages]
    assert encode_headers(header_sets[2])[:3] == b"\x06\x02a"  # count 3, key length 1 (zig-zag)
    reduced = [row for b in latest_per_key_batches("t", 0, [messages], header_bytes=True) for row in b.to_pylist()]
    assert {row["offset"]: row["header_bytes"] for row in reduced} == {
        n: encode_headers(header_sets[n % 4]) for n in (9, 10, 11)}
    assert [row["records"] for row in reduced] == [4, 4, 4]


def test_a_header_bytes_option_that_is_not_a_boolean_is_refused_by_name() -> None:
    from kstate.spark.kafka_source import boolean_option

    with pytest.raises(InvalidArgumentError, match="option header_bytes: must be true or false, not '1'"):
        boolean_option({"header_bytes": "1"}, "header_bytes")
