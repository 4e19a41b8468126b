"""What a store's rows tell of its type, rows in and a type out, no I/O (spec/layout.md "Detecting a store's type").

Nothing on disk records a store's type. ``kstate inspect`` names a type from these readings; a store opening
existing bytes refuses them where they cannot be its own type's (LAY-14).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable
from typing import Any

from kstate.codecs import header_values, key_schemas, versioned
from kstate.codecs.key_schemas import SegmentReading
from kstate.codecs.primitives import read_int64
from kstate.codecs.store_types import (
    DEFAULT_CF,
    SEGMENT_ONLY_CFS,
    SEGMENT_TYPE_MARKERS,
    TIMESTAMPED_CF,
    TIMESTAMPED_HEADERS_CF,
    Family,
    StoreType,
    UnknownFamilyError,
    family_of,
)

# The time-ordered window store's name and its rows' layouts, as ``kstate inspect`` has imported them from here.
from kstate.codecs.window_keys import TIME_ORDERED as TIME_ORDERED
from kstate.codecs.window_keys import window_schema as window_schema
from kstate.errors import KStateError

_LATEST_PREFIX = versioned.LATEST_VALUE_PREFIX

Rows = list[tuple[bytes, bytes]]


def not_a_versioned_row(key: bytes, value: bytes) -> str | None:
    """Why ``key``/``value`` cannot be a row of a versioned store (VER-1..VER-9); None when it can be."""
    if len(key) < 8:
        return f"key of {len(key)} bytes has no 8-byte segment id"
    if key.startswith(_LATEST_PREFIX):
        return None if len(value) >= 8 else f"latest-value row of {len(value)} bytes has no 8-byte timestamp"
    segment = read_int64(key, 0, "versioned")[0]
    if segment < 0:
        return f"segment id {segment} is neither -1 nor >= 0"
    try:
        versioned.deserialize_segment_value(value).versions()
    except (KStateError, IndexError) as exc:
        return f"segment row does not decode: {exc}"
    return None


def versioned_values(key: bytes, value: bytes) -> list[bytes]:
    """The stored values of a versioned row (one that :func:`not_a_versioned_row` accepts); tombstones left out."""
    if key.startswith(_LATEST_PREFIX):
        return [value[8:]]
    return [v.value for v in versioned.deserialize_segment_value(value).versions() if v.value is not None]


def not_a_headers_value(value: bytes) -> str | None:
    """Why ``value`` cannot be ``[varint len(headerBytes)][headerBytes][raw value]`` (VS-25, HV-5); None when it can."""
    try:
        header_values.decode_aggregation_with_headers(value)
    except KStateError as exc:
        return str(exc)
    return None


def _versioned_reading(rows: Iterable[tuple[bytes, bytes]]) -> tuple[bool, bool]:
    """Whether the rows read as a versioned store's (every row readable as a versioned row, and at least one latest
    row), and whether there was a row at all; one pass, stopping at the first row that is not versioned."""
    seen_latest = seen = False
    for key, value in rows:
        seen = True
        if not_a_versioned_row(key, value) is not None:
            return False, True
        seen_latest = seen_latest or key.startswith(_LATEST_PREFIX)
    return seen_latest, seen


def detect_kv_type(rows: dict[str, Rows]) -> tuple[StoreType | None, str]:
    """The type of a ``rocksdb/<store>`` database from its column families and, for ``default`` alone, its rows."""
    return detect_kv_type_streamed(rows, lambda cf: rows[cf])


def detect_kv_type_streamed(families: Collection[str], rows_of: Callable[[str], Iterable[tuple[bytes, bytes]]]
                            ) -> tuple[StoreType | None, str]:
    """:func:`detect_kv_type` of a database given as its families and a reader of a family's rows, called only for
    ``default`` alone and read once, stopping at its first row that is not versioned (issue 35: a dump detects the
    type holding one row at a time)."""
    families = set(families)
    if TIMESTAMPED_HEADERS_CF in families:
        return StoreType.TIMESTAMPED_KV_WITH_HEADERS, f"column family {TIMESTAMPED_HEADERS_CF}"
    if TIMESTAMPED_CF in families:
        return StoreType.TIMESTAMPED_KV, f"column family {TIMESTAMPED_CF}"
    if families & SEGMENT_ONLY_CFS:
        return None, "a segmented store's column family in a key-value database"
    is_versioned, seen = _versioned_reading(rows_of(DEFAULT_CF)) if DEFAULT_CF in families else (False, False)
    if is_versioned:
        return StoreType.VERSIONED_KV, "default only; every key a segment-id prefix, rows decode as versioned (VER-1..3)"
    if not seen:
        return StoreType.KEY_VALUE, "default only and empty (a versioned store would look the same)"
    return StoreType.KEY_VALUE, "default only; rows are not versioned rows"


def _segmented_readings() -> list[tuple[Family, SegmentReading]]:
    """Every segmented family's readings of a segment's plain keys, in the table's order of families (LAY-5)."""
    schemas = key_schemas.segmented_families()
    return [(family, reading) for family in Family if family.value in schemas
            for reading in schemas[family.value][0].segment_readings()]


