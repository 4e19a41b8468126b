"""OFF-8: position bytes compared up to the order of topics and partitions, never up to their contents."""

from __future__ import annotations

from kstate.codecs.position import encode_position
from kstate.ops.position_order import position_bytes_in_canonical_order


def test_the_order_of_topics_and_partitions_does_not_matter() -> None:
    one = encode_position([("b", [(1, 7), (0, -1)]), ("a", [(2, 9)])])
    other = encode_position([("a", [(2, 9)]), ("b", [(0, -1), (1, 7)])])
    assert one != other
    assert position_bytes_in_canonical_order(one) == position_bytes_in_canonical_order(other)


def test_a_different_offset_topic_or_padding_still_differs() -> None:
    base = encode_position([("b", [(1, 7)]), ("a", [(2, 9)])])
    for changed in (encode_position([("b", [(1, 8)]), ("a", [(2, 9)])]),
                    encode_position([("c", [(1, 7)]), ("a", [(2, 9)])]),
                    base[:-1], base + b"\x00", base[:-1] + b"\x01"):
        assert position_bytes_in_canonical_order(changed) != position_bytes_in_canonical_order(base)


def test_bytes_that_are_no_position_are_kept_as_they_are() -> None:
    for junk in (b"", b"\x01\x00\x00\x00\x00", b"\x00\x00\x00\x00\x02\x00\x00\x00\x05ab"):
        assert position_bytes_in_canonical_order(junk) == junk
