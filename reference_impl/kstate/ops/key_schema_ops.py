"""The operations every window and session key schema shares, registered from the schema objects (WIN-*, SESS-*).

Each segmented family's key-schema operations module (`*_ops`) calls these once per schema
of its :data:`SCHEMAS`; an operation is named ``<family>.<schema name>.<operation>``.
"""

from __future__ import annotations

from typing import Any

from kstate.codecs.key_schemas import KeyFirstLayout, KeySchema, TimeFirstLayout
from kstate.ops import JsonDict, LeniencyCheck, capture, op, tohex
from kstate.ops.fields import Output, Request, hex_field, int_field

#: The store key a schema decodes (a null is refused: there is nothing to decode).
BYTES = hex_field("bytes", nullable=False, type="hex")
#: The record key a schema encodes (a null key is the schema's to accept or refuse).
KEY = hex_field("key")
#: One range bound: its bytes, or a refusal (OPS-3).
_BOUND = "{bytes: hex | null} | error"

AnySchema = KeySchema[Any]


def lenient_prefix(schema: AnySchema) -> LeniencyCheck | None:
    """Kafka decodes a prefixed key without checking its prefix byte, which the spec only recommends (WIN-4, SESS-4)."""
    expected = schema.prefix
    if expected is None:
        return None

    def check(payload: JsonDict) -> str | None:
        data = bytes.fromhex(payload.get("bytes") or "")
        if len(data) >= schema.min_key_length and data[0] != expected:
            return f"Kafka does not check the prefix byte: {data[0]:#04x} decoded as {schema.name} (0x{expected:02x})"
        return None

    return check


def lenient_short_plain_key(schema: AnySchema) -> LeniencyCheck:
    """The key-first conversion prefixes any bytes in Kafka, which the spec only recommends (WIN-12, SESS-9)."""
    suffix_size = schema.suffix_size

    def check(payload: JsonDict) -> str | None:
        data = bytes.fromhex(payload.get("bytes") or "")
        if len(data) < suffix_size:
            return f"Kafka prefixes {len(data)} bytes, shorter than a plain {schema.noun}'s {suffix_size}-byte suffix"
        return None

    return check


def register_to_store_key(
    schema: AnySchema, name: str, times: tuple[str, str], rules: list[str], java_method: str, doc: str,
    lenient: LeniencyCheck | None = None,
) -> None:
    """``<family>.<schema>.<name>``: the store key of the input's key and its two ``times`` fields."""
    first, second = times

    def to_store_key(request: Request) -> JsonDict:
        return {"bytes": tohex(schema.to_store_key(request.key, request[first], request[second]))}

    to_store_key.__doc__ = doc
    op(
        f"{schema.family}.{schema.name}.{name}",
        rules=[schema.layout_rule, *rules],
        java=[f"{schema.kafka_class}.{java_method}"],
        lenient=lenient,
        inputs=[KEY, int_field(first), int_field(second)],
        outputs=[Output("bytes", "hex")],
    )(to_store_key)


def register_ranges(schema: AnySchema, rules: list[str]) -> None:
    """``<family>.<schema>.ranges``: the four range bounds of (key, time)."""

    def ranges(request: Request) -> JsonDict:
        """The four range bounds of (key, time); each is ``{bytes}`` or a refusal."""
        key, time = request.key, request.time
        return {
            "lower_range": capture(lambda: {"bytes": tohex(schema.lower_range(key, time))}),
            "upper_range": capture(lambda: {"bytes": tohex(schema.upper_range(key, time))}),
            "lower_range_fixed_size": capture(lambda: {"bytes": tohex(schema.lower_range_fixed_size(key, time))}),
            "upper_range_fixed_size": capture(lambda: {"bytes": tohex(schema.upper_range_fixed_size(key, time))}),
        }

    op(
        f"{schema.family}.{schema.name}.ranges",
        rules=rules,
        java=[f"{schema.kafka_class}.lowerRange+upperRange+lowerRangeFixedSize+upperRangeFixedSize"],
        inputs=[KEY, int_field("time")],
        outputs=[Output(bound, _BOUND) for bound in ("lower_range", "upper_range", "lower_range_fixed_size",
                                                     "upper_range_fixed_size")],
    )(ranges)


def register_from_non_prefix_key(schema: AnySchema, name: str, java_method: str, rule: str, doc: str) -> None:
    """``<family>.<schema>.<name>``: a plain store key rewritten in the prefixed layout of ``schema``."""

    def from_non_prefix_key(request: Request) -> JsonDict:
        return {"bytes": tohex(schema.from_non_prefix_key(request.bytes))}

    from_non_prefix_key.__doc__ = doc
    op(
        f"{schema.family}.{schema.name}.{name}",
        rules=[schema.layout_rule, rule],
        java=[f"{schema.kafka_class}.{java_method}"],
        lenient=lenient_short_plain_key(schema) if isinstance(schema, KeyFirstLayout) else None,
        inputs=[BYTES],
        outputs=[Output("bytes", "hex")],
    )(from_non_prefix_key)


def orders_by_key(schema: AnySchema) -> bool:
    """Whether the schema's upper bound is ``OrderedBytes.upperRange`` of the key (WIN-11, SESS-8): not time-first."""
    return not isinstance(schema, TimeFirstLayout)
