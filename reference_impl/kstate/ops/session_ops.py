"""Operations over session store keys (spec/session-keys.md, SESS-*).

Each Kafka schema class gets its own operation prefix: ``session.key_schema`` (``SessionKeySchema``),
``session.time_first`` and ``session.key_first`` (``PrefixedSessionKeySchemas``).
"""

from __future__ import annotations

from kstate.codecs import session_keys as sk
from kstate.errors import EncodeError
from kstate.ops import JsonDict, LeniencyCheck, capture, key_schema_ops, op, tohex
from kstate.ops.fields import Output, Request, deferred, int_field
from kstate.ops.inputs import require_int
from kstate.ops.key_schema_ops import BYTES, KEY

#: Read after the key's END is decoded, so that a bad key is refused before a bad interval.
_DEFERRED_INTERVAL = deferred(int_field("segment_interval"))

#: The Kafka method and operation that rewrite a plain session key in each prefixed layout (SESS-9).
_FROM_NON_PREFIX = {
    sk.TIME_FIRST: ("extract_window_bytes_from_non_prefix_session_key", "extractWindowBytesFromNonPrefixSessionKey"),
    sk.KEY_FIRST: ("prefix_non_prefix_session_key", "prefixNonPrefixSessionKey"),
}


def _lenient_unvalidated_window(schema: sk.SessionSchema) -> LeniencyCheck:
    def check(payload: JsonDict) -> str | None:
        start, end = require_int(payload, "start"), require_int(payload, "end")
        refused_anyway = payload["key"] is None and not schema.accepts_null_key
        if (start < 0 or end < start) and not refused_anyway:
            return f"Kafka writes the key of an invalid session window (start {start}, end {end}) without checking it"
        return None

    return check


def _register(schema: sk.SessionSchema) -> None:
    key_schema_ops.register_to_store_key(
        schema, "to_binary", ("start", "end"), ["SESS-5", "SESS-6"], "toBinary",
        "Session key of (key, start, end); the window is not validated.", lenient=_lenient_unvalidated_window(schema))

    def extract(request: Request) -> JsonDict:
        """Key, start and end of a session key, and its window or the window's refusal."""
        decoded = schema.decode(request.bytes)

        def window() -> JsonDict:
            sk.validate_session_window(decoded.start, decoded.end)
            return {"start": decoded.start, "end": decoded.end}

        return {"key": tohex(decoded.key), "start": decoded.start, "end": decoded.end, "window": capture(window)}

    op(
        f"session.{schema.name}.extract",
        rules=[schema.layout_rule, "SESS-4"],
        java=[f"{schema.kafka_class}.extractKeyBytes+extractStartTimestamp+extractEndTimestamp+extractWindow"],
        lenient=key_schema_ops.lenient_prefix(schema),
        inputs=[BYTES],
        outputs=[Output("key", "hex"), Output("start", "int"), Output("end", "int"),
                 Output("window", "{end: int, start: int} | error", "the window, or why it is refused")],
    )(extract)

    ordered_bytes = ["SESS-8"] if key_schema_ops.orders_by_key(schema) else []
    key_schema_ops.register_ranges(schema, ["SESS-7", "SESS-6", *ordered_bytes])

    def key_segment_id(request: Request) -> JsonDict:
        """Segment timestamp (the session END) and segment id of a session key."""
        data = request.bytes
        # The END is decoded before the interval is read, so a bad key is refused first.
        segment_timestamp = schema.segment_timestamp(data)
        return {"segment_timestamp": segment_timestamp,
                "segment_id": schema.segment_id(data, _DEFERRED_INTERVAL.parse(request.payload))}

    op(f"session.{schema.name}.segment_id", rules=[schema.layout_rule, "SESS-11"],
       inputs=[BYTES, _DEFERRED_INTERVAL],
       outputs=[Output("segment_timestamp", "int"), Output("segment_id", "int")])(key_segment_id)


for _schema in sk.SCHEMAS:
    _register(_schema)

for _schema, (_name, _java_method) in _FROM_NON_PREFIX.items():
    key_schema_ops.register_from_non_prefix_key(
        _schema, _name, _java_method, "SESS-9",
        f"A plain session key rewritten in the {_schema.name.replace('_', '-')} layout.")


@op(
    "session.to_binary_windowed",
    rules=["SESS-10", "SESS-1", "SESS-2", "SESS-3", "SESS-6"],
    java=["SessionKeySchema/TimeFirst/KeyFirst.toBinary(Windowed,Serializer)"],
    inputs=[KEY, int_field("start"), int_field("end")],
    outputs=[Output(name, "hex | error") for name in ("session_key_schema", "time_first", "key_first")],
)
def to_binary_windowed(request: Request) -> JsonDict:
    """The three schemas' bytes of a windowed key; a refused window refuses all three."""
    key, start, end = request.key, request.start, request.end
    sk.validate_session_window(start, end, error=EncodeError)

    def encoded(schema: sk.SessionSchema) -> JsonDict | str | None:
        result = capture(lambda: {"bytes": tohex(schema.to_binary_windowed(key, start, end))})
        return result if "error" in result else result["bytes"]

    # The plain schema's field is named after its class, SessionKeySchema.
    return {("session_key_schema" if schema is sk.PLAIN else schema.name): encoded(schema) for schema in sk.SCHEMAS}


@op("session.segment_interval", rules=["SESS-11"], inputs=[int_field("retention")],
    outputs=[Output("segment_interval", "int")])
def segment_interval(request: Request) -> JsonDict:
    """The default segment interval of a persistent session store with this retention."""
    return {"segment_interval": sk.default_segment_interval(request.retention)}
