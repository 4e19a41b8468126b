"""Operations over window store keys (spec/window-keys.md, WIN-*).

Each Kafka schema class gets its own operation prefix: ``window.key_schema`` (``WindowKeySchema``),
``window.time_first`` and ``window.key_first`` (``PrefixedWindowKeySchemas``).
"""

from __future__ import annotations

from kstate.codecs import window_keys as wk
from kstate.errors import EncodeError
from kstate.ops import JsonDict, LeniencyCheck, capture, op, tohex
from kstate.ops.inputs import require_bool, require_hex, require_int

_JAVA_CLASS = {
    wk.WindowSchema.PLAIN: "WindowKeySchema",
    wk.WindowSchema.TIME_FIRST: "TimeFirstWindowKeySchema",
    wk.WindowSchema.KEY_FIRST: "KeyFirstWindowKeySchema",
}
_LAYOUT_RULE = {
    wk.WindowSchema.PLAIN: "WIN-1",
    wk.WindowSchema.TIME_FIRST: "WIN-2",
    wk.WindowSchema.KEY_FIRST: "WIN-3",
}
_EXPECTED_PREFIX = {wk.WindowSchema.TIME_FIRST: wk.TIME_FIRST_PREFIX, wk.WindowSchema.KEY_FIRST: wk.KEY_FIRST_PREFIX}


def _lenient_prefix(schema: wk.WindowSchema) -> LeniencyCheck:
    def check(payload: JsonDict) -> str | None:
        data = bytes.fromhex(payload.get("bytes") or "")
        expected = _EXPECTED_PREFIX[schema]
        if len(data) >= wk.min_store_key_length(schema) and data[0] != expected:
            return f"Kafka does not check the prefix byte: {data[0]:#04x} decoded as {schema.value} (0x{expected:02x})"
        return None

    return check


def _lenient_short_plain_key(payload: JsonDict) -> str | None:
    data = bytes.fromhex(payload.get("bytes") or "")
    if len(data) < wk.SUFFIX_SIZE:
        return f"Kafka prefixes {len(data)} bytes, shorter than a plain store key's 12-byte suffix"
    return None


