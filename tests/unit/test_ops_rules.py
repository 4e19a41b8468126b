"""Operations read against their rule texts (issue 15): the disagreements found, each worked out by hand."""

from __future__ import annotations

from kstate.codecs.primitives import INT64_MAX, INT64_MIN, java_div
from kstate.ops import call


def test_segment_id_overflows_as_java_long_division() -> None:
    """PRIM-4: ``Long.MIN_VALUE / -1`` is ``Long.MIN_VALUE`` in Java (the quotient wraps), never 2^63."""
    assert java_div(INT64_MIN, -1) == INT64_MIN
    assert java_div(INT64_MAX, -1) == -INT64_MAX
    assert java_div(-1, 10) == 0 and java_div(-11, 10) == -1
    assert call("primitives.segment_id", {"timestamp": INT64_MIN, "segment_interval": -1}) == {"segment_id": INT64_MIN}


def test_checkpoint_write_of_an_empty_map_reports_no_file() -> None:
    """OFF-15: an empty map leaves no file; the output says so and has no file bytes or text."""
    assert call("checkpoint.write", {"entries_in_map_order": []}) == {"file_exists": False, "read_back": {"entries": []}}
    written = call("checkpoint.write", {"entries_in_map_order": [["t", 0, 5]]})
    assert written["file_exists"] is True and written["file_text"] == "0\n1\nt 0 5\n"


def test_equal_copies_at_an_equal_timestamp_are_not_increasing() -> None:
    """TSKV-4 steps 1 and 4: two arrays with the same bytes are distinct; the timestamp did not increase."""
    op = "timestamped.values_are_same_and_time_is_increasing"
    assert call(op, {"old": "000000000000000a76", "new": "000000000000000a76"}) == {"result": False}
    assert call(op, {"old": "000000000000000a76", "new": "000000000000000b76"}) == {"result": True}
