"""Unit tests every window and session key schema passes (kstate.codecs.key_schemas), once per schema object."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kstate.codecs import session_keys as sk
from kstate.codecs import window_keys as wk
from kstate.codecs.key_schemas import KeySchema
from kstate.errors import DecodeError

SCHEMAS: tuple[KeySchema[Any], ...] = (*wk.SCHEMAS, *sk.SCHEMAS)
INT64 = st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)
INT32 = st.integers(min_value=-(1 << 31), max_value=(1 << 31) - 1)
#: Each family's decoded store key and the ranges of its two times: (start, seqnum) or (start, end).
STORE_KEY: dict[str, Callable[[bytes, int, int], object]] = {"window": wk.WindowStoreKey, "session": sk.SessionStoreKey}
TIMES = {"window": (INT64, INT32), "session": (INT64, INT64)}
#: What the fixed part alone, all zero bytes, decodes to.
ZERO_KEY: dict[str, object] = {"window": wk.WindowStoreKey(b"", 0, 0), "session": sk.SessionStoreKey(b"", 0, 0)}


def _family_decoders(schema: KeySchema[Any], data: bytes) -> list[Callable[[], object]]:
    if isinstance(schema, wk.WindowSchema):
        return [lambda: schema.extract_store_window(data, 10), lambda: wk.from_binary(data, 10)]
    assert isinstance(schema, sk.SessionSchema)
    return [lambda: schema.extract_window(data), lambda: sk.TIME_FIRST.from_non_prefix_key(data)]


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: f"{s.family}.{s.name}")
@given(key=st.binary(max_size=20), draw=st.data())
def test_round_trip(schema: KeySchema[Any], key: bytes, draw: st.DataObject) -> None:
    first, second = (draw.draw(times) for times in TIMES[schema.family])
    data = schema.to_store_key(key, first, second)
    assert schema.decode(data) == STORE_KEY[schema.family](key, first, second)
    assert len(data) == len(key) + schema.min_key_length


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: f"{s.family}.{s.name}")
@given(data=st.binary(max_size=48))
def test_hostile_bytes_raise_only_decode_errors(schema: KeySchema[Any], data: bytes) -> None:
    decoders: list[Callable[[], object]] = [
        lambda: schema.decode(data),
        lambda: schema.segment_id(data, 7),
        *_family_decoders(schema, data),
    ]
    if schema.prefix is not None:
        decoders.append(lambda: schema.from_non_prefix_key(data))
    for decode in decoders:
        with contextlib.suppress(DecodeError):
            decode()


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: f"{s.family}.{s.name}")
def test_short_input_is_refused_with_the_offset(schema: KeySchema[Any]) -> None:
    need = schema.min_key_length
    with pytest.raises(DecodeError) as info:
        schema.decode(bytes(need - 1))
    assert info.value.offset == 0
    assert schema.decode(bytes(need)) == ZERO_KEY[schema.family]
