"""The legacy offset files on disk: ``.checkpoint`` and ``<store>.position`` (spec/offsets.md, OFF-13 to OFF-20).

Writing follows ``OffsetCheckpoint.write``: an empty map deletes the file; otherwise the bytes go to
``<file>.tmp``, are fsynced, and the temporary file is atomically moved over the target (then the
directory is fsynced so the rename survives a crash). Reading a missing file gives an empty map.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from kstate.codecs.layout import CHECKPOINT_FILE, position_file_name
from kstate.codecs.offsets import (
    TopicPartition,
    downgrade_checkpoint_offsets,
    position_from_checkpoint,
    position_to_checkpoint,
    read_checkpoint_text,
    write_checkpoint_text,
)
from kstate.codecs.position import Position, PositionInput

TMP_SUFFIX = ".tmp"

CheckpointInput = Iterable[tuple[str, int, int | None]] | Mapping[TopicPartition, int]


def _fsync_directory(directory: Path) -> None:
    # Not every platform lets a directory be opened for fsync; the rename is still atomic there.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def write_checkpoint_file(path: str | Path, entries: CheckpointInput) -> bool:
    """Write an ``OffsetCheckpoint`` file; an empty map deletes it. Returns whether a file now exists (OFF-13, OFF-15).

    The bytes are computed (and an invalid offset refused) before anything is created, so a refused
    write leaves no temporary file and an existing checkpoint untouched.
    """
    target = Path(path)
    data = write_checkpoint_text(entries)
    if data is None:
        target.unlink(missing_ok=True)
        return False
    temp = target.with_name(target.name + TMP_SUFFIX)
    with open(temp, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temp, target)
    _fsync_directory(target.parent)
    return True


def legacy_file_exists(path: str | Path) -> bool:
    """Java's ``File.exists``: a name too long for the file system names no file (a 249-character store
    name plus ``.position`` is over most systems' 255), it is not an error (KV-26)."""
    try:
        return Path(path).exists()
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            return False
        raise


def read_checkpoint_file(path: str | Path, *, unknown_as_none: bool = False) -> dict[TopicPartition, int | None]:
    """``OffsetCheckpoint.read``: a missing file is an empty map (OFF-16)."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            return {}
        raise
    return read_checkpoint_text(data, unknown_as_none=unknown_as_none)


def delete_checkpoint_file(path: str | Path) -> None:
    """``OffsetCheckpoint.delete``: remove the file if it exists (OFF-19)."""
    Path(path).unlink(missing_ok=True)


def task_checkpoint_path(task_dir: str | Path) -> Path:
    """``<taskDir>/.checkpoint`` (LAY-4)."""
    return Path(task_dir) / CHECKPOINT_FILE


def position_file_path(task_dir: str | Path, store_name: str) -> Path:
    """``<taskDir>/<store>.position`` (LAY-4)."""
    return Path(task_dir) / position_file_name(store_name)


def write_position_file(task_dir: str | Path, store_name: str, position: PositionInput) -> bool:
    """``StoreQueryUtils.checkpointPosition``: a Position as a checkpoint file; empty deletes it (OFF-18)."""
    return write_checkpoint_file(position_file_path(task_dir, store_name), position_to_checkpoint(position))


def read_position_file(task_dir: str | Path, store_name: str) -> Position:
    """``StoreQueryUtils.readPositionFromCheckpoint``: the file as a Position; missing is empty (OFF-18)."""
    return position_from_checkpoint(read_checkpoint_file(position_file_path(task_dir, store_name)))


def write_downgrade_checkpoint(task_dir: str | Path, committed: Mapping[TopicPartition, int | None]) -> bool:
    """``maybeDowngradeOffsets``: the consolidated per-task ``.checkpoint``, null offsets as -4 (OFF-20)."""
    return write_checkpoint_file(task_checkpoint_path(task_dir), downgrade_checkpoint_offsets(committed))


#: RocksDB's own info log: ``LOG`` and its rotations ``LOG.old.<micros>``. Not part of a store (KV-23): RocksDB writes
#: and rotates it when it starts an open, so Kafka's refused opens leave it behind.
_ROCKSDB_INFO_LOG = re.compile(r"LOG(\.old\.\d+)?")


def is_rocksdb_info_log(relative_path: str) -> bool:
    """Whether the path names a RocksDB info log file (KV-23: a refused open MAY write or rotate it)."""
    return _ROCKSDB_INFO_LOG.fullmatch(Path(relative_path).name) is not None


def store_digest(root: Path) -> dict[str, str]:
    """:func:`directory_digest` without RocksDB's info log files: what a refused open MUST leave as it was (KV-23)."""
    return {path: digest for path, digest in directory_digest(root).items() if not is_rocksdb_info_log(path)}


def directory_digest(root: Path) -> dict[str, str]:
    """Every path under ``root``: a file's SHA-256, ``dir``, or a link's target; equal digests, nothing changed (KV-23)."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for entry in dirnames + filenames:
            path = Path(dirpath) / entry
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = "link:" + os.readlink(path)
            elif path.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out
