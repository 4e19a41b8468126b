"""How ``kstate inspect --dump`` shows a versioned store's rows (LAY-5, VER-*), found by
:mod:`kstate.inspect.state_dir` by this module's name: a latest-value row, or a segment row's versions."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from kstate.codecs import versioned
from kstate.codecs.store_types import Family, StoreType, ValueFormat
from kstate.inspect import state_dir

FAMILY = Family.VERSIONED
#: Its column families' value layouts are the table's (VS-25: the headers type keeps them in ``default``).
VALUE_FORMATS: Mapping[str, ValueFormat] = MappingProxyType({})
PLAIN_KEYS = False


def row_fields(kind: str, store_type: StoreType, value_format: ValueFormat, key: bytes, value: bytes) -> dict[str, Any]:
    """The record key and its segment (``latest`` for the latest-value store), and the latest value with its
    timestamp or the segment's versions, each with its validity (a tombstone version's value is null, VER-8)."""
    segment, raw_key = versioned.split_segment_key(key)
    row: dict[str, Any] = {"key": state_dir.display_text(raw_key)}
    if segment == versioned.LATEST_VALUE_SEGMENT_ID:
        latest, ts = versioned.decode_latest_value(value)
        row.update(segment="latest", **state_dir.value_fields(value_format, latest), timestamp=ts)
    else:
        row["segment"] = segment
        row["versions"] = [{"valid_from": v.valid_from, "valid_to": v.valid_to,
                            **state_dir.value_fields(value_format, v.value)}
                           for v in versioned.deserialize_segment_value(value).versions()]
    return row
