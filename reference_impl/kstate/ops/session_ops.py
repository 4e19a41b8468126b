"""Operations over session store keys (spec/session-keys.md, SESS-*).

Each Kafka schema class gets its own operation prefix: ``session.key_schema`` (``SessionKeySchema``),
``session.time_first`` and ``session.key_first`` (``PrefixedSessionKeySchemas``).
"""

from __future__ import annotations

from kstate.codecs import session_keys as sk
from kstate.codecs.window_keys import KEY_FIRST_PREFIX, TIME_FIRST_PREFIX
from kstate.errors import EncodeError
from kstate.ops import JsonDict, LeniencyCheck, capture, op, tohex
from kstate.ops.inputs import require_hex, require_int

_JAVA_CLASS = {
    sk.SessionSchema.PLAIN: "SessionKeySchema",
    sk.SessionSchema.TIME_FIRST: "TimeFirstSessionKeySchema",
    sk.SessionSchema.KEY_FIRST: "KeyFirstSessionKeySchema",
}
_LAYOUT_RULE = {
    sk.SessionSchema.PLAIN: "SESS-1",
    sk.SessionSchema.TIME_FIRST: "SESS-2",
    sk.SessionSchema.KEY_FIRST: "SESS-3",
}
_EXPECTED_PREFIX = {sk.SessionSchema.TIME_FIRST: TIME_FIRST_PREFIX, sk.SessionSchema.KEY_FIRST: KEY_FIRST_PREFIX}


def _lenient_unvalidated_window(schema: sk.SessionSchema) -> LeniencyCheck:
    def check(payload: JsonDict) -> str | None:
        start, end = require_int(payload, "start"), require_int(payload, "end")
        refused_anyway = payload["key"] is None and schema is not sk.SessionSchema.TIME_FIRST
        if (start < 0 or end < start) and not refused_anyway:
            return f"Kafka writes the key of an invalid session window (start {start}, end {end}) without checking it"
        return None

    return check


def _lenient_prefix(schema: sk.SessionSchema) -> LeniencyCheck:
    def check(payload: JsonDict) -> str | None:
        data = bytes.fromhex(payload.get("bytes") or "")
        expected = _EXPECTED_PREFIX[schema]
        if len(data) >= sk.min_key_length(schema) and data[0] != expected:
            return f"Kafka does not check the prefix byte: {data[0]:#04x} decoded as {schema.value} (0x{expected:02x})"
        return None

    return check


def _lenient_short_plain_key(payload: JsonDict) -> str | None:
    data = bytes.fromhex(payload.get("bytes") or "")
    if len(data) < sk.SUFFIX_SIZE:
        return f"Kafka prefixes {len(data)} bytes, shorter than a plain session key's 16-byte suffix"
    return None


