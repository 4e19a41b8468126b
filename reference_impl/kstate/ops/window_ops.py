"""Operations over window store keys (spec/window-keys.md, WIN-*).

Each Kafka schema class gets its own operation prefix: ``window.key_schema`` (``WindowKeySchema``),
``window.time_first`` and ``window.key_first`` (``PrefixedWindowKeySchemas``).
"""

from __future__ import annotations

from kstate.codecs import window_keys as wk
from kstate.errors import EncodeError
from kstate.ops import JsonDict, key_schema_ops, op, tohex
from kstate.ops.fields import Output, Request, bool_field, deferred, int_field
from kstate.ops.key_schema_ops import BYTES, KEY

#: The window's start and end (ms) an output reports.
_WINDOW_OUTPUTS = (Output("start", "int"), Output("end", "int"))


def _register(schema: wk.WindowSchema) -> None:
    name = f"window.{schema.name}"
    java = schema.kafka_class
    layout = schema.layout_rule
    key_schema_ops.register_to_store_key(
        schema, "to_store_key_binary", ("timestamp", "seqnum"), ["WIN-6", "WIN-7"], "toStoreKeyBinary",
        "Store key of (key, window start, seqnum).")

    def extract_store_key(request: Request) -> JsonDict:
        """Key bytes, window start and seqnum of a store key."""
        data = request.bytes
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
        inputs=[BYTES],
        outputs=[Output("key", "hex"), Output("timestamp", "int"), Output("seqnum", "int"),
                 *([Output("is_time_first", "bool")] if schema.prefix is not None else [])],
    )(extract_store_key)

    def extract_store_window(request: Request) -> JsonDict:
        """Time window of a store key for a fixed window size."""
        window = schema.extract_store_window(request.bytes, request.window_size)
        return {"start": window.start, "end": window.end}

    op(
        f"{name}.extract_store_window",
        rules=[layout, "WIN-8", "WIN-9"],
        java=[f"{java}.extractStoreWindow"],
        lenient=key_schema_ops.lenient_prefix(schema),
        inputs=[BYTES, int_field("window_size")],
        outputs=_WINDOW_OUTPUTS,
    )(extract_store_window)

    ordered_bytes = ["WIN-11"] if key_schema_ops.orders_by_key(schema) else []
    key_schema_ops.register_ranges(schema, ["WIN-10", "WIN-7", *ordered_bytes])

    def store_key_segment_id(request: Request) -> JsonDict:
        """Segment timestamp (window start) and segment id of a store key."""
        data, interval = request.bytes, request.segment_interval
        return {"segment_timestamp": schema.segment_timestamp(data), "segment_id": schema.segment_id(data, interval)}

    op(f"{name}.segment_id", rules=[layout, "WIN-15"], inputs=[BYTES, int_field("segment_interval")],
       outputs=[Output("segment_timestamp", "int"), Output("segment_id", "int")])(store_key_segment_id)

    if schema.prefix is not None:
        key_schema_ops.register_from_non_prefix_key(
            schema, "from_non_prefix_window_key", "fromNonPrefixWindowKey", "WIN-12",
            "A plain store key rewritten in this prefixed layout.")


for _schema in wk.SCHEMAS:
    _register(_schema)


#: Read after the window is checked: a bad window is refused before a bad key, as Kafka builds the window first.
_DEFERRED_KEY = deferred(KEY)


@op("window.key_schema.to_binary", rules=["WIN-5", "WIN-8", "WIN-7"], java=["WindowKeySchema.toBinary"],
    inputs=[int_field("window_start"), int_field("window_end"), _DEFERRED_KEY], outputs=[Output("bytes", "hex")])
def to_binary(request: Request) -> JsonDict:
    """Pipe-serde bytes ``[key][start]`` of a windowed key whose ``TimeWindow(start, end)`` is valid."""
    start, end = request.window_start, request.window_end
    wk.validate_window(start, end, time_window=True, error=EncodeError)
    return {"bytes": tohex(wk.to_binary(_DEFERRED_KEY.parse(request.payload), start))}


@op("window.key_schema.from_binary", rules=["WIN-5", "WIN-8", "WIN-9"], java=["WindowKeySchema.from"],
    inputs=[BYTES, int_field("window_size")], outputs=[Output("key", "hex"), *_WINDOW_OUTPUTS])
def from_binary(request: Request) -> JsonDict:
    """Key and time window of pipe-serde bytes, for a fixed window size."""
    key, window = wk.from_binary(request.bytes, request.window_size)
    return {"key": tohex(key), "start": window.start, "end": window.end}


@op("window.is_time_first_schema_key", rules=["WIN-2"], inputs=[BYTES], outputs=[Output("result", "bool")])
def is_time_first_schema_key(request: Request) -> JsonDict:
    """Whether a prefixed store key carries the time-first prefix."""
    return {"result": wk.is_time_first_schema_key(request.bytes)}


@op("window.next_seqnum", rules=["WIN-6"], inputs=[int_field("seqnum"), bool_field("retain_duplicates")],
    outputs=[Output("seqnum", "int")])
def next_seqnum(request: Request) -> JsonDict:
    """The seqnum the next put uses, given the current one."""
    return {"seqnum": wk.next_seqnum(request.seqnum, request.retain_duplicates)}


@op("window.segment_interval", rules=["WIN-16"],
    inputs=[int_field("retention"), int_field("window_size"),
            int_field("segment_interval", "the default interval when left out or null", default=None)],
    outputs=[Output("segment_interval", "int")])
def segment_interval(request: Request) -> JsonDict:
    """Checked store parameters: the segment interval in use (the default when none is given)."""
    return {"segment_interval": wk.validate_store_params(request.retention, request.window_size, request.segment_interval)}
