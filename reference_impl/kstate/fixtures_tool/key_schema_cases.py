"""Case builders the window and session fixture families share, one case per key schema object (WIN-*, SESS-*).

Inputs are built by hand from the layouts the spec draws (WIN-1..3, SESS-1..3), not by the reference's
encoders, so a case's input does not depend on the reference; the schema objects give names and order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kstate.codecs.key_schemas import KeySchema
from kstate.fixtures_tool import CaseSpec

AnySchema = KeySchema[Any]

#: Each layout's prefix byte as the spec draws it (WIN-2, WIN-3, SESS-2, SESS-3).
PREFIX_HEX = {"key_schema": "", "time_first": "00", "key_first": "01"}


def store_key_hex(schema: AnySchema, key: str, head: str, tail: str = "") -> str:
    """``[prefix][key][head][tail]``; the time-first layout puts its head before the key: ``[00][head][key][tail]``."""
    prefix = PREFIX_HEX[schema.name]
    if schema.name == "time_first":
        return prefix + head + key + tail
    return prefix + key + head + tail


def schema_cases(
    schema: AnySchema, op: str, kind: str, fields: Sequence[str], rows: Iterable[Sequence[Any]],
    rules: tuple[str, ...] = (),
) -> list[CaseSpec]:
    """Case ``<schema>.<kind>.<row name>`` of ``<family>.<schema>.<op>`` per row ``(name, *values of fields)``."""
    return [
        CaseSpec(f"{schema.name}.{kind}.{name}", f"{schema.family}.{schema.name}.{op}",
                 dict(zip(fields, values, strict=True)), rules)
        for name, *values in rows
    ]


def short_input_cases(schema: AnySchema, op: str, exact: str, rules: tuple[str, ...]) -> list[CaseSpec]:
    """The fixed part alone (``exact``), one byte short of it, and no bytes at all (WIN-4, SESS-4)."""
    return schema_cases(schema, op, "decode", ("bytes",),
                        [("exact_fixed_part", exact), ("one_byte_short", exact[2:]), ("empty", "")], rules)
