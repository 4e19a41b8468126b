"""One entry point that opens a store of any built type on either backend (KV-1, LAY-*).

``open_bytes_store(StoreType.TIMESTAMPED_KV, Backend.ROCKSDB, name="counts", state_dir=tmp)`` opens (or creates)
``<state_dir>/<application_id>/<task_id>/rocksdb/counts`` exactly where Kafka Streams keeps it (a segmented
store: ``<task_id>/<name>``, LAY-2, LAY-3); an in-memory store ignores the directory arguments. A key-value
type answers a :class:`kstate.stores.api.KeyValueBytesStore` whose values are in the store type's byte layout
(plain value, ``[ts][value]``, or ``[varint hsize][headers][ts][value]``); wrap it in :mod:`kstate.stores.typed`
for decoded values. The other families answer their own bytes-store protocols.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar, cast

from kstate.codecs.layout import FILE_NAME_MAX, WIPING_SUFFIX, name_problem, store_dir, task_id_problem
from kstate.codecs.store_types import BUILT_TYPES, STORE_TYPES, Family, StoreType
from kstate.errors import InvalidArgumentError, KStateError
from kstate.storage_files import delete_state_file
from kstate.stores.api import Backend, KeyValueBytesStore, StateStore, TopicPartition
from kstate.stores.engine import check_directory
from kstate.stores.type_check import check_store_type_on_disk

E = TypeVar("E", StoreType, Backend)


def validate_task_location(application_id: object, task_id: object) -> tuple[str, str]:
    """The application id and task id of a task directory, each one path component as Kafka names them:
    anything else is an :class:`InvalidArgumentError` naming the argument, before any path is used (LAY-11)."""
    if not isinstance(application_id, str):
        raise InvalidArgumentError("application_id", f"an application id is a str, got {type(application_id).__name__}")
    problem = name_problem(application_id)
    if problem is not None:
        raise InvalidArgumentError("application_id", f"not a directory name Kafka's naming rule allows: {problem}")
    if not isinstance(task_id, str):
        raise InvalidArgumentError("task_id", f"a task id is a str, got {type(task_id).__name__}")
    problem = task_id_problem(task_id)
    if problem is not None:
        raise InvalidArgumentError("task_id", problem)
    return application_id, task_id


def task_directory(state_dir: str | Path, application_id: str, task_id: str) -> Path:
    """``<state.dir>/<application.id>/<subtopology>_<partition>`` (KV-20), never outside ``state_dir`` (LAY-11)."""
    validate_task_location(application_id, task_id)
    return Path(state_dir) / application_id / task_id


def store_directory(state_dir: str | Path, application_id: str, task_id: str, name: str,
                    store_type: StoreType = StoreType.KEY_VALUE) -> Path:
    """``<task dir>/rocksdb/<store name>`` for a one-database store (KV-20), ``<task dir>/<store name>`` (its
    segments' parent) for a segmented one (LAY-3)."""
    return task_directory(state_dir, application_id, task_id) / store_dir(StoreType(store_type), name)


def open_bytes_store(
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
    options: Mapping[str, Any] | None = None,
) -> StateStore:
    """Open a store of ``store_type`` on ``backend``; ``options`` are the family's own (retention, segment
    interval, ...: the names its :class:`kstate.stores.families.StoreClasses` accepts), passed to its classes.

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
    from kstate.stores.surface import RocksDBOptions, validate_store_name

    classes = store_classes(store_type)
    validate_store_name(name)
    # On every backend, as the store name (KV-26): the location is refused before any directory is made (LAY-11).
    validate_task_location(application_id, task_id)
    family_options = classes.check_options(options or {})
    if backend is Backend.MEMORY:
        return cast(StateStore, classes.memory(name, **family_options))
    if state_dir is None:
        state_dir = tempfile.mkdtemp(prefix="kstate-")
    task_dir = task_directory(state_dir, application_id, task_id)
    check_store_path(state_dir, task_dir / store_dir(store_type, name), name)
    check_store_type_on_disk(store_type, task_dir, name, family_options)  # LAY-14: before anything is written
    return cast(StateStore, classes.rocksdb(
        name,
        task_dir,
        options=RocksDBOptions(ignore_invalid_state, migrate_legacy_files, manage_offsets,
                               None if changelog_partitions is None else tuple(changelog_partitions)),
        **family_options,
    ))


def check_store_path(state_dir: str | Path, directory: Path, store: str) -> None:
    """Refuse a store whose path below ``state_dir`` passes through a link or a file (the application, task,
    ``rocksdb``, store or segments directory), before anything is read or written: a link in the middle of the path
    would take the store's every read and write out of the state directory (LAY-15). ``state_dir`` itself is the
    operator's and may be a link."""
    root = Path(state_dir)
    parts = directory.relative_to(root).parts
    last = "store directory" if len(parts) == 4 else "segments directory"
    what = ("application directory", "task directory", "rocksdb directory" if len(parts) == 4 else last, last)
    for depth in range(1, len(parts) + 1):
        check_directory(root.joinpath(*parts[:depth]), store, what[depth - 1])


def open_kv_store(store_type: StoreType, backend: Backend, **kwargs: Any) -> KeyValueBytesStore:
    """:func:`open_bytes_store` for a key-value store type, typed as the key-value bytes store it answers (KV-1)."""
    from kstate.stores.families import store_classes

    store_type = _enum(StoreType, store_type, "store_type", BUILT_TYPES)
    store_classes(store_type)  # a type not built is refused by name first
    if STORE_TYPES[store_type].family is not Family.KEY_VALUE:
        raise InvalidArgumentError("store_type", f"{store_type.value} is not a key-value store type")
    return cast(KeyValueBytesStore, open_bytes_store(store_type, backend, **kwargs))


def _enum(cls: type[E], value: object, argument: str, offered: tuple[E, ...]) -> E:
    """``cls(value)``, refused with a typed error naming ``argument`` and the ``offered`` values."""
    try:
        return cls(value)
    except (ValueError, TypeError):
        accepted = ", ".join(repr(member.value) for member in offered)
        raise InvalidArgumentError(argument, f"unknown {cls.__name__} {value!r:.80}; expected one of {accepted}") from None


def wipe_store(state_dir: str | Path, *, name: str, application_id: str = "app", task_id: str = "0_0",
               store_type: StoreType = StoreType.KEY_VALUE) -> None:
    """Delete a RocksDB store's directory (a segmented store's: all its segments) and its ``<store>.position``
    file: the wipe before a rebuild from the changelog that Kafka does after a refused open (UPG-3). The store
    must be closed."""
    from kstate.stores.surface import validate_store_name

    # A name, application id or task id Kafka would not write could point the delete outside the task
    # directory: each is refused before anything is deleted (KV-26, LAY-11).
    validate_store_name(name)
    validate_task_location(application_id, task_id)
    directory = store_directory(state_dir, application_id, task_id, name, store_type)
    # A delete killed half-way would leave a directory the next open refuses (KV-24: files but no CURRENT, or a
    # CURRENT naming a deleted MANIFEST). The store is first renamed away in one step, so a crash leaves either
    # the whole store or none of it, and the leftover of an interrupted wipe goes with the next wipe.
    # A leftover of any kind (a FIFO, a file, a link, a dangling link) is removed without being opened or followed,
    # so it neither blocks the wipe nor fails every later one (UPG-3, LAY-15).
    trash = wiping_directory(directory)
    try:
        _remove_without_following(trash)
        with contextlib.suppress(FileNotFoundError):  # no store to wipe
            directory.rename(trash)
        _remove_without_following(trash)
        delete_state_file(task_directory(state_dir, application_id, task_id) / f"{name}.position")
    except (OSError, KStateError) as exc:
        from kstate.stores.engine import storage_error

        raise storage_error(name, f"wiping the store directory {directory}", exc) from exc


def _remove_without_following(path: Path) -> None:
    """Delete ``path``: a real directory with everything in it, anything else (a link too) as one entry; never a
    link's target (``shutil.rmtree`` does not follow links inside a tree)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def wiping_directory(directory: Path) -> Path:
    """Where :func:`wipe_store` moves ``directory`` before deleting it: a sibling no store can be named (``~`` is
    in no store name), cut so the name stays within the file system's NAME_MAX for a 249-character store name."""
    return directory.with_name(directory.name[: FILE_NAME_MAX - len(WIPING_SUFFIX)] + WIPING_SUFFIX)

