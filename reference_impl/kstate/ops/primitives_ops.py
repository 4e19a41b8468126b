"""Operations over the primitive encodings (spec/primitives.md)."""

from __future__ import annotations

from collections.abc import Callable

from kstate.codecs import primitives as p
from kstate.ops import JsonDict, RequestHandler, op, tohex
from kstate.ops.fields import Output, Request, hex_field, int_field

#: The bytes every reader decodes (a null is refused: there is nothing to read).
_BYTES = hex_field("bytes", nullable=False, type="hex")


def _lenient_varint(payload: JsonDict) -> str | None:
    """Kafka accepts non-minimal encodings and drops high bits of an over-long last byte (PRIM-7)."""
    data = bytes.fromhex(payload.get("bytes") or "")
    end = 0
    while end < len(data) and data[end] & 0x80:
        end += 1
    if end >= len(data):
        return None
    used = data[: end + 1]
    if len(used) > 1 and used[-1] == 0:
        return "non-minimal varint encoding accepted"
    if (len(used) == 5 and used[-1] > 0x0F) or (len(used) == 10 and used[-1] > 0x01):
        return "high bits of the final varint byte dropped"
    return None


def _writer(write: Callable[[int], bytes], doc: str) -> RequestHandler:
    def handler(request: Request) -> JsonDict:
        data = write(request.value)
        return {"bytes": tohex(data), "size": len(data)}

    handler.__doc__ = doc
    return handler


def _reader(read: Callable[[bytes], tuple[int, int]], doc: str) -> RequestHandler:
    def handler(request: Request) -> JsonDict:
        value, consumed = read(request.bytes)
        return {"value": value, "bytes_consumed": consumed}

    handler.__doc__ = doc
    return handler


#: The varint encodings Kafka's ``ByteUtils`` writes and reads (PRIM-5 to PRIM-7): name, codec pair, the rules of
#: the write and of the read, the Java name, and what the write and the read docs say.
_VARINTS = (
    ("varint", p.write_varint, p.read_varint, ("PRIM-5", "PRIM-6"), ("PRIM-6", "PRIM-7"), "Varint",
     "Zig-zag varint of a Java int.", "Decode a zig-zag varint from the start of ``bytes``."),
    ("varlong", p.write_varlong, p.read_varlong, ("PRIM-5", "PRIM-6"), ("PRIM-6", "PRIM-7"), "Varlong",
     "Zig-zag varlong of a Java long.", "Decode a zig-zag varlong from the start of ``bytes``."),
    ("unsigned_varint", p.write_unsigned_varint, p.read_unsigned_varint, ("PRIM-5",), ("PRIM-5", "PRIM-7"),
     "UnsignedVarint", "Unsigned varint of a Java int's bit pattern.", "Decode an unsigned varint from the start of ``bytes``."),
    ("unsigned_varlong", p.write_unsigned_varlong, p.read_unsigned_varlong, ("PRIM-5",), ("PRIM-5", "PRIM-7"),
     "UnsignedVarlong", "Unsigned varlong of a Java long's bit pattern.",
     "Decode an unsigned varlong from the start of ``bytes``."),
)

_WRITER_OUTPUTS = (Output("bytes", "hex"), Output("size", "int"))
_READER_OUTPUTS = (Output("value", "int"), Output("bytes_consumed", "int"))

for _name, _write, _read, _write_rules, _read_rules, _java, _write_doc, _read_doc in _VARINTS:
    op(f"varint.write_{_name}", rules=_write_rules, java=[f"ByteUtils.write{_java}"], inputs=[int_field("value")],
       outputs=_WRITER_OUTPUTS)(_writer(_write, _write_doc))
    op(f"varint.read_{_name}", rules=_read_rules, java=[f"ByteUtils.read{_java}"], lenient=_lenient_varint,
       inputs=[_BYTES], outputs=_READER_OUTPUTS)(_reader(_read, _read_doc))


@op("primitives.segment_id", rules=["PRIM-4"], inputs=[int_field("timestamp"), int_field("segment_interval")],
    outputs=[Output("segment_id", "int")])
def segment_id(request: Request) -> JsonDict:
    """``timestamp / segment_interval`` with Java truncation."""
    return {"segment_id": p.segment_id(request.timestamp, request.segment_interval)}


@op("primitives.increment", rules=["PRIM-3"], inputs=[_BYTES], outputs=[Output("bytes", "hex")])
def increment(request: Request) -> JsonDict:
    """``Bytes.increment`` of ``bytes``; an error on carry overflow."""
    return {"bytes": tohex(p.increment(request.bytes))}


@op("primitives.compare", rules=["PRIM-2"],
    inputs=[hex_field("a", nullable=False, type="hex"), hex_field("b", nullable=False, type="hex")],
    outputs=[Output("result", "int", "-1, 0 or 1")])
def compare(request: Request) -> JsonDict:
    """Unsigned lexicographic comparison of ``a`` and ``b``: -1, 0 or 1."""
    return {"result": p.compare_unsigned(request.a, request.b)}


@op("primitives.encode_int64", rules=["PRIM-1"], inputs=[int_field("value")], outputs=[Output("bytes", "hex")])
def encode_int64(request: Request) -> JsonDict:
    """Big-endian two's complement int64."""
    return {"bytes": tohex(p.encode_int64(request.value))}


@op("primitives.read_int64", rules=["PRIM-1", "PRIM-8"], inputs=[_BYTES, int_field("offset", default=0)],
    outputs=[Output("value", "int")])
def read_int64(request: Request) -> JsonDict:
    """Read a big-endian int64 at ``offset`` of ``bytes``."""
    value, _ = p.read_int64(request.bytes, request.offset)
    return {"value": value}


@op("primitives.encode_int32", rules=["PRIM-1"], inputs=[int_field("value")], outputs=[Output("bytes", "hex")])
def encode_int32(request: Request) -> JsonDict:
    """Big-endian two's complement int32."""
    return {"bytes": tohex(p.encode_int32(request.value))}
