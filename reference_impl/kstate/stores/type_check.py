"""A store directory opened as another store type is refused where its bytes tell, before anything is written (LAY-14).

Kafka records no store type on disk and opens whatever the directory holds. The readings are those ``kstate inspect``
names types by (:mod:`kstate.codecs.type_detection`), over at most :data:`SAMPLE_ROWS` rows of each database, read
through a read-only engine.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kstate.codecs import key_schemas
from kstate.codecs.layout import store_dir
from kstate.codecs.segments import parse_segment_name
from kstate.codecs.store_types import (
    DEFAULT_CF,
    ROWS_READINGS,
    STORE_TYPES,
    Family,
    RowsReading,
    StoreType,
    UnknownFamilyError,
)
from kstate.codecs.type_detection import (
    Rows,
    detect_segmented_family,
    not_a_headers_value,
    not_a_versioned_row,
    versioned_values,
)
from kstate.errors import KStateError
from kstate.stores.api import ProcessorStateError
from kstate.stores.engine import RocksDBEngine, list_column_families

#: Rows read from each database: enough to tell a type, bounded so that the check costs little on a large store.
SAMPLE_ROWS = 256
#: Segment databases read: a store keeps retention / interval + 1 of them; a directory with more is not ours to judge.
SAMPLE_SEGMENTS = 64


class WrongStoreTypeError(ProcessorStateError):
    """The directory holds another store type's rows (LAY-14): ``found`` names what the bytes are, ``row`` the key."""

    def __init__(self, store: str, store_type: StoreType, found: str, why: str) -> None:
        super().__init__(f"Error opening store {store} as {store_type.value}: its directory holds {found} ({why})")
        self.store = store
        self.store_type = store_type
        self.found = found


def _sample(path: Path, name: str, cf: str = DEFAULT_CF) -> Rows:
    """Up to :data:`SAMPLE_ROWS` rows of ``cf`` of the database at ``path`` (none when it has no such family)."""
    if not (path / "CURRENT").is_file() or cf not in list_column_families(path, name):
        return []
    engine = RocksDBEngine(path, store_name=name, read_only=True)
    try:
        cursor = engine.iterate(cf)
        try:
            return list(itertools.islice(cursor, SAMPLE_ROWS))
        finally:
            cursor.close()
    finally:
        engine.close()


def check_store_type_on_disk(store_type: StoreType, task_dir: Path, name: str, options: Mapping[str, Any]) -> None:
    """Refuse a directory whose rows cannot be ``store_type``'s (LAY-14); silent where the bytes do not tell.

    What the family's rows tell is the table's (``ROWS_READINGS``); a family without an entry is refused."""
    family = STORE_TYPES[store_type].family
    path = task_dir / store_dir(store_type, name)
    reading = ROWS_READINGS.get(family)
    if reading is RowsReading.VERSIONED_ROWS:
        _check_versioned(store_type, path, name)
    elif reading is RowsReading.SEGMENT_KEYS:
        _check_segmented(store_type, family, path, name, options)
    elif reading is not RowsReading.ANY_BYTES:  # a key-value store's rows are any bytes: nothing tells
        raise UnknownFamilyError(family, "the store type check on disk (LAY-14)")


def _check_versioned(store_type: StoreType, path: Path, name: str) -> None:
    """Every row must read as a versioned row (a key-value store's short keys do not); the headers variant's values
    must read as ``[varint][headers][value]``."""
    for key, value in _sample(path, name):
        why = not_a_versioned_row(key, value)
        if why is not None:
            raise WrongStoreTypeError(name, store_type, "rows that are not versioned rows: a key-value store's",
                                      f"key {key[:32].hex()}: {why}")
        if STORE_TYPES[store_type].stores_headers:
            for stored in versioned_values(key, value):
                why = not_a_headers_value(stored)
                if why is not None:
                    raise WrongStoreTypeError(name, store_type, "values without headers: a versioned_kv store's",
                                              f"key {key[:32].hex()}: {why}")


def _check_segmented(store_type: StoreType, family: Family, path: Path, name: str,
                     options: Mapping[str, Any]) -> None:
    """The segments' plain keys must not read as another segmented family's, each time inside the segment the row is
    filed in (LAY-3, LAY-5)."""
    if not path.is_dir():
        return
    segments: list[tuple[int, dict[str, Rows]]] = []
    for entry in sorted(path.iterdir()):
        if len(segments) >= SAMPLE_SEGMENTS:
            break
        try:
            start = parse_segment_name(name, entry.name, 1).segment_id  # interval 1: the start itself
        except KStateError:
            continue  # not a segment: the segment manager decides what a stray entry means
        if start >= 0 and entry.is_dir():
            segments.append((start, {DEFAULT_CF: _sample(entry, name)}))
    interval = _segment_interval(family, options)
    found, evidence = detect_segmented_family(segments, interval)
    if found is not None and found is not family:
        raise WrongStoreTypeError(name, store_type, f"{found.value} segments", evidence)


def _segment_interval(family: Family, options: Mapping[str, Any]) -> int | None:
    """The interval the store will file segments by: given, or its family's default from the retention."""
    given = options.get("segment_interval_ms")
    if isinstance(given, int) and given > 0:
        return given
    retention = options.get("retention_ms")
    if not isinstance(retention, int) or retention < 0:
        return None
    # The family's key schema knows its default; a family without one is refused (UnknownFamilyError).
    return key_schemas.plain_schema(family).default_segment_interval(retention)
