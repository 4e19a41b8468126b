"""What a store's rows tell of its type, rows in and a type out, no I/O (spec/layout.md "Detecting a store's type").

Nothing on disk records a store's type. ``kstate inspect`` names a type from these readings; a store opening
existing bytes refuses them where they cannot be its own type's (LAY-14).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable
from typing import Any

from kstate.codecs import header_values, key_schemas, session_keys, versioned, window_keys
from kstate.codecs.primitives import read_int64
from kstate.codecs.store_types import (
    DEFAULT_CF,
    SESSION_HEADERS_CF,
    TIMESTAMPED_CF,
    TIMESTAMPED_HEADERS_CF,
    WINDOW_HEADERS_CF,
    Family,
    StoreType,
    UnknownFamilyError,
    family_of,
)
from kstate.errors import KStateError

#: A plain time-ordered window store (LAY-5 counts it as a plain window store); reported by this name.
TIME_ORDERED = "time_ordered_window"
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
    if SESSION_HEADERS_CF in families or WINDOW_HEADERS_CF in families:
        return None, "a segmented store's column family in a key-value database"
    is_versioned, seen = _versioned_reading(rows_of(DEFAULT_CF)) if DEFAULT_CF in families else (False, False)
    if is_versioned:
        return StoreType.VERSIONED_KV, "default only; every key a segment-id prefix, rows decode as versioned (VER-1..3)"
    if not seen:
        return StoreType.KEY_VALUE, "default only and empty (a versioned store would look the same)"
    return StoreType.KEY_VALUE, "default only; rows are not versioned rows"


def _plausible_window(key: bytes, low: int, high: int | None) -> bool:
    if len(key) < window_keys.SUFFIX_SIZE:
        return False
    ts = window_keys.PLAIN.decode(key).timestamp
    return ts >= low and (high is None or ts < high)


def _plausible_time_ordered_window(key: bytes, low: int, high: int | None) -> bool:
    if len(key) < window_keys.TIME_FIRST.min_key_length or key[0] not in (
            key_schemas.TIME_FIRST_PREFIX, key_schemas.KEY_FIRST_PREFIX):
        return False
    ts = window_schema(key).decode(key).timestamp
    return ts >= low and (high is None or ts < high)


def window_schema(key: bytes) -> window_keys.WindowSchema:
    """Time-ordered window stores keep time-first base rows and key-first index rows in one database (WIN-2, WIN-3)."""
    if key[:1] == bytes([key_schemas.KEY_FIRST_PREFIX]):
        return window_keys.KEY_FIRST
    return window_keys.TIME_FIRST


def _plausible_session(key: bytes, low: int, high: int | None) -> bool:
    if len(key) < session_keys.SUFFIX_SIZE:
        return False
    decoded = session_keys.PLAIN.decode(key)
    return 0 <= decoded.start <= decoded.end and decoded.end >= low and (high is None or decoded.end < high)


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
    if WINDOW_HEADERS_CF in families:
        return StoreType.TIME_ORDERED_WINDOW_WITH_HEADERS.value, f"column family {WINDOW_HEADERS_CF}"
    if SESSION_HEADERS_CF in families:
        return StoreType.SESSION_WITH_HEADERS.value, f"column family {SESSION_HEADERS_CF}"
    if TIMESTAMPED_HEADERS_CF in families:
        return StoreType.TIMESTAMPED_WINDOW_WITH_HEADERS.value, f"column family {TIMESTAMPED_HEADERS_CF}"
    if TIMESTAMPED_CF in families:
        return StoreType.TIMESTAMPED_WINDOW.value, f"column family {TIMESTAMPED_CF}"
    votes = _segment_votes_streamed([start for start, _ in segments],
                                    lambda i: default_rows(i) if DEFAULT_CF in segments[i][1] else (),
                                    segment_interval)
    ranked = sorted(votes.items(), key=lambda kv: -kv[1])
    if ranked[0][1] == ranked[1][1]:
        return None, "default only; window, time-ordered window or session (keys do not tell)"
    winner, count = ranked[0]
    how = {TIME_ORDERED: "[00][ts][key][seqnum] or [01][key][ts][seqnum]", StoreType.WINDOW.value: "[key][ts][seqnum]",
           StoreType.SESSION.value: "[key][end][start]"}[winner]
    return winner, f"default only; {count} keys read as {how} within their segment"


def _segment_votes(segments: list[tuple[int, dict[str, Rows]]], segment_interval: int | None) -> dict[str, int]:
    """How many plain keys read as each layout within the segment they are filed in."""
    return _segment_votes_streamed([start for start, _ in segments], lambda i: segments[i][1].get(DEFAULT_CF, []),
                                   segment_interval)


def _segment_votes_streamed(starts: list[int], default_rows: SegmentRows, segment_interval: int | None
                            ) -> dict[str, int]:
    """:func:`_segment_votes` of segments given as their starts and a reader of the i-th one's ``default`` rows."""
    # Plain window and session keys differ in their suffix: [ts][seqnum] against [end][start]; the
    # timestamp read under each reading must fall inside the segment it is filed in.
    # The interval divides every segment start, so the gcd of the starts bounds each segment's end; a known interval
    # bounds it too, and the larger of the two keeps a store whose interval changed between restarts readable.
    spacing = max(math.gcd(*starts) if starts else 0, segment_interval or 0)
    votes = {TIME_ORDERED: 0, StoreType.WINDOW.value: 0, StoreType.SESSION.value: 0}
    for i, start in enumerate(starts):
        high = start + spacing if spacing else None
        for key, _ in default_rows(i):
            votes[StoreType.WINDOW.value] += _plausible_window(key, start, high)
            votes[StoreType.SESSION.value] += _plausible_session(key, start, high)
            votes[TIME_ORDERED] += _plausible_time_ordered_window(key, start, high)
    return votes


def detect_segmented_family(segments: list[tuple[int, dict[str, Rows]]],
                            segment_interval: int | None = None) -> tuple[Family | None, str]:
    """Window or session, from the segments' families or, for ``default`` alone, from their keys' best window reading
    (plain or time-ordered) against their session reading; None when the keys read as well either way."""
    found, evidence = detect_segmented_type(segments, segment_interval)
    if found is not None and DEFAULT_CF not in evidence:
        family = family_of(StoreType.parse(found))  # UnknownStoreTypeError for a type the table lacks
        if family not in (Family.WINDOW, Family.SESSION):
            raise UnknownFamilyError(family, f"the segmented family of {found}")
        return family, evidence
    votes = _segment_votes(segments, segment_interval)
    window = max(votes[StoreType.WINDOW.value], votes[TIME_ORDERED])
    session = votes[StoreType.SESSION.value]
    if window == session:
        return None, "default only; the keys read as well as window and as session keys"
    if window > session:
        return Family.WINDOW, f"default only; {window} keys read as window keys within their segment, {session} " \
                              "as session keys"
    return Family.SESSION, f"default only; {session} keys read as session keys [key][end][start] within their " \
                           f"segment, {window} as window keys"
