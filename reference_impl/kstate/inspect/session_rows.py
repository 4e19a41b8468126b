"""How ``kstate inspect --dump`` shows a session store's rows (LAY-5, SESS-1), found by
:mod:`kstate.inspect.state_dir` by this module's name: the record key and the validated session window."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from kstate.codecs import session_keys
from kstate.codecs.store_types import SESSION_HEADERS_CF, Family, StoreType, ValueFormat
from kstate.inspect import state_dir

FAMILY = Family.SESSION
#: The headers type's column family (LAY-5, LAY-8).
VALUE_FORMATS: Mapping[str, ValueFormat] = MappingProxyType({SESSION_HEADERS_CF: ValueFormat.AGGREGATION_WITH_HEADERS})
PLAIN_KEYS = False


def row_fields(kind: str, store_type: StoreType, value_format: ValueFormat, key: bytes, value: bytes) -> dict[str, Any]:
    """The record key and ``session`` (start and end, validated: SESS-4), then the value's fields (SESS-1)."""
    decoded = session_keys.PLAIN.decode(key)
    session_keys.validate_session_window(decoded.start, decoded.end)
    return {"key": state_dir.display_text(decoded.key), "session": {"start": decoded.start, "end": decoded.end},
            **state_dir.value_fields(value_format, value)}
