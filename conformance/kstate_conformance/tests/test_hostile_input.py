"""Hostile bytes to every decoding operation: a result or a refusal, never a crash or a hang (PRIM-8, OPS-3).

The decoding operations and a template input for each are taken from the golden fixtures: every
operation whose input has a hex ``bytes`` (or ``file``) field is fed random and adversarial bytes
in that field, other fields kept from a fixture case.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kstate_conformance import rules
from kstate_conformance.fixtures import all_cases

BYTES_FIELDS = ("bytes", "file")


def _templates() -> dict[str, tuple[str, dict[str, Any]]]:
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for case in all_cases():
        for field in BYTES_FIELDS:
            if isinstance(case["input"].get(field), str) and case["op"] not in found:
                found[case["op"]] = (field, case["input"])
    return dict(sorted(found.items()))


TEMPLATES = _templates()

# Length fields claiming far more than the input holds: a varint count of 2^31-1, int32 sizes of 2^31-1.
ADVERSARIAL = [
    "feffffff0f", "fdffffff0f" + "00" * 4, "7fffffff" * 4, "ffffffff" * 6, "01" * 3 + "feffffff0f",
    "00" * 16 + "7fffffff", "ff" * 40, "80" * 12,
]


@rules("PRIM-8", "OPS-3")
@pytest.mark.parametrize("op", list(TEMPLATES))
@settings(max_examples=40)
@given(data=st.one_of(st.binary(max_size=64), st.sampled_from(ADVERSARIAL).map(bytes.fromhex)))
def test_decoders_refuse_or_answer(codec: Any, op: str, data: bytes) -> None:
    field, template = TEMPLATES[op]
    out = codec.call(op, {**template, field: data.hex()})
    assert isinstance(out, dict)
