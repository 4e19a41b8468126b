"""Read a store's RocksDB without opening it for writing: every column family, the offsets, the logical view.

Opening a store through :mod:`kstate.stores.factory` writes its status (OFF-6) and may migrate or drop
families, so a crashed or running instance's directory is read here in RocksDB's read-only mode instead.
The logical view is what the store's iterators return: the data family, plus in upgrade mode every legacy
entry converted, the new family winning on equal keys (KV-30, KV-31, KV-35). A segmented store (window,
session) is one such database per segment, ``<task>/<store>/<store>.<segment start>`` (LAY-3), each upgrading
its own families: :func:`dump_segmented_store` reads every segment. A versioned store is one database whose
segments are key prefixes: :meth:`StoreDump.logical_segments` splits them.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kstate.codecs.layout import column_family_plan
from kstate.codecs.offsets import OFFSETS_COLUMN_FAMILY, POSITION_KEY, STATUS_KEY, STATUS_OPEN, decode_offset_value
from kstate.codecs.primitives import read_int64
from kstate.codecs.store_types import DEFAULT_CF, STORE_TYPES, StoreType
from kstate.stores.column_families import CONVERTERS
from kstate.stores.engine import list_column_families, rocksdb_options
from kstate.stores.factory import store_directory

ColumnFamilies = dict[str, dict[bytes, bytes]]


@dataclass(frozen=True)
class StoreDump:
    """Every column family of one store directory, key -> value bytes, and its ``offsets`` entries decoded."""

    path: Path
    column_families: ColumnFamilies

    @property
    def offsets(self) -> dict[bytes, bytes]:
        return self.column_families.get(OFFSETS_COLUMN_FAMILY, {})

    @property
    def status_open(self) -> bool | None:
        """True if the store was left OPEN (unclean shutdown, KV-52), False if CLOSED, None if never opened."""
        status = self.offsets.get(STATUS_KEY)
        return None if status is None else decode_offset_value(status) == STATUS_OPEN

    def committed_offset(self, topic: str, partition: int) -> int | None:
        value = self.offsets.get(f"{topic}-{partition}".encode())
        return None if value is None else decode_offset_value(value)

    def data_families(self) -> ColumnFamilies:
        """Every family but ``offsets``; empty families are left out, as they hold no data to compare."""
        return {cf: entries for cf, entries in self.column_families.items()
                if cf != OFFSETS_COLUMN_FAMILY and entries}

    def logical_view(self, store_type: StoreType) -> dict[bytes, bytes]:
        """What ``all()`` of a ``store_type`` store over this directory returns, without migrating anything."""
        return logical_view(store_type, self.column_families)

    def offsets_without_position(self) -> dict[bytes, bytes]:
        return {k: v for k, v in self.offsets.items() if k != POSITION_KEY}

    def logical_segments(self) -> dict[int, dict[bytes, bytes]]:
        """A versioned store's logical segments: its ``default`` rows by their 8-byte segment-id prefix, the key
        without it; segment -1 holds the latest values (VER-1, VER-2)."""
        segments: dict[int, dict[bytes, bytes]] = {}
        for physical_key, value in self.column_families.get(DEFAULT_CF, {}).items():
            segment, _ = read_int64(physical_key, 0, "versioned segment key")
            segments.setdefault(segment, {})[physical_key[8:]] = value
        return dict(sorted(segments.items()))


def dump_store_dir(path: str | Path) -> StoreDump:
    """Every column family of the RocksDB at ``path``, read in RocksDB's read-only mode (no LOCK taken)."""
    import rocksdict

    path = Path(path)
    families = list_column_families(path)
    if not families:
        return StoreDump(path, {})
    db: Any = rocksdict.Rdict(str(path), rocksdb_options(), column_families={cf: rocksdb_options() for cf in families},
                              access_type=rocksdict.AccessType.read_only())
    out: ColumnFamilies = {}
    try:
        for cf in families:
            handle = db.get_column_family(cf)
            out[cf] = {bytes(k): bytes(v) for k, v in handle.items()}
            handle.close()
            del handle
    finally:
        db.close()
        del db
        gc.collect()
    return StoreDump(path, out)


