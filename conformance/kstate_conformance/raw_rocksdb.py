"""A store's RocksDB directory read and written with plain rocksdict in raw mode, as another program would: how
tests look past the implementation at what it wrote, or damage it (KV-20, KV-21, KV-57).

Every function opens the database with all its column families and closes it before it returns; the last reference
dropped releases RocksDB's lock (garbage still holding one is collected by the next open that finds the lock held).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def raw_database(path: Path) -> Iterator[Any]:
    """The database at ``path``, every column family open in raw mode; closed afterwards."""
    import rocksdict

    families = rocksdict.Rdict.list_cf(str(path))

    def open_database() -> Any:
        return rocksdict.Rdict(str(path), rocksdict.Options(raw_mode=True),
                               column_families={cf: rocksdict.Options(raw_mode=True) for cf in families})

    try:
        db = open_database()
    except Exception as exc:
        if "lock hold by current process" not in str(exc):
            raise
        # A database closed here is still referred to by garbage: collect it (its LOCK goes with it) and try once
        # more. Collecting here, not at every close, keeps a close cheap in the suite's large heap (issue 35), as
        # the stores' engine does (runtime-notes §4).
        gc.collect()
        db = open_database()
    try:
        yield db
    finally:
        db.close()
        del db


def column_family_rows(path: Path) -> dict[str, list[tuple[bytes, bytes]]]:
    """Every column family's rows in key order."""
    import rocksdict

    out = {}
    families = rocksdict.Rdict.list_cf(str(path))
    with raw_database(path) as db:
        for cf in families:
            handle = db.get_column_family(cf)
            out[cf] = list(handle.items())
            handle.close()
            del handle
    return out


def column_family_maps(path: Path) -> dict[str, dict[bytes, bytes]]:
    """Every column family's rows as a map."""
    return {cf: dict(rows) for cf, rows in column_family_rows(path).items()}


def put_rows(path: Path, writes: Mapping[str, Mapping[bytes, bytes]]) -> None:
    """Write the rows of ``writes`` into their column families, creating the families the database lacks."""
    import rocksdict

    existing = rocksdict.Rdict.list_cf(str(path))
    with raw_database(path) as db:
        for cf, entries in writes.items():
            handle = db.get_column_family(cf) if cf in existing else db.create_column_family(cf, rocksdict.Options(raw_mode=True))
            for key, value in entries.items():
                handle[key] = value
            handle.close()
            del handle


def drop_column_family(path: Path, cf: str) -> None:
    """Drop the column family ``cf`` and its rows."""
    with raw_database(path) as db:
        db.drop_column_family(cf)


def flush(path: Path) -> None:
    """Flush the memtables into table files."""
    with raw_database(path) as db:
        db.flush()


def lose_current(path: Path) -> None:
    """Damage: the database's ``CURRENT`` file removed, its table files and ``MANIFEST`` left (KV-24)."""
    (path / "CURRENT").unlink()


def truncate_manifest(path: Path) -> None:
    """Damage: the ``MANIFEST`` that ``CURRENT`` names cut to its first 30 bytes (KV-24)."""
    manifest = path / (path / "CURRENT").read_text().strip()
    manifest.write_bytes(manifest.read_bytes()[:30])
