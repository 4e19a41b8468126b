"""Restore a store from its changelog topic on a broker, committing offsets with each batch (RST-*, KV-50)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from kstate.codecs import changelog as cl
from kstate.codecs.offsets import restore_start_offset
from kstate.codecs.store_types import StoreType
from kstate.kafka.changelog_topics import iter_batches, restore_rows
from kstate.stores.api import RecordRestorable, StateStore, TopicPartition
from kstate.stores.restore import DEFAULT_RESTORE_BATCH_SIZE, restoring

Headers = list[tuple[str, "bytes | None"]]


@dataclass(frozen=True)
class RestoreOutcome:
    """What a restore read and wrote: records, batches, the first and last changelog offsets applied."""

    records: int
    batches: int
    first_offset: int | None
    last_offset: int | None


def restore_from_changelog(
    store: StateStore,
    store_type: StoreType,
    bootstrap: str,
    changelog: TopicPartition,
    *,
    batch_size: int = DEFAULT_RESTORE_BATCH_SIZE,
    liveness: Callable[[], None] | None = None,
    after_batch: Callable[[int], None] | None = None,
    timeout: float = 60.0,
    config: Mapping[str, Any] | None = None,
) -> RestoreOutcome:
    """Read ``changelog`` from the store's committed offset + 1 to the end (by fetch, never ListOffsets), write
    each batch converted for ``store_type`` (RST-1, RST-2) and commit it with its last offset (RST-3, KV-50).

    ``after_batch(last_offset)`` runs after each batch is staged and before it is committed. ``config``
    (librdkafka properties) overrides the reading consumer's defaults. A
    :class:`RecordRestorable` store (versioned, window, session) takes each batch's records whole, timestamps and
    headers included; a key-value store takes ``(key, stored value)`` pairs.
    """
    committed = store.committed_offset(changelog) if store.manages_offsets() else None
    start = restore_start_offset(committed)  # -4 (OFFSET_UNKNOWN) and -1 restore from the start (OFF-24)
    store_type = StoreType(store_type)
    record_store = store if isinstance(store, RecordRestorable) else None
    with_headers = record_store is not None or cl.restore_reads_headers(store_type)
    records = batches = 0
    first: int | None = None
    last: int | None = None
    # Key-value: messages go straight to (key, stored value) entries, a batch per call, no record objects (RST-2).
    with restoring(store):
        for batch in iter_batches(bootstrap, changelog.topic, changelog.partition, start, batch_size=batch_size,
                                  liveness=liveness, timeout=timeout, what=f"restoring {store.name}",
                                  config=config):
            if first is None:
                first = batch[0].offset()
            rows = restore_rows(batch, with_headers)
            if record_store is not None:
                # confluent-kafka's headers are (str, bytes | None) pairs already.
                record_store.restore_records([cl.ChangelogRecord(key, value, timestamp, tuple(cast(Headers, headers or ())))
                                              for key, value, timestamp, headers in rows])
            else:
                store.restore_batch(cl.restore_entries(store_type, rows))
            last = batch[-1].offset()
            if after_batch is not None:
                after_batch(last)
            store.commit({changelog: last})
            records += len(batch)
            batches += 1
    return RestoreOutcome(records, batches, first, last)