def _register(schema: sk.SessionSchema) -> None:
    name = f"session.{schema.value}"
    java = _JAVA_CLASS[schema]
    layout = _LAYOUT_RULE[schema]

    def to_binary(payload: JsonDict) -> JsonDict:
        """Session key of (key, start, end); the window is not validated."""
        key = require_hex(payload, "key")
        return {"bytes": tohex(sk.to_binary(schema, key, require_int(payload, "start"), require_int(payload, "end")))}

    op(
        f"{name}.to_binary",
        rules=[layout, "SESS-5", "SESS-6"],
        java=[f"{java}.toBinary"],
        lenient=_lenient_unvalidated_window(schema),
    )(to_binary)

    def extract(payload: JsonDict) -> JsonDict:
        """Key, start and end of a session key, and its window or the window's refusal."""
        decoded = sk.decode(schema, require_hex(payload, "bytes", nullable=False))

        def window() -> JsonDict:
            sk.validate_session_window(decoded.start, decoded.end)
            return {"start": decoded.start, "end": decoded.end}

        return {"key": tohex(decoded.key), "start": decoded.start, "end": decoded.end, "window": capture(window)}

    op(
        f"{name}.extract",
        rules=[layout, "SESS-4"],
        java=[f"{java}.extractKeyBytes+extractStartTimestamp+extractEndTimestamp+extractWindow"],
        lenient=None if schema is sk.SessionSchema.PLAIN else _lenient_prefix(schema),
    )(extract)

    def ranges(payload: JsonDict) -> JsonDict:
        """The four range bounds of (key, time); each is ``{bytes}`` or a refusal."""
        key = require_hex(payload, "key")
        time = require_int(payload, "time")
        return {
            "lower_range": capture(lambda: {"bytes": tohex(sk.lower_range(schema, key, time))}),
            "upper_range": capture(lambda: {"bytes": tohex(sk.upper_range(schema, key, time))}),
            "lower_range_fixed_size": capture(lambda: {"bytes": tohex(sk.lower_range_fixed_size(schema, key, time))}),
            "upper_range_fixed_size": capture(lambda: {"bytes": tohex(sk.upper_range_fixed_size(schema, key, time))}),
        }

    range_rules = ["SESS-7", "SESS-6"] + (["SESS-8"] if schema is not sk.SessionSchema.TIME_FIRST else [])
    op(
        f"{name}.ranges",
        rules=range_rules,
        java=[f"{java}.lowerRange+upperRange+lowerRangeFixedSize+upperRangeFixedSize"],
    )(ranges)

    def key_segment_id(payload: JsonDict) -> JsonDict:
        """Segment timestamp (the session END) and segment id of a session key."""
        data = require_hex(payload, "bytes", nullable=False)
        return {
            "segment_timestamp": sk.decode(schema, data).end,
            "segment_id": sk.key_segment_id(schema, data, require_int(payload, "segment_interval")),
        }

    op(f"{name}.segment_id", rules=[layout, "SESS-11"])(key_segment_id)


for _schema in sk.SessionSchema:
    _register(_schema)


@op(
    "session.time_first.extract_window_bytes_from_non_prefix_session_key",
    rules=["SESS-2", "SESS-9"],
    java=["TimeFirstSessionKeySchema.extractWindowBytesFromNonPrefixSessionKey"],
)
def extract_window_bytes_from_non_prefix_session_key(payload: JsonDict) -> JsonDict:
    """A plain session key rewritten in the time-first layout."""
    data = require_hex(payload, "bytes", nullable=False)
    return {"bytes": tohex(sk.extract_window_bytes_from_non_prefix_session_key(data))}


@op(
    "session.key_first.prefix_non_prefix_session_key",
    rules=["SESS-3", "SESS-9"],
    java=["KeyFirstSessionKeySchema.prefixNonPrefixSessionKey"],
    lenient=_lenient_short_plain_key,
)
def prefix_non_prefix_session_key(payload: JsonDict) -> JsonDict:
    """A plain session key rewritten in the key-first layout."""
    return {"bytes": tohex(sk.prefix_non_prefix_session_key(require_hex(payload, "bytes", nullable=False)))}


@op(
    "session.to_binary_windowed",
    rules=["SESS-10", "SESS-1", "SESS-2", "SESS-3", "SESS-6"],
    java=["SessionKeySchema/TimeFirst/KeyFirst.toBinary(Windowed,Serializer)"],
)
def to_binary_windowed(payload: JsonDict) -> JsonDict:
    """The three schemas' bytes of a windowed key; a refused window refuses all three."""
    key = require_hex(payload, "key")
    start, end = require_int(payload, "start"), require_int(payload, "end")
    sk.validate_session_window(start, end, error=EncodeError)

    def encoded(schema: sk.SessionSchema) -> JsonDict | str | None:
        result = capture(lambda: {"bytes": tohex(sk.to_binary_windowed(schema, key, start, end))})
        return result if "error" in result else result["bytes"]

    return {
        "session_key_schema": encoded(sk.SessionSchema.PLAIN),
        "time_first": encoded(sk.SessionSchema.TIME_FIRST),
        "key_first": encoded(sk.SessionSchema.KEY_FIRST),
    }


@op("session.segment_interval", rules=["SESS-11"])
def segment_interval(payload: JsonDict) -> JsonDict:
    """The default segment interval of a persistent session store with this retention."""
    return {"segment_interval": sk.default_segment_interval(require_int(payload, "retention"))}
