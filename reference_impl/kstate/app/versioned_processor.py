"""The versioned family's processor, ``table()`` over a versioned store, found by :mod:`kstate.app.processors` by
this module's name."""

from __future__ import annotations

from types import MappingProxyType

from kstate.app.processor_base import Headers, ProcessorBase, encode_stored
from kstate.codecs.store_types import Family


class VersionedTableProcessor(ProcessorBase):
    """``table()`` over a versioned store: every record a version at its timestamp, in the type's value layout
    (the headers variant: the record's headers with the value); a null value a tombstone (INST-22, VER-*: a
    tombstone is a version). ``kstate demo`` keeps ten minutes of history."""

    FAMILY = Family.VERSIONED
    DEMO_STORE_OPTIONS = MappingProxyType({"history_retention_ms": 600_000, "segment_interval_ms": 60_000})

    def process(self, key: bytes, value: bytes | None, timestamp: int, headers: Headers) -> None:
        self.store.put(key, None if value is None else encode_stored(self.store_type, value, timestamp, headers),
                       timestamp)


PROCESSOR = VersionedTableProcessor
