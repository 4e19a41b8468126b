"""Session store keys: the plain, time-first and key-first schemas and their range bounds (spec/session-keys.md, SESS-*).

The session key puts the window END before the start. Every function is pure. The three layouts are
:class:`SessionSchema` objects (:data:`SCHEMAS`) over the shared layouts of :mod:`kstate.codecs.key_schemas`;
input shorter than a layout's fixed part raises :class:`DecodeError`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from kstate.codecs.key_schemas import (
    TIME_FIRST_BYTE,
    TIME_FIRST_PREFIX,
    TIMESTAMP_SIZE,
    KeyFirstLayout,
    KeySchemaBase,
    PlainLayout,
    SegmentReading,
    TimeFirstLayout,
    check_long,
    encode_long,
    segment_interval_for_retention,
    validate_window_bounds,
)
from kstate.codecs.primitives import INT64_MAX, INT64_MIN, encode_int64
from kstate.errors import CodecError, DecodeError, EncodeError, NullKeyError

SUFFIX_SIZE = 2 * TIMESTAMP_SIZE

FMT = "session-key"
_SUFFIX = struct.Struct(">qq")


@dataclass(frozen=True)
class SessionStoreKey:
    """A decoded session key: serialized record key, window start and window end (not yet validated)."""

    key: bytes
    start: int
    end: int


def validate_session_window(start: int, end: int, *, error: type[CodecError] = DecodeError) -> None:
    """``SessionWindow``'s checks: start >= 0 and end >= start; start == end is a valid session (SESS-4)."""
    validate_window_bounds(start, end, error)


class SessionSchema(KeySchemaBase[SessionStoreKey]):
    """A session key layout: the suffix ``[end int64][start int64]``, end first (SESS-1..8, SESS-11)."""

    family = "session"
    fmt = FMT
    noun = "session key"
    suffix_size = SUFFIX_SIZE
    time_first_head = SUFFIX_SIZE
    store_fmt = "session-store"
    #: Only the time-first schema writes a null key, as the empty key (SESS-6).
    accepts_null_key = False
    #: ``upperRangeFixedSize`` builds a ``SessionWindow(to, MAX)`` first, refusing a negative ``to`` (SESS-7).
    checks_fixed_upper_window = True

    def to_store_key(self, key: bytes | None, start: int, end: int) -> bytes:
        """``toBinary(key, start, end)``, end first (SESS-1..3, SESS-5, SESS-6); the window is not validated."""
        times = encode_long(FMT, "end", end) + encode_long(FMT, "start", start)
        if key is None:
            if not self.accepts_null_key:
                raise NullKeyError("session key: the serialized key is null")
            key = b""
        return self.assemble(key, times)

    def decode(self, data: bytes) -> SessionStoreKey:
        """Key bytes, start and end (SESS-4); the window is not validated here."""
        key, suffix = self.split(data)
        end, start = _SUFFIX.unpack(suffix)
        return SessionStoreKey(key, start, end)

    def shown(self, data: bytes) -> tuple[bytes, dict[str, Any]]:
        """The record key and ``session``, its validated window, as ``kstate inspect --dump`` shows a row (SESS-1,
        SESS-4)."""
        decoded = self.decode(data)
        validate_session_window(decoded.start, decoded.end)
        return decoded.key, {"session": {"start": decoded.start, "end": decoded.end}}

    def segment_timestamp(self, data: bytes) -> int:
        """The session END (SESS-11)."""
        return self.decode(data).end

    def extract_window(self, data: bytes) -> tuple[int, int]:
        """``extractWindow``: the validated session window ``(start, end)`` of a key (SESS-4)."""
        decoded = self.decode(data)
        validate_session_window(decoded.start, decoded.end)
        return decoded.start, decoded.end

    def to_binary_windowed(self, key: bytes | None, start: int, end: int) -> bytes:
        """``toBinary(Windowed, Serializer)``: the ``SessionWindow`` is built (and validated) first (SESS-10)."""
        check_long(FMT, "start", start, EncodeError)
        check_long(FMT, "end", end, EncodeError)
        validate_session_window(start, end, error=EncodeError)
        return self.to_store_key(key, start, end)

    def max_suffix(self, time_to: int) -> bytes:
        return encode_int64(INT64_MAX) + encode_int64(time_to)

    def segment_readings(self) -> tuple[SegmentReading, ...]:
        """A segment's keys read as the plain session layout, a session filed by its end (SESS-1, SESS-11)."""
        return _READINGS

    def segment_search_range(self, time_from: int, time_to: int) -> tuple[int, int]:
        """``SessionKeySchema.segmentsToSearch``: every segment from ``from`` on, as a session's end, which picks
        its segment, can be any time after its start (SESS-11)."""
        return time_from, INT64_MAX

    def lower_range_fixed_size(self, key: bytes | None, time_from: int) -> bytes:
        """The key of session (0, max(0, from)) (SESS-7)."""
        if type(key) is bytes and type(time_from) is int and INT64_MIN <= time_from <= INT64_MAX:
            return self.assemble(key, _SUFFIX.pack(max(0, time_from), 0))  # the checks below, passed
        self.require_long("from", time_from)
        return self.to_store_key(key, 0, max(0, time_from))

    def upper_range_fixed_size(self, key: bytes | None, time_to: int) -> bytes:
        """The key of session (to, Long.MAX) (SESS-7)."""
        if type(key) is bytes and type(time_to) is int and 0 <= time_to <= INT64_MAX:
            return self.assemble(key, _SUFFIX.pack(INT64_MAX, time_to))  # the checks below, passed
        self.require_long("to", time_to)
        if self.checks_fixed_upper_window:
            validate_session_window(time_to, INT64_MAX, error=EncodeError)
        return self.to_store_key(key, time_to, INT64_MAX)