def _register(schema: wk.WindowSchema) -> None:
    name = f"window.{schema.value}"
    java = _JAVA_CLASS[schema]
    layout = _LAYOUT_RULE[schema]

    def to_store_key_binary(payload: JsonDict) -> JsonDict:
        """Store key of (key, window start, seqnum)."""
        key = require_hex(payload, "key")
        return {"bytes": tohex(wk.to_store_key_binary(schema, key, require_int(payload, "timestamp"), require_int(payload, "seqnum")))}

    op(f"{name}.to_store_key_binary", rules=[layout, "WIN-6", "WIN-7"], java=[f"{java}.toStoreKeyBinary"])(
        to_store_key_binary
    )

    def extract_store_key(payload: JsonDict) -> JsonDict:
        """Key bytes, window start and seqnum of a store key."""
        data = require_hex(payload, "bytes", nullable=False)
        decoded = wk.decode_store_key(schema, data)
        out: JsonDict = {"key": tohex(decoded.key), "timestamp": decoded.timestamp, "seqnum": decoded.seqnum}
        if schema is not wk.WindowSchema.PLAIN:
            out["is_time_first"] = wk.is_time_first_schema_key(data)
        return out

    op(
        f"{name}.extract_store_key",
        rules=[layout, "WIN-4"],
        java=[f"{java}.extractStoreKeyBytes+extractStoreTimestamp+extractStoreSequence"],
        lenient=None if schema is wk.WindowSchema.PLAIN else _lenient_prefix(schema),
    )(extract_store_key)

    def extract_store_window(payload: JsonDict) -> JsonDict:
        """Time window of a store key for a fixed window size."""
        window = wk.extract_store_window(schema, require_hex(payload, "bytes", nullable=False), require_int(payload, "window_size"))
        return {"start": window.start, "end": window.end}

    op(
        f"{name}.extract_store_window",
        rules=[layout, "WIN-8", "WIN-9"],
        java=[f"{java}.extractStoreWindow"],
        lenient=None if schema is wk.WindowSchema.PLAIN else _lenient_prefix(schema),
    )(extract_store_window)

    def ranges(payload: JsonDict) -> JsonDict:
        """The four range bounds of (key, time); each is ``{bytes}`` or a refusal."""
        key = require_hex(payload, "key")
        time = require_int(payload, "time")
        return {
            "lower_range": capture(lambda: {"bytes": tohex(wk.lower_range(schema, key, time))}),
            "upper_range": capture(lambda: {"bytes": tohex(wk.upper_range(schema, key, time))}),
            "lower_range_fixed_size": capture(lambda: {"bytes": tohex(wk.lower_range_fixed_size(schema, key, time))}),
            "upper_range_fixed_size": capture(lambda: {"bytes": tohex(wk.upper_range_fixed_size(schema, key, time))}),
        }

    range_rules = ["WIN-10", "WIN-7"] + (["WIN-11"] if schema is not wk.WindowSchema.TIME_FIRST else [])
    op(
        f"{name}.ranges",
        rules=range_rules,
        java=[f"{java}.lowerRange+upperRange+lowerRangeFixedSize+upperRangeFixedSize"],
    )(ranges)

    def store_key_segment_id(payload: JsonDict) -> JsonDict:
        """Segment timestamp (window start) and segment id of a store key."""
        data = require_hex(payload, "bytes", nullable=False)
        interval = require_int(payload, "segment_interval")
        return {
            "segment_timestamp": wk.extract_store_timestamp(schema, data),
            "segment_id": wk.store_key_segment_id(schema, data, interval),
        }

    op(f"{name}.segment_id", rules=[layout, "WIN-15"])(store_key_segment_id)

    if schema is not wk.WindowSchema.PLAIN:

        def from_non_prefix_window_key(payload: JsonDict) -> JsonDict:
            """A plain store key rewritten in this prefixed layout."""
            return {"bytes": tohex(wk.from_non_prefix_window_key(schema, require_hex(payload, "bytes", nullable=False)))}

        op(
            f"{name}.from_non_prefix_window_key",
            rules=[layout, "WIN-12"],
            java=[f"{java}.fromNonPrefixWindowKey"],
            lenient=_lenient_short_plain_key if schema is wk.WindowSchema.KEY_FIRST else None,
        )(from_non_prefix_window_key)


for _schema in wk.WindowSchema:
    _register(_schema)


@op("window.key_schema.to_binary", rules=["WIN-5", "WIN-8", "WIN-7"], java=["WindowKeySchema.toBinary"])
def to_binary(payload: JsonDict) -> JsonDict:
    """Pipe-serde bytes ``[key][start]`` of a windowed key whose ``TimeWindow(start, end)`` is valid."""
    start, end = require_int(payload, "window_start"), require_int(payload, "window_end")
    wk.validate_window(start, end, time_window=True, error=EncodeError)
    return {"bytes": tohex(wk.to_binary(require_hex(payload, "key"), start))}


@op("window.key_schema.from_binary", rules=["WIN-5", "WIN-8", "WIN-9"], java=["WindowKeySchema.from"])
def from_binary(payload: JsonDict) -> JsonDict:
    """Key and time window of pipe-serde bytes, for a fixed window size."""
    key, window = wk.from_binary(require_hex(payload, "bytes", nullable=False), require_int(payload, "window_size"))
    return {"key": tohex(key), "start": window.start, "end": window.end}


@op("window.is_time_first_schema_key", rules=["WIN-2"])
def is_time_first_schema_key(payload: JsonDict) -> JsonDict:
    """Whether a prefixed store key carries the time-first prefix."""
    return {"result": wk.is_time_first_schema_key(require_hex(payload, "bytes", nullable=False))}


@op("window.next_seqnum", rules=["WIN-6"])
def next_seqnum(payload: JsonDict) -> JsonDict:
    """The seqnum the next put uses, given the current one."""
    return {"seqnum": wk.next_seqnum(require_int(payload, "seqnum"), require_bool(payload, "retain_duplicates"))}


@op("window.segment_interval", rules=["WIN-16"])
def segment_interval(payload: JsonDict) -> JsonDict:
    """Checked store parameters: the segment interval in use (the default when none is given)."""
    interval = wk.validate_store_params(require_int(payload, "retention"), require_int(payload, "window_size"), require_int(payload, "segment_interval", None))
    return {"segment_interval": interval}