def _spoken_list(names: list[str], conjunction: str) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {conjunction} {names[-1]}"


def detect_segmented_type(segments: list[tuple[int, dict[str, Rows]]],
                          segment_interval: int | None = None) -> tuple[str | None, str]:
    """The type of a ``<store>/`` segment directory from its segments' families and plain keys (LAY-3, LAY-5).

    ``segment_interval``, when known, bounds a segment's times as the gcd of the segment starts does."""
    return detect_segmented_type_streamed([(start, set(rows)) for start, rows in segments],
                                          lambda i: segments[i][1].get(DEFAULT_CF, []), segment_interval)


#: A reader of the i-th segment's ``default`` rows (only their keys are read).
SegmentRows = Callable[[int], Iterable[tuple[bytes, Any]]]


def detect_segmented_type_streamed(segments: list[tuple[int, Collection[str]]], default_rows: SegmentRows,
                                   segment_interval: int | None = None) -> tuple[str | None, str]:
    """:func:`detect_segmented_type` of segments given as ``(start, families)`` and a reader of the i-th segment's
    ``default`` rows, called only when the families do not tell, each read once (issue 35: a dump detects the type
    holding one row at a time)."""
    families = {cf for _, cfs in segments for cf in cfs}
    for cf, store_type in SEGMENT_TYPE_MARKERS:
        if cf in families:
            return store_type.value, f"column family {cf}"
    votes = _segment_votes_streamed([start for start, _ in segments],
                                    lambda i: default_rows(i) if DEFAULT_CF in segments[i][1] else (),
                                    segment_interval)
    ranked = sorted(votes.values(), key=lambda vote: -vote[1])
    if ranked[0][1] == (ranked[1][1] if len(ranked) > 1 else 0):  # a tie, or a lone reading no key reads as
        nouns = [reading.noun for reading, _ in votes.values()]
        return None, f"default only; {_spoken_list(nouns, 'or')} (keys do not tell)"
    winner, count = ranked[0]
    return winner.name, f"default only; {count} keys read as {winner.layout} within their segment"


def _segment_votes(segments: list[tuple[int, dict[str, Rows]]], segment_interval: int | None
                   ) -> dict[str, tuple[SegmentReading, int]]:
    """How many plain keys read as each reading within the segment they are filed in."""
    return _segment_votes_streamed([start for start, _ in segments], lambda i: segments[i][1].get(DEFAULT_CF, []),
                                   segment_interval)


def _segment_votes_streamed(starts: list[int], default_rows: SegmentRows, segment_interval: int | None
                            ) -> dict[str, tuple[SegmentReading, int]]:
    """:func:`_segment_votes` of segments given as their starts and a reader of the i-th one's ``default`` rows,
    by reading name, in the table's order of families."""
    # The families' plain keys differ in their suffix; the time read under each reading must fall inside the segment
    # it is filed in.
    # The interval divides every segment start, so the gcd of the starts bounds each segment's end; a known interval
    # bounds it too, and the larger of the two keeps a store whose interval changed between restarts readable.
    spacing = max(math.gcd(*starts) if starts else 0, segment_interval or 0)
    readings = [reading for _, reading in _segmented_readings()]
    counts = [0] * len(readings)
    tests = [reading.plausible for reading in readings]
    for i, start in enumerate(starts):
        high = start + spacing if spacing else None
        for key, _ in default_rows(i):
            for n, plausible in enumerate(tests):
                counts[n] += plausible(key, start, high)
    return {reading.name: (reading, count) for reading, count in zip(readings, counts, strict=True)}


def detect_segmented_family(segments: list[tuple[int, dict[str, Rows]]],
                            segment_interval: int | None = None) -> tuple[Family | None, str]:
    """The segmented family of a segment directory, from the segments' families or, for ``default`` alone, from
    their keys' best reading of each family against the others'; None when the best read as well (LAY-5)."""
    found, evidence = detect_segmented_type(segments, segment_interval)
    if found is not None and DEFAULT_CF not in evidence:
        family = family_of(StoreType.parse(found))  # UnknownStoreTypeError for a type the table lacks
        if family.value not in key_schemas.segmented_families():
            raise UnknownFamilyError(family, f"the segmented family of {found}")
        return family, evidence
    votes = _segment_votes(segments, segment_interval)
    best: dict[Family, int] = {}
    readings: dict[Family, list[SegmentReading]] = {}
    for family, reading in _segmented_readings():
        best[family] = max(best.get(family, 0), votes[reading.name][1])
        readings.setdefault(family, []).append(reading)
    ranked = sorted(best.items(), key=lambda fc: -fc[1])
    if len(ranked) < 2 or ranked[0][1] == ranked[1][1]:
        names = [family.value for family in best]
        return None, f"default only; the keys read as well {_spoken_list(['as ' + n for n in names], 'and')} keys"
    (winner, count), others = ranked[0], ranked[1:]
    # A family whose keys read one way only says which: ``[key][end][start]``.
    how = f" {readings[winner][0].layout}" if len(readings[winner]) == 1 else ""
    rest = ", ".join(f"{n} as {family.value} keys" for family, n in others)
    return winner, f"default only; {count} keys read as {winner.value} keys{how} within their segment, {rest}"
