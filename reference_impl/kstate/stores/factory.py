"""One entry point that opens any key-value store of the family on either backend (KV-1, LAY-*).

``open_kv_store(StoreType.TIMESTAMPED_KV, Backend.ROCKSDB, name="counts", state_dir=tmp)`` opens (or creates)
``<state_dir>/<application_id>/<task_id>/rocksdb/counts`` exactly where Kafka Streams keeps it; an in-memory
store ignores the directory arguments. The returned object implements
:class:`kstate.stores.api.KeyValueBytesStore`: values are in the store type's byte layout (plain value,
``[ts][value]``, or ``[varint hsize][headers][ts][value]``). Wrap it in :mod:`kstate.stores.typed` for
decoded values.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TypeVar

from kstate.codecs.layout import ROCKSDB_DIR
from kstate.codecs.store_types import BUILT_TYPES, StoreType
from kstate.errors import InvalidArgumentError
from kstate.stores.api import Backend, KeyValueBytesStore, TopicPartition

E = TypeVar("E", StoreType, Backend)


def task_directory(state_dir: str | Path, application_id: str, task_id: str) -> Path:
    """``<state.dir>/<application.id>/<subtopology>_<partition>`` (KV-20)."""
    return Path(state_dir) / application_id / task_id


def store_directory(state_dir: str | Path, application_id: str, task_id: str, name: str) -> Path:
    """``<task dir>/rocksdb/<store name>``: the RocksDB directory of a key-value store (KV-20)."""
    return task_directory(state_dir, application_id, task_id) / ROCKSDB_DIR / name


def open_kv_store(
    store_type: StoreType,
    backend: Backend,
    *,
    name: str,
    state_dir: str | Path | None = None,
    application_id: str = "app",
    task_id: str = "0_0",
    ignore_invalid_state: bool = False,
    migrate_legacy_files: bool = True,
    manage_offsets: bool = True,
    changelog_partitions: Iterable[TopicPartition] | None = None,
) -> KeyValueBytesStore:
    """Open a store of ``store_type`` on ``backend``.

    RocksDB: ``state_dir`` None means a fresh temporary directory. Opening runs Kafka's open logic: the
    column-family mode decision (KV-30, KV-40), the downgrade check (UPG-1), the unclean-shutdown check
    unless ``ignore_invalid_state`` (OFF-* via KV-50), and, when ``migrate_legacy_files``, the import of a
    task's ``.checkpoint`` / ``<store>.position`` files on first open (KV-55). ``manage_offsets=False``
    opens the store as a pre-4.3 Kafka would (no ``offsets`` family; UPG-2). ``changelog_partitions``
    defaults to ``<application_id>-<name>-changelog`` with the task's partition. Raises
    :class:`kstate.stores.api.ProcessorStateError` when the directory cannot be opened as asked, and
    :class:`kstate.stores.families.StoreTypeNotBuiltError` for a store type the reference has no store of yet.
    """
    store_type = _enum(StoreType, store_type, "store_type", BUILT_TYPES)
    backend = _enum(Backend, backend, "backend", tuple(Backend))
    from kstate.stores.families import store_classes
    from kstate.stores.kv import validate_store_name

    classes = store_classes(store_type)
    validate_store_name(name)
    if backend is Backend.MEMORY:
        return classes.memory(name)
    if state_dir is None:
        state_dir = tempfile.mkdtemp(prefix="kstate-")
    task_dir = task_directory(state_dir, application_id, task_id)
    return classes.rocksdb(
        name,
        task_dir,
        ignore_invalid_state=ignore_invalid_state,
        migrate_legacy_files=migrate_legacy_files,
        manage_offsets=manage_offsets,
        changelog_partitions=changelog_partitions,
    )


def _enum(cls: type[E], value: object, argument: str, offered: tuple[E, ...]) -> E:
    """``cls(value)``, refused with a typed error naming ``argument`` and the ``offered`` values."""
    try:
        return cls(value)
    except (ValueError, TypeError):
        accepted = ", ".join(repr(member.value) for member in offered)
        raise InvalidArgumentError(argument, f"unknown {cls.__name__} {value!r:.80}; expected one of {accepted}") from None


def wipe_kv_store(state_dir: str | Path, *, name: str, application_id: str = "app", task_id: str = "0_0") -> None:
    """Delete a RocksDB store's directory and its ``<store>.position`` file: the wipe before a rebuild from
    the changelog that Kafka does after a refused open (UPG-3). The store must be closed."""
    from kstate.stores.kv import validate_store_name

    # A name that is not a store name (KV-26) could point the delete outside the task directory.
    validate_store_name(name)
    shutil.rmtree(store_directory(state_dir, application_id, task_id, name), ignore_errors=True)
    (task_directory(state_dir, application_id, task_id) / f"{name}.position").unlink(missing_ok=True)

