"""Paths of the wrong kind where a store, ``rocksdb/`` or task directory is expected (KV-25), made the one way
the conformance and unit tests both use."""

from __future__ import annotations

from pathlib import Path


def make_file(path: Path) -> None:
    """A plain file where a directory is expected."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"not a directory")


def make_dangling_link(path: Path) -> None:
    """A symbolic link to nothing where a directory is expected."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(path.parent / "nowhere")
