"""The kit's one way to read and to write a file of the state directory (LAY-15), and the legacy offset files
on disk built on it: ``.checkpoint`` and ``<store>.position`` (spec/offsets.md, OFF-13 to OFF-20).

The state directory is untrusted input. :func:`write_state_file` writes a temporary file created in the target's
directory under a random name with ``O_CREAT | O_EXCL | O_NOFOLLOW`` (a planted link or file is never opened),
fsyncs it, renames it over the target and fsyncs the directory: ``OffsetCheckpoint.write``'s steps, without its
fixed ``<file>.tmp`` name. :func:`read_state_file` reads a file only when ``lstat`` says it is a regular file,
opened with ``O_NOFOLLOW | O_NONBLOCK`` (a FIFO swapped in never blocks) and read up to a size cap. Neither
follows a symbolic link: a link, a FIFO, a device or a directory where a file belongs is a
:class:`kstate.errors.StateFileError` naming the file, as is a name longer than the file system's ``NAME_MAX``.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import secrets
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

from kstate.codecs.layout import CHECKPOINT_FILE, FILE_NAME_MAX, position_file_name
from kstate.codecs.offsets import (
    TopicPartition,
    downgrade_checkpoint_offsets,
    position_from_checkpoint,
    position_to_checkpoint,
    read_checkpoint_text,
    write_checkpoint_text,
)
from kstate.codecs.position import Position, PositionInput
from kstate.errors import StateFileError, StateFileTooLargeError

TMP_SUFFIX = ".tmp"

#: The longest file name, in bytes, the kit creates or reads in the state directory: ``NAME_MAX`` of Linux's
#: file systems (and of macOS's), so a name no file system can hold is refused typed, not as an OSError (LAY-11).
NAME_MAX = FILE_NAME_MAX

#: The size cap of a legacy offset file (``.checkpoint``, ``<store>.position``) and of a segment list: 16 MiB is
#: tens of thousands of partitions' lines (a line is at most ~280 bytes), and far from exhausting memory (LAY-15).
STATE_FILE_CAP = 16 << 20

#: The random part of a temporary file's name: ``<target name>.<16 hex digits>.tmp`` (LAY-15).
_TEMP_NAME = re.compile(r"\.[0-9a-f]{16}\.tmp\Z")

CheckpointInput = Iterable[tuple[str, int, int | None]] | Mapping[TopicPartition, int]


def is_temporary_name(name: str) -> bool:
    """Whether ``name`` is a temporary file :func:`write_state_file` makes (a crash may leave one behind)."""
    return bool(_TEMP_NAME.search(name))


def describe_kind(path: str | Path, mode: int) -> str:
    """What a path that is not a regular file is, in words, from its ``lstat`` mode (a link names its target)."""
    if stat.S_ISLNK(mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        return f"not a regular file: a symbolic link (to {target!r:.200}), which the kit never follows"
    if stat.S_ISDIR(mode):
        return "not a regular file: a directory"
    if stat.S_ISFIFO(mode):
        return "not a regular file: a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "not a regular file: a device"
    if stat.S_ISSOCK(mode):
        return "not a regular file: a socket"
    return "not a regular file"


def _os_error(path: Path, doing: str, exc: OSError) -> StateFileError:
    if exc.errno == errno.ENAMETOOLONG:
        return StateFileError(path, f"{doing}: the name is longer than the file system allows (NAME_MAX)", exc.errno)
    return StateFileError(path, f"{doing}: {exc.strerror or exc}", exc.errno)


def check_name_length(path: str | Path) -> None:
    """Refuse a path whose last component is over :data:`NAME_MAX` bytes, before anything is created (LAY-11)."""
    name = Path(path).name
    if len(os.fsencode(name)) > NAME_MAX:
        raise StateFileError(path, f"the name is {len(os.fsencode(name))} bytes long, over the file system's "
                                   f"NAME_MAX of {NAME_MAX}", errno.ENAMETOOLONG)


def _lstat_absent_as_none(path: str | Path) -> os.stat_result | None:
    """``os.lstat(path)``, or None where no file can stand at ``path``: absent, a name too long for the file system,
    or a parent that is not a directory (LAY-15, KV-26); any other failure is a :class:`StateFileError`."""
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ENAMETOOLONG, errno.ENOTDIR):
            return None
        raise _os_error(Path(path), "inspecting", exc) from exc


def state_file_kind(path: str | Path) -> str | None:
    """None when ``path`` is a regular file or absent; else what it is instead (never follows a link, LAY-15)."""
    found = _lstat_absent_as_none(path)
    if found is None:
        return None
    return None if stat.S_ISREG(found.st_mode) else describe_kind(path, found.st_mode)


def read_state_file(path: str | Path, *, cap: int = STATE_FILE_CAP) -> bytes | None:
    """The bytes of the regular file ``path``, None when there is none; never follows a link, never blocks on a
    FIFO, never reads more than ``cap`` bytes (LAY-15).

    A link, a FIFO, a device or a directory is a :class:`StateFileError`, a file over ``cap`` bytes a
    :class:`StateFileTooLargeError`; both name the file. A name too long for the file system names no file
    (Java's ``File.exists`` is false for it, KV-26).
    """
    path = Path(path)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            return None
        raise _os_error(path, "inspecting", exc) from exc
    if not stat.S_ISREG(mode):
        raise StateFileError(path, describe_kind(path, mode))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # replaced by a link between the lstat and the open
            raise StateFileError(path, "a symbolic link, which the kit never follows", exc.errno) from exc
        raise _os_error(path, "opening", exc) from exc
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):  # replaced by a FIFO or a device between the lstat and the open
            raise StateFileError(path, describe_kind(path, status.st_mode))
        if status.st_size > cap:
            raise StateFileTooLargeError(path, status.st_size, cap)
        chunks: list[bytes] = []
        size = 0
        while size <= cap:  # the file may grow while it is read: never read past the cap
            chunk = os.read(fd, min(1 << 20, cap + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > cap:
            raise StateFileTooLargeError(path, size, cap)
        return b"".join(chunks)
    except OSError as exc:
        raise _os_error(path, "reading", exc) from exc
    finally:
        os.close(fd)


def _fsync_directory(directory: Path) -> None:
    # Not every platform lets a directory be opened for fsync; the rename is still atomic there.
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def write_state_file(path: str | Path, data: bytes) -> None:
    """Replace the file ``path`` with ``data`` at once: a reader sees the old bytes or the new, a crash leaves one
    of them, and no link, FIFO or file planted in the directory is ever opened or followed (LAY-15).

    The bytes go to a new file ``<name>.<random>.tmp`` of the same directory, created with ``O_CREAT | O_EXCL |
    O_NOFOLLOW``; it is fsynced, renamed over ``path`` (which replaces a link there rather than following it) and
    the directory fsynced. A failure removes the temporary file and raises a :class:`StateFileError` naming
    ``path`` (``errno`` set: ENOSPC, EIO, ...); a directory at ``path`` is refused before anything is created.
    """
    target = Path(path)
    check_name_length(target)
    kind = state_file_kind(target)
    if kind is not None and kind.endswith("a directory"):
        raise StateFileError(target, kind + ": nothing written")
    stem = target.name[: NAME_MAX - 32]  # room for the random part and the suffix
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    for _attempt in range(8):
        temp = target.with_name(f"{stem}.{secrets.token_hex(8)}{TMP_SUFFIX}")
        try:
            fd = os.open(temp, flags, 0o644)
            break
        except FileExistsError:
            continue
        except OSError as exc:
            raise _os_error(target, "creating a temporary file", exc) from exc
    else:
        raise StateFileError(target, "no free temporary file name in 8 tries")
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise _os_error(target, "writing", exc) from exc
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _fsync_directory(target.parent)


def delete_state_file(path: str | Path) -> None:
    """Remove the file (or link: never its target) ``path`` if there is one; a directory there is refused typed."""
    target = Path(path)
    try:
        os.unlink(target)
    except FileNotFoundError:
        return
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            return
        raise _os_error(target, "deleting", exc) from exc


def write_checkpoint_file(path: str | Path, entries: CheckpointInput) -> bool:
    """Write an ``OffsetCheckpoint`` file; an empty map deletes it. Returns whether a file now exists (OFF-13, OFF-15).

    The bytes are computed (and an invalid offset refused) before anything is created, so a refused
    write leaves no temporary file and an existing checkpoint untouched. The write is :func:`write_state_file`'s
    (LAY-15).
    """
    target = Path(path)
    data = write_checkpoint_text(entries)
    if data is None:
        delete_state_file(target)
        return False
    write_state_file(target, data)
    return True


def legacy_file_exists(path: str | Path) -> bool:
    """Java's ``File.exists`` without following a link: a name too long for the file system names no file (a
    249-character store name plus ``.position`` is over most systems' 255), it is not an error (KV-26)."""
    return _lstat_absent_as_none(path) is not None


def read_checkpoint_file(path: str | Path, *, unknown_as_none: bool = False) -> dict[TopicPartition, int | None]:
    """``OffsetCheckpoint.read``: a missing file is an empty map (OFF-16); read by :func:`read_state_file` (LAY-15)."""
    data = read_state_file(path)
    if data is None:
        return {}
    return read_checkpoint_text(data, unknown_as_none=unknown_as_none)


def delete_checkpoint_file(path: str | Path) -> None:
    """``OffsetCheckpoint.delete``: remove the file if it exists (OFF-19)."""
    delete_state_file(path)


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
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                out[rel] = "link:" + os.readlink(path)
            elif stat.S_ISDIR(mode):
                out[rel] = "dir"
            elif not stat.S_ISREG(mode):  # a FIFO or a device: never opened (it could block or never end)
                out[rel] = f"special:{stat.S_IFMT(mode):o}"
            else:
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out
