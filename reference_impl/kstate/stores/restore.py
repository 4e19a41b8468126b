"""Restore: replay changelog records into a key-value bytes store, batch by batch (spec/restore.md, RST-*).

Each record is converted as ``StateManagerUtil.converterForStore`` converts it for the store type
(identity; ``[record timestamp][value]``; ``[hsize][all record headers][record timestamp][value]``), and
each batch goes to the store's ``restore_batch``, which writes it atomically (one RocksDB write batch).
Restore writes the innermost store: nothing is logged and the cache is not involved (RST-4).
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from itertools import islice

from kstate.codecs import changelog as cl
from kstate.codecs.store_types import StoreType
from kstate.stores.api import RecordRestorable, StateStore, restore_mode
from kstate.stores.life import restoring_life

#: Kafka's restore consumer polls at most ``max.poll.records`` (default 1000) records per batch.
DEFAULT_RESTORE_BATCH_SIZE = 1000

Converter = Callable[[cl.ChangelogRecord], "bytes | None"]


def converter_for(store_type: StoreType) -> Converter:
    """The record converter of ``store_type``: :func:`kstate.codecs.changelog.restore_value` for its type (RST-2)."""
    return partial(cl.restore_value, StoreType(store_type))


def convert(store_type: StoreType, record: cl.ChangelogRecord) -> bytes | None:
    """The value ``store_type`` writes for ``record`` (RST-2)."""
    return converter_for(store_type)(record)


@dataclass(frozen=True)
class RestoreResult:
    """How much a restore applied."""

    records: int
    batches: int


_gc_lock = threading.Lock()
_gc_pauses = 0
_gc_was_enabled = False


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic collector off while restore runs, back as it was after (also across threads).

    Restore allocates only acyclic objects (tuples, lists, bytes), which reference counting frees; the
    collector would still walk them, and every live object, over and over: 15-20 % of a restore's time.
    """
    global _gc_pauses, _gc_was_enabled
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_was_enabled:
                gc.enable()


@contextlib.contextmanager
def restoring(store: StateStore) -> Iterator[None]:
    """What every restore runs under: the collector paused, the store's restore mode and its life state
    RESTORING (RST-8)."""
    with gc_paused(), restore_mode(store), restoring_life(store):
        yield


def batches_of(records: Iterable[cl.ChangelogRecord], batch_size: int) -> Iterator[list[cl.ChangelogRecord]]:
    """Consecutive batches of at most ``batch_size`` records, in changelog order (RST-1)."""
    if batch_size < 1:
        raise ValueError("a restore batch holds at least one record")
    it = iter(records)
    while batch := list(islice(it, batch_size)):
        yield batch


def restore(
    store: StateStore,
    store_type: StoreType,
    records: Iterable[cl.ChangelogRecord],
    *,
    batch_size: int = DEFAULT_RESTORE_BATCH_SIZE,
    converter: Converter | None = None,
    after_batch: Callable[[RestoreResult], None] | None = None,
) -> RestoreResult:
    """Convert and write ``records`` into ``store`` one atomic batch at a time (RST-1 to RST-3); a
    :class:`RecordRestorable` store (versioned) takes each batch's records whole.

    ``after_batch`` runs after each batch with the totals so far: Kafka records the changelog offset
    restored there (with store-managed offsets, a ``commit`` that makes the batch durable with it).
    """
    store_type = StoreType(store_type)
    count = batches = 0
    with restoring(store):
        for batch in batches_of(records, batch_size):
            if converter is None and isinstance(store, RecordRestorable):
                store.restore_records(batch)
            elif converter is not None:
                store.restore_batch([(record.key, converter(record)) for record in batch])
            else:
                store.restore_batch(cl.restore_entries(store_type, [
                    (record.key, record.value, record.timestamp, record.headers) for record in batch]))
            count += len(batch)
            batches += 1
            if after_batch is not None:
                after_batch(RestoreResult(count, batches))
    return RestoreResult(count, batches)
