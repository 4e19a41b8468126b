"""The surface every store family shares (kstate.stores.surface): one default changelog partition for every
family, and one options object for every RocksDB store (KV-52, KV-55, UPG-2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kstate.codecs.store_types import StoreType
from kstate.errors import InvalidArgumentError
from kstate.stores.api import TopicPartition
from kstate.stores.kv import RocksDBStore
from kstate.stores.session import RocksDBSessionStore
from kstate.stores.window import RocksDBWindowStore

#: Task directory names and the changelog partition a store in them writes to: the task's partition when the name is
#: ``<subtopology>_<partition>`` with ASCII digits, else none.
TASK_NAMES = [("0_3", 3), ("12_0", 0), ("7", None), ("0_-1", None), ("0_+3", None), ("0_²", None), ("0_", None)]


def _partitions(store_type: StoreType, task_dir: Path) -> tuple[TopicPartition, ...]:
    store: Any
    if store_type is StoreType.KEY_VALUE:
        store = RocksDBStore("s", task_dir)
        partitions = store.changelog_partitions
    elif store_type is StoreType.WINDOW:
        store = RocksDBWindowStore("s", task_dir, retention_ms=60_000, window_size_ms=1_000)
        partitions = store.segments.changelog_partitions
    else:
        store = RocksDBSessionStore("s", task_dir, retention_ms=60_000)
        partitions = store.segments.changelog_partitions
    store.close()
    return tuple(partitions)


@pytest.mark.parametrize("store_type", [StoreType.KEY_VALUE, StoreType.WINDOW, StoreType.SESSION])
@pytest.mark.parametrize(("task_name", "partition"), TASK_NAMES)
def test_every_family_defaults_to_the_same_changelog_partition(
    tmp_path: Path, store_type: StoreType, task_name: str, partition: int | None
) -> None:
    """``<application.id>-<store>-changelog`` on the task's partition, decided the same way for every family: a
    name whose partition is not ASCII digits has none (a session store used to fail on ``0_²`` and read ``7`` as
    partition 7; a key-value store read ``0_-1`` as partition -1)."""
    task_dir = tmp_path / "app" / task_name
    expected = () if partition is None else (TopicPartition("app-s-changelog", partition),)
    assert _partitions(store_type, task_dir) == expected


def test_rocksdb_options_are_checked() -> None:
    """A flag that is not a bool, or partitions that are not TopicPartitions, are refused by name."""
    from kstate.stores.surface import RocksDBOptions

    with pytest.raises(InvalidArgumentError, match="manage_offsets"):
        RocksDBOptions(manage_offsets="no")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="changelog_partitions"):
        RocksDBOptions(changelog_partitions="topic-0")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="changelog_partitions"):
        RocksDBOptions(changelog_partitions=[("t", "0")])  # type: ignore[list-item]
    given = RocksDBOptions(changelog_partitions=[("t", 2)])  # type: ignore[list-item]
    assert given.changelog_partitions == (TopicPartition("t", 2),)
    assert given.partitions_for(Path("/x/app/0_5"), "s") == (TopicPartition("t", 2),)
    assert RocksDBOptions().partitions_for(Path("/x/app/0_5"), "s") == (TopicPartition("app-s-changelog", 5),)
    assert RocksDBOptions().partitions_for(None, "s") == ()
