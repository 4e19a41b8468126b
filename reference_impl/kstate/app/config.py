"""The configuration of one application instance, exchanged as a JSON file."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kstate.codecs import changelog as cl
from kstate.codecs.store_types import StoreType

#: What an instance does when its store directory was left by an unclean shutdown (KV-52): keep the committed
#: data and restore the rest of the changelog on top (at-least-once), or wipe and rebuild (as Kafka does under
#: exactly-once, where the unclean store is a ``TaskCorruptedException``).
UNCLEAN_KEEP = "keep"
UNCLEAN_WIPE = "wipe"
#: What an instance does with a store it refuses to open (UPG-1): fail, or wipe and rebuild (UPG-3).
ON_REFUSED_FAIL = "fail"
ON_REFUSED_WIPE = "wipe"

#: Crash points an instance can be told to SIGKILL itself at (``crash_at = "<point>:<n>"``, the n-th time).
CRASH_POINTS = (
    "after_put",              # a record applied to the store and logged, not yet committed
    "after_producer_flush",   # the changelog acknowledged, no offset committed yet
    "after_consumer_commit",  # input offsets committed, the store's offsets not yet
    "after_store_commit",     # the store's data and offsets committed atomically
    "after_restore_batch",    # one restore batch written, not yet committed
)


@dataclass
class InstanceConfig:
    """One application instance: which input partitions it owns, its store, its state directory."""

    instance_id: str
    bootstrap: str
    application_id: str
    input_topic: str
    partitions: list[int]
    store_name: str
    store_type: str
    state_dir: str
    status_dir: str
    commit_every_records: int = 200
    commit_interval_ms: int = 200
    on_unclean_shutdown: str = UNCLEAN_KEEP
    on_refused: str = ON_REFUSED_FAIL
    manage_offsets: bool = True
    crash_at: str | None = None
    restore_batch_size: int = 1000
    #: The store family's own options (``retention_ms``, ``window_size_ms``, ``history_retention_ms``, ...),
    #: passed to ``open_bytes_store`` as the family's ``StoreClasses.options`` name them.
    store_options: dict[str, Any] = field(default_factory=dict)
    #: The family's processor's options (``grace_ms``, ``inactivity_gap_ms``; :mod:`kstate.app.processors`).
    processor_options: dict[str, int] = field(default_factory=dict)
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def changelog_topic(self) -> str:
        return cl.changelog_topic_name(self.application_id, self.store_name)

    @property
    def kv_store_type(self) -> StoreType:
        """The store type, of any family (the name predates the other families)."""
        return StoreType(self.store_type)

    def task_id(self, partition: int) -> str:
        """Every instance runs one sub-topology: task ``0_<partition>`` (LAY-1)."""
        return f"0_{partition}"

    def write(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(asdict(self), indent=1))
        return path

    @classmethod
    def read(cls, path: str | Path) -> InstanceConfig:
        return cls(**json.loads(Path(path).read_text()))
