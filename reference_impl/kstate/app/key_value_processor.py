"""The key-value family's processor, ``table()``, found by :mod:`kstate.app.processors` by this module's name."""

from __future__ import annotations

from kstate.app.processor_base import Headers, ProcessorBase, encode_stored
from kstate.codecs.store_types import Family


class TableProcessor(ProcessorBase):
    """``table()`` over a key-value store: put the value in the type's layout, delete on a null value."""

    FAMILY = Family.KEY_VALUE

    def process(self, key: bytes, value: bytes | None, timestamp: int, headers: Headers) -> None:
        if value is None:
            self.store.delete(key)
        else:
            self.store.put(key, encode_stored(self.store_type, value, timestamp, headers))


PROCESSOR = TableProcessor
