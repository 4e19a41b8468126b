"""Mutants of rules at the places the suite reached last (issue 32, section E): a rule kept by the pure operation and
by the easy store paths, broken only after a crash, a restore, a reopen or on one family's store.

Each replaces ``store.open`` only, building the reference's store classes with one realistic bug in front; the tests
that kill them are ``tests/test_store_rules_hard_places.py``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from kstate.codecs.store_types import BUILT_KV_TYPES, SESSION_TYPES, WINDOW_TYPES, StoreType
from kstate.ops.store_ops import DEFAULT_BUILDER, StoreBuilder, make_open_handler
from kstate.storage_files import position_file_path, read_position_file
from kstate.stores.api import Backend
from kstate.stores.factory import open_bytes_store, task_directory
from kstate.stores.families import store_classes
from kstate.stores.surface import RocksDBOptions
from kstate_conformance.adapter import Handler
from kstate_conformance.mutants import mutant

FAMILY = "store_rules"
SEGMENTED_TYPES = frozenset(WINDOW_TYPES) | frozenset(SESSION_TYPES)


def _open_with(builder: StoreBuilder) -> dict[str, Handler]:
    return {"store.open": make_open_handler(builder)}


def _rocksdb_with(mixin: type, types: frozenset[StoreType]) -> dict[str, Handler]:
    """``store.open`` whose RocksDB stores of ``types`` have ``mixin`` in front of their class; every other store
    is the reference's."""

    def open_store(store_type: StoreType, backend: Backend, *, name: str, state_dir: str | Path | None = None,
                   application_id: str = "app", task_id: str = "0_0", ignore_invalid_state: bool = False,
                   options: dict[str, Any] | None = None, **rest: Any) -> Any:
        store_type, backend = StoreType(store_type), Backend(backend)
        if store_type not in types or backend is not Backend.ROCKSDB:
            return open_bytes_store(store_type, backend, name=name, state_dir=state_dir, application_id=application_id,
                                    task_id=task_id, ignore_invalid_state=ignore_invalid_state, options=options, **rest)
        classes = store_classes(store_type)
        family_options = classes.check_options(options or {}) if options else {}
        task_dir = task_directory(state_dir or tempfile.mkdtemp(prefix="kstate-"), application_id, task_id)
        cls = type(f"{mixin.__name__}{classes.rocksdb.__name__}", (mixin, classes.rocksdb), {})
        return cls(name, task_dir, options=RocksDBOptions(ignore_invalid_state=ignore_invalid_state, **rest),
                   **family_options)

    return _open_with(replace(DEFAULT_BUILDER, open_bytes_store=open_store))


# --- OFF-22: the position file merged into a stored position --------------------------------------------------------


class _PositionFileReplacesStored:
    """The ``<store>.position`` file's position takes the stored position's place instead of merging into it: right
    for a store migrating into an empty position (the easy place), wrong for one that already committed one."""

    def __init__(self, name: str, task_dir: Any = None, **kwargs: Any) -> None:
        file_position = None
        if task_dir is not None and position_file_path(task_dir, name).is_file():
            file_position = read_position_file(task_dir, name)
        super().__init__(name, task_dir, **kwargs)  # type: ignore[call-arg]
        instance = self._instance  # type: ignore[attr-defined]
        if file_position is not None and instance.offsets is not None:
            self._position = file_position
            instance.position = file_position
            instance.staged.apply(instance.offsets.position_batch(file_position))


@mutant("position-file-replaces-stored", "a <store>.position file migrated at open replaces the stored position "
        "instead of merging into it", FAMILY, rules=("OFF-22",))
def _position_file_replaces_stored() -> dict[str, Handler]:
    return _rocksdb_with(_PositionFileReplacesStored, frozenset(BUILT_KV_TYPES))


# --- WS-29, SS-21: flush, then a crash ----------------------------------------------------------------------------


class _FlushWithoutPosition:
    """``flush`` writes every segment's staged rows but not the store's position: after a crash the rows are there
    and the position that answers for them is the last commit's."""

    segments: Any
    _check_open: Callable[[], None]

    def flush(self) -> None:
        self._check_open()
        for segment in self.segments.all_segments():
            segment.instance.staged.apply()


@mutant("segmented-flush-without-position", "a window or session flush writes the staged rows without the position",
        FAMILY, rules=("WS-29", "SS-21"))
def _segmented_flush_without_position() -> dict[str, Handler]:
    return _rocksdb_with(_FlushWithoutPosition, SEGMENTED_TYPES)
