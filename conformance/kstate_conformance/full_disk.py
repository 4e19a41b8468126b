"""A small disk the suite can fill, for the full-disk conformance case (issue 32 C, OFF-23).

The neutral operations cannot fail a testee's disk, so the suite does it from outside: it mounts a small tmpfs of
its own (``mount -t tmpfs -o size=...``, which needs root), opens the testee's store with its state directory
there, and fills the tmpfs to the brim with a ballast file (:func:`fill`) or frees it again (:func:`release`). The
testee must run on the same machine and see the same mount (the reference in process, a local testee process);
where the mount is not allowed the case is skipped with the reason, never passed.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

#: Room for one store's databases and logs on RocksDB, small enough to fill in a moment.
TMPFS_SIZE = "24m"
BALLAST = "kstate-ballast"


def mount_problem(target: Path, size: str = TMPFS_SIZE) -> str | None:
    """Mount a tmpfs of ``size`` at ``target``: None when done, else why it cannot be."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "mounting a tmpfs needs root (the full-disk case fills a disk of its own, never the shared one)"
    target.mkdir(parents=True, exist_ok=True)
    try:
        result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(target)],
                                capture_output=True, text=True, check=False, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"mount -t tmpfs could not run here: {exc}"
    if result.returncode != 0:
        return f"mount -t tmpfs is not allowed here: {result.stderr.strip() or result.returncode}"
    return None


@contextlib.contextmanager
def small_tmpfs(skip: object) -> Iterator[Path]:
    """A fresh, empty tmpfs, unmounted again afterwards; ``skip(reason)`` (pytest.skip) where none can be had."""
    target = Path("/tmp") / f"kstate-conformance-disk-{uuid.uuid4().hex[:12]}"
    reason = mount_problem(target)
    if reason is not None:
        with contextlib.suppress(OSError):
            target.rmdir()
        skip(reason)  # type: ignore[operator]
    try:
        yield target
    finally:
        subprocess.run(["umount", "-l", str(target)], check=False, capture_output=True, timeout=30)
        with contextlib.suppress(OSError):
            target.rmdir()


def fill(root: Path) -> None:
    """``fs.fill``: write ballast into ``root`` until the file system refuses one byte more (ENOSPC)."""
    with open(root / BALLAST, "ab", buffering=0) as out:
        for chunk in (1 << 20, 1 << 16, 1 << 12, 1):
            with contextlib.suppress(OSError):
                while True:
                    out.write(b"\0" * chunk)


def release(root: Path) -> None:
    """``fs.release``: remove the ballast, so the disk has room again."""
    with contextlib.suppress(FileNotFoundError):
        (root / BALLAST).unlink()
