"""Operations over window store keys (spec/window-keys.md, WIN-*).

Each Kafka schema class gets its own operation prefix: ``window.key_schema`` (``WindowKeySchema``),
``window.time_first`` and ``window.key_first`` (``PrefixedWindowKeySchemas``).
"""

from __future__ import annotations

from kstate.codecs import window_keys as wk
from kstate.errors import EncodeError
from kstate.ops import JsonDict, key_schema_ops, op, tohex
from kstate.ops.inputs import require_bool, require_hex, require_int


def _register(schema: wk.WindowSchema) -> None:
    name = f"window.{schema.name}"
    java = schema.kafka_class
    layout = schema.layout_rule
    key_schema_ops.register_to_store_key(
        schema, "to_store_key_binary", ("timestamp", "seqnum"), ["WIN-6", "WIN-7"], "toStoreKeyBinary",
        "Store key of (key, window start, seqnum).")

    def extract_store_key(payload: JsonDict) -> JsonDict:
        """Key bytes, window start and seqnum of a store key."""
        data = require_hex(payload, "bytes", nullable=False)
        decoded = schema.decode(data)
        out: JsonDict = {"key": tohex(decoded.key), "timestamp": decoded.timestamp, "seqnum": decoded.seqnum}
        if schema.prefix is not None:
            out["is_time_first"] = wk.is_time_first_schema_key(data)
        return out

    op(
        f"{name}.extract_store_key",
        rules=[layout, "WIN-4"],
        java=[f"{java}.extractStoreKeyBytes+extractStoreTimestamp+extractStoreSequence"],
        lenient=key_schema_ops.lenient_prefix(schema),
    )(extract_store_key)

    def extract_store_window(payload: JsonDict) -> JsonDict:
        """Time window of a store key for a fixed window size."""
        window = schema.extract_store_window(require_hex(payload, "bytes", nullable=False), require_int(payload, "window_size"))
        return {"start": window.start, "end": window.end}

    op(
        f"{name}.extract_store_window",
        rules=[layout, "WIN-8", "WIN-9"],
        java=[f"{java}.extractStoreWindow"],
        lenient=key_schema_ops.lenient_prefix(schema),
    )(extract_store_window)

    ordered_bytes = ["WIN-11"] if key_schema_ops.orders_by_key(schema) else []
    key_schema_ops.register_ranges(schema, ["WIN-10", "WIN-7", *ordered_bytes])

    def store_key_segment_id(payload: JsonDict) -> JsonDict:
        """Segment timestamp (window start) and segment id of a store key."""
        data = require_hex(payload, "bytes", nullable=False)
        interval = require_int(payload, "segment_interval")
        return {"segment_timestamp": schema.segment_timestamp(data), "segment_id": schema.segment_id(data, interval)}

    op(f"{name}.segment_id", rules=[layout, "WIN-15"])(store_key_segment_id)

    if schema.prefix is not None:
        key_schema_ops.register_from_non_prefix_key(
            schema, "from_non_prefix_window_key", "fromNonPrefixWindowKey", "WIN-12",
            "A plain store key rewritten in this prefixed layout.")


for _schema in wk.SCHEMAS:
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