class SessionKeySchema(PlainLayout[SessionStoreKey], SessionSchema):
    """``SessionKeySchema``: ``[key][end][start]`` (SESS-1)."""

    layout_rule = "SESS-1"


class TimeFirstSessionKeySchema(TimeFirstLayout[SessionStoreKey], SessionSchema):
    """``TimeFirstSessionKeySchema``: ``[00][end][start][key]``; writes a null key as empty (SESS-2, SESS-6)."""

    layout_rule = "SESS-2"
    accepts_null_key = True
    checks_fixed_upper_window = False

    def lower_range(self, key: bytes | None, time_from: int) -> bytes | None:
        """``[00][from][0][key]``; a null key stops after ``from`` (SESS-7)."""
        self.require_long("from", time_from)
        if key is None:
            return TIME_FIRST_BYTE + encode_int64(time_from)
        return TIME_FIRST_BYTE + encode_int64(time_from) + encode_int64(0) + key

    def upper_range(self, key: bytes | None, time_to: int) -> bytes | None:
        """``[00][Long.MAX][to][key]``; a null key scans to the key-first prefix (SESS-7)."""
        self.require_long("to", time_to)
        if key is None:
            return bytes([TIME_FIRST_PREFIX + 1])
        return TIME_FIRST_BYTE + self.max_suffix(time_to) + key


class KeyFirstSessionKeySchema(KeyFirstLayout[SessionStoreKey], SessionSchema):
    """``KeyFirstSessionKeySchema``: ``[01][key][end][start]`` (SESS-3)."""

    layout_rule = "SESS-3"


PLAIN, TIME_FIRST, KEY_FIRST = SessionKeySchema(), TimeFirstSessionKeySchema(), KeyFirstSessionKeySchema()
#: Every session layout, in the order operations and fixtures list them.
SCHEMAS: tuple[SessionSchema, ...] = (PLAIN, TIME_FIRST, KEY_FIRST)


# --- segments ---------------------------------------------------------------------------------------


def default_segment_interval(retention: int) -> int:
    """``RocksDbSessionBytesStoreSupplier.segmentIntervalMs``: ``max(retention / 2, 60000)`` (SESS-11)."""
    return segment_interval_for_retention(FMT, "session-store", retention)


def _plausible_plain_session(key: bytes, low: int, high: int | None) -> bool:
    """Whether ``key`` reads as ``[key][end][start]`` of a valid session whose end is in ``[low, high)`` (SESS-4)."""
    if len(key) < SUFFIX_SIZE:
        return False
    decoded = PLAIN.decode(key)
    return 0 <= decoded.start <= decoded.end and decoded.end >= low and (high is None or decoded.end < high)


_READINGS = (SegmentReading("session", "session", "[key][end][start]", _plausible_plain_session),)
