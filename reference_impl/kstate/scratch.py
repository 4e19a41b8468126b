"""Where the suite's temporary stores go: a RAM-backed directory (tmpfs) when the machine has one.

RocksDB syncs its files when a store is flushed or closed. On a virtual disk that wait is most of a store test's
time (a store scenario: 0.39 s on disk, 0.05 s on tmpfs), and the suite opens thousands of stores. Nothing the
suite checks depends on the medium: a simulated crash keeps the files as they are (KV-52), and a killed process
loses no page the kernel holds. An explicit ``TMPDIR`` always wins, and ``KSTATE_TMPFS=0`` turns this off.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

#: The RAM-backed directory Linux mounts for every user.
SHARED_MEMORY = Path("/dev/shm")


def tmpfs_root() -> Path | None:
    """``/dev/shm`` when it is a writable directory and neither ``TMPDIR`` nor ``KSTATE_TMPFS=0`` says otherwise."""
    if os.environ.get("TMPDIR") or os.environ.get("KSTATE_TMPFS", "1") == "0":
        return None
    if SHARED_MEMORY.is_dir() and os.access(SHARED_MEMORY, os.W_OK | os.X_OK):
        return SHARED_MEMORY
    return None


@contextlib.contextmanager
def scratch_temp_dir(label: str) -> Iterator[Path | None]:
    """Point ``TMPDIR`` (for this process and its children) at a fresh directory on tmpfs for the duration, and
    remove it after; yields that directory, or ``None`` where the default temporary directory is kept."""
    root = tmpfs_root()
    if root is None:
        yield None
        return
    directory = Path(tempfile.mkdtemp(prefix=f"kstate-{label}-", dir=root))
    # As /tmp is: a test that drops privileges (root ignores file modes) must still reach its own files below.
    directory.chmod(0o1777)
    saved = tempfile.tempdir
    os.environ["TMPDIR"] = str(directory)
    tempfile.tempdir = None  # gettempdir() caches its answer: ask again
    try:
        yield directory
    finally:
        os.environ.pop("TMPDIR", None)
        tempfile.tempdir = saved
        shutil.rmtree(directory, ignore_errors=True)