def dump_store(state_dir: str | Path, application_id: str, task_id: str, store_name: str,
               store_type: StoreType = StoreType.KEY_VALUE) -> StoreDump:
    """The one database of a key-value or versioned store (``<task>/rocksdb/<store>``, LAY-2)."""
    if not STORE_TYPES[StoreType(store_type)].single_database:
        raise ValueError(f"a {StoreType(store_type).value} store is segmented: use dump_segmented_store")
    return dump_store_dir(store_directory(state_dir, application_id, task_id, store_name, store_type))


@dataclass(frozen=True)
class SegmentedStoreDump:
    """Every segment database of a segmented store, by segment name, oldest first (LAY-3)."""

    path: Path
    segments: dict[str, StoreDump]

    def data_families(self) -> dict[str, ColumnFamilies]:
        """Per segment, every non-empty family but ``offsets``; segments without data are left out."""
        out = {name: dump.data_families() for name, dump in self.segments.items()}
        return {name: families for name, families in out.items() if families}

    @property
    def status_open(self) -> bool | None:
        """True if any segment was left OPEN (KV-52), False if every segment is CLOSED, None if none was opened."""
        statuses = [d.status_open for d in self.segments.values() if d.status_open is not None]
        return None if not statuses else any(statuses)

    def committed_offset(self, topic: str, partition: int) -> int | None:
        """The smallest offset a segment committed (a clean commit gives every segment the same one; the stores
        answer the newest segment's, WS-28, or the smallest, SS-23)."""
        found = [o for o in (d.committed_offset(topic, partition) for d in self.segments.values()) if o is not None]
        return min(found) if found else None

    def segment_views(self, store_type: StoreType) -> dict[str, dict[bytes, bytes]]:
        """Each segment's logical view as ``store_type`` reads it, without migrating anything (KV-31)."""
        return {name: dump.logical_view(store_type) for name, dump in self.segments.items()}

    def logical_view(self, store_type: StoreType) -> dict[bytes, bytes]:
        """Every segment's rows together: a store key is in one segment only (its time picks it)."""
        view: dict[bytes, bytes] = {}
        for rows in self.segment_views(store_type).values():
            view.update(rows)
        return view


def _segment_start(name: str) -> tuple[int, str]:
    start = name.rpartition(".")[2]
    return (int(start), name) if start.isdigit() else (-1, name)


def dump_segmented_dir(path: str | Path) -> SegmentedStoreDump:
    """Every segment database under a segmented store's directory, read-only (no LOCK taken)."""
    path = Path(path)
    children = sorted((c.name for c in path.iterdir() if c.is_dir()), key=_segment_start) if path.is_dir() else []
    segments = {name: dump_store_dir(path / name) for name in children}
    return SegmentedStoreDump(path, {name: dump for name, dump in segments.items() if dump.column_families})


def dump_segmented_store(state_dir: str | Path, application_id: str, task_id: str, store_name: str,
                         store_type: StoreType) -> SegmentedStoreDump:
    """A window or session store's segments (``<task>/<store>/<store>.<segment start>``, LAY-3)."""
    if STORE_TYPES[StoreType(store_type)].single_database:
        raise ValueError(f"a {StoreType(store_type).value} store is one database: use dump_store")
    return dump_segmented_dir(store_directory(state_dir, application_id, task_id, store_name, store_type))


def logical_view(store_type: StoreType, column_families: ColumnFamilies) -> dict[bytes, bytes]:
    """The data family, plus each legacy entry converted when the store would open in upgrade mode (KV-31, KV-35).

    Raises :class:`kstate.codecs.layout.LayoutError` for a directory the store type refuses (UPG-1, UPG-7).
    """
    existing = {cf: bool(entries) for cf, entries in column_families.items()}
    plan = column_family_plan(StoreType(store_type), existing)
    view = dict(column_families.get(plan.data_cf, {}))
    if plan.legacy_cf is not None and plan.conversion is not None:
        convert = CONVERTERS[plan.conversion]
        for key, value in column_families.get(plan.legacy_cf, {}).items():
            if key not in view:
                view[key] = convert(value)
    return view
