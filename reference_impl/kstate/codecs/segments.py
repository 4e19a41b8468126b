"""Segments: ids, names and the names read back (spec/primitives.md PRIM-4, spec/layout.md LAY-3, VER-2, WIN-15).

A segmented store files each record under ``segmentId = timestamp / segmentInterval`` (Java truncation,
:func:`~kstate.codecs.primitives.segment_id`). A segment is named ``<store>.<segmentId * segmentInterval>``:
the directory of one RocksDB per segment of a window or session store (LAY-3), or the logical name of a
key-prefix segment of a versioned store (VER-2). Pure functions; nothing here touches a filesystem.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kstate.codecs.layout import FORMAT, check_store_name
from kstate.codecs.offsets import parse_java_long
from kstate.codecs.primitives import INT64_MAX, INT64_MIN, java_div, to_int64
from kstate.errors import DecodeError, EncodeError


def segment_name(store_name: str, segment_id: int, segment_interval: int) -> str:
    """``AbstractSegments.segmentName``: ``<store>.<segmentId * segmentInterval>``, Java long arithmetic (LAY-3,
    VER-2, WIN-15); the callers check their arguments."""
    return f"{store_name}.{to_int64(segment_id * segment_interval)}"


def segment_dir_name(store_name: str, segment_id: int, segment_interval: int) -> str:
    """A segment directory's name (LAY-3): :func:`segment_name` of a non-empty store name and two Java longs."""
    check_store_name(store_name)
    for value, what in ((segment_id, "segment id"), (segment_interval, "segment interval")):
        if not isinstance(value, int) or isinstance(value, bool) or not INT64_MIN <= value <= INT64_MAX:
            raise EncodeError(FORMAT, f"{what} {value!r} is not a Java long")
    return segment_name(store_name, segment_id, segment_interval)


def segment_dir(store_name: str, segment_id: int, segment_interval: int) -> str:
    """A segment's RocksDB directory relative to the task directory (LAY-3)."""
    return f"{store_name}/{segment_dir_name(store_name, segment_id, segment_interval)}"


# --- reading segment names back --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParsedSegmentName:
    """A segment directory name read back: its id (-1: skipped) and the name it is renamed to, if any (LAY-3)."""

    segment_id: int
    rename_to: str | None = None


def _days_from_civil(year: int, month: int, day: int) -> int:
    # Proleptic Gregorian days since 1970-01-01 (Howard Hinnant's algorithm).
    year -= month <= 2
    era = (year if year >= 0 else year - 399) // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def legacy_date_millis(text: str) -> int | None:
    """``SimpleDateFormat("yyyyMMddHHmm")`` in UTC, lenient: fields roll over, trailing text is ignored (LAY-3).

    Four, two, two and two ASCII digits, then the minutes as one or more digits; None when that
    prefix is absent (Kafka then skips the segment).
    """
    match = re.match(r"([0-9]{4})([0-9]{2})([0-9]{2})([0-9]{2})([0-9]+)", text)
    if match is None:
        return None
    year, month, day, hour = (int(g) for g in match.groups()[:4])
    minute_text = match.group(5)
    if len(minute_text) > 18:
        return None  # Java's number parse would not fit an int; Kafka skips such a name
    minute = int(minute_text)
    months = year * 12 + month - 1  # lenient: month 13 is January of the next year
    days = _days_from_civil(months // 12, months % 12 + 1, 1) + day - 1
    return ((days * 24 + hour) * 60 + minute) * 60_000


def parse_segment_name(store_name: str, segment_name: str, segment_interval: int) -> ParsedSegmentName:
    """``AbstractSegments.segmentIdFromSegmentName`` for an entry of the store's segment directory (LAY-3).

    The character after the store name's length is the separator (the prefix itself is not
    checked): ``-`` reads a legacy UTC date, anything else a millisecond timestamp; both are divided
    by the interval with Java truncation. Date and ``:`` names are renamed to the ``.`` form.
    """
    check_store_name(store_name)
    if segment_interval <= 0:
        raise EncodeError(FORMAT, f"segment interval {segment_interval} must be positive")
    if len(segment_name) <= len(store_name):
        raise DecodeError(FORMAT, f"segment name {segment_name!r} has no separator after the store name")
    separator = segment_name[len(store_name)]
    rest = segment_name[len(store_name) + 1 :]
    if separator == "-":
        millis = legacy_date_millis(rest)
        if millis is None:
            return ParsedSegmentName(-1)
        segment_id = java_div(millis, segment_interval)
        return ParsedSegmentName(segment_id, segment_dir_name(store_name, segment_id, segment_interval))
    segment_id = java_div(parse_java_long(rest, "segment timestamp", FORMAT), segment_interval)
    rename = segment_dir_name(store_name, segment_id, segment_interval) if separator == ":" else None
    return ParsedSegmentName(segment_id, rename)
