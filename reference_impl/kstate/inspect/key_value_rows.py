"""How ``kstate inspect --dump`` shows a key-value store's rows (LAY-5), found by :mod:`kstate.inspect.state_dir`
by this module's name: the stored key as it is, the value split by its layout."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from kstate.codecs.store_types import (
    DEFAULT_CF,
    TIMESTAMPED_CF,
    TIMESTAMPED_HEADERS_CF,
    Family,
    StoreType,
    ValueFormat,
)
from kstate.inspect import state_dir

FAMILY = Family.KEY_VALUE
#: The value layout of each column family the family's types keep or upgrade from (LAY-6, LAY-8).
VALUE_FORMATS: Mapping[str, ValueFormat] = MappingProxyType({
    DEFAULT_CF: ValueFormat.PLAIN,
    TIMESTAMPED_CF: ValueFormat.TIMESTAMPED,
    TIMESTAMPED_HEADERS_CF: ValueFormat.TIMESTAMPED_WITH_HEADERS,
})
#: The stored key is the record key: the dump's per-family decoder and its timestamped lines are written inline
#: (issue 35).
PLAIN_KEYS = True


def row_fields(kind: str, store_type: StoreType, value_format: ValueFormat, key: bytes, value: bytes) -> dict[str, Any]:
    """The key as text, then the value's fields (KV-1, TSKV-1, HV-6)."""
    return {"key": state_dir.display_text(key), **state_dir.value_fields(value_format, value)}
