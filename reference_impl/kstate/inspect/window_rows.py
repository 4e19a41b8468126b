"""How ``kstate inspect --dump`` shows a window store's rows (LAY-5, WIN-1..3), found by
:mod:`kstate.inspect.state_dir` by this module's name: the record key, the window and the seqnum."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from kstate.codecs import window_keys
from kstate.codecs.store_types import WINDOW_HEADERS_CF, Family, StoreType, ValueFormat
from kstate.codecs.type_detection import TIME_ORDERED, window_schema
from kstate.inspect import state_dir

FAMILY = Family.WINDOW
#: Time-ordered window stores with headers keep ``[hsize][headers][aggregation]``, a layout the table leaves open
#: (LAY-5).
VALUE_FORMATS: Mapping[str, ValueFormat] = MappingProxyType({WINDOW_HEADERS_CF: ValueFormat.AGGREGATION_WITH_HEADERS})
PLAIN_KEYS = False


def row_fields(kind: str, store_type: StoreType, value_format: ValueFormat, key: bytes, value: bytes) -> dict[str, Any]:
    """The record key, ``window`` (its start) and the seqnum, then the value's fields (WIN-1..3)."""
    # Time-ordered window stores keep time-first base rows and key-first index rows (WIN-2, WIN-3).
    time_first = kind == TIME_ORDERED or store_type is StoreType.TIME_ORDERED_WINDOW_WITH_HEADERS
    record_key, fields = (window_schema(key) if time_first else window_keys.PLAIN).shown(key)
    return {"key": state_dir.display_text(record_key), **fields, **state_dir.value_fields(value_format, value)}
