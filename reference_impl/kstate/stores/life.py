"""A store's life as data: the life states, the operation classes, and one table of what a store answers to an
operation in each state (spec/kv-stores.md KV-12, KV-52, RST-8; VS-37, SS-37, CACHE-9).

Every store asks :func:`check` at the top of each operation (through :meth:`Lived._allow`), and the
conformance suite's models read the same table for what a closed store must answer, as h11's connection
states are one transition table that both its client and its server consult. A new operation is a row of
:data:`OPERATIONS`; a new state a row of :data:`TABLE`; no store writes its own refusal.

The spec text each cell stands for, quoted:

- KV-12: "Any operation on a closed RocksDB store throws ``InvalidStateStoreException`` ("Store X is
  currently closed") [...] "Operations" means all of them, not only reads and writes: ``committedOffset`` and
  restore are refused too, by the store itself [...] ``flush`` and ``commit`` MAY answer as no-ops [...]
  Closing twice is a no-op." The reference refuses ``flush`` and ``commit`` too (the stricter choice the rule
  allows, and what a caching layer must do, CACHE-9).
- VS-37: "After ``close`` (or a crash) every read and write raises ``InvalidStateStoreError`` ("Store <name> is
  currently closed"); ``close`` is idempotent." The crashed cells cite KV-52, the rule of what a crash leaves
  (the next open detects it); closing or crashing a crashed store again is a no-op. An in-memory store's crash
  is its close (KV-43: "Closing the in-memory store clears its map"): it is CLOSED after (:func:`after_crash`).
- RST-8: a store being restored is open; restore mode changes how commits reach disk (no WAL), not what the
  store accepts.
- VS-37, SS-37: "in-memory versioned and session stores refuse as their RocksDB stores do".

A store opens in its constructor (Kafka's ``init``), so "not yet open" is no state of a store object: an open
that fails leaves no store to ask.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Final, Protocol

from kstate.stores.api import InvalidStateStoreError


class LifeState(str, Enum):
    """Where a store object is in its life."""

    OPEN = "open"
    RESTORING = "restoring"
    CLOSED = "closed"
    CRASHED = "crashed"


class OpClass(str, Enum):
    """The classes of store operation the table answers for."""

    READ = "read"  # get, fetch, ranges, scans, counts, dumps of the open store's rows
    WRITE = "write"  # put, putIfAbsent, putAll, delete, remove
    RESTORE = "restore"  # restore batches and entering restore mode
    COMMIT = "commit"  # commit and flush
    OFFSETS = "offsets"  # committedOffset(s)
    DOWNGRADE = "downgrade"  # the close for a downgrade below 4.3 (UPG-4)
    CLOSE = "close"
    CRASH = "crash"
    DESCRIBE = "describe"  # persistent, managesOffsets, record context, position merge: no data touched


class Op:
    """The operation classes as plain class attributes: a store names one at the top of every operation, and an
    Enum member's attribute access costs a call in Python 3.11."""

    READ: Final = OpClass.READ
    WRITE: Final = OpClass.WRITE
    RESTORE: Final = OpClass.RESTORE
    COMMIT: Final = OpClass.COMMIT
    OFFSETS: Final = OpClass.OFFSETS
    DOWNGRADE: Final = OpClass.DOWNGRADE
    CLOSE: Final = OpClass.CLOSE
    CRASH: Final = OpClass.CRASH
    DESCRIBE: Final = OpClass.DESCRIBE


@dataclass(frozen=True)
class Answer:
    """One cell of the table: allowed, or refused with ``error`` and ``message`` (``{name}`` is the store's),
    citing ``rule``. ``noop`` marks an allowed call that changes nothing (closing twice)."""

    allowed: bool
    rule: str
    error: type[Exception] | None = None
    message: str = ""
    noop: bool = False

    def refusal(self, name: str) -> Exception:
        assert self.error is not None
        return self.error(self.message.format(name=name))


#: Kafka's words for any operation on a closed store (``RocksDBStore.validateStoreOpen``), KV-12.
CLOSED_MESSAGE = "Store {name} is currently closed."

ALLOWED = Answer(True, "KV-12")
_RESTORE_OPEN = Answer(True, "RST-8")
_CLOSED = Answer(False, "KV-12", InvalidStateStoreError, CLOSED_MESSAGE)
_CRASHED = Answer(False, "KV-52", InvalidStateStoreError, CLOSED_MESSAGE)
_AGAIN = Answer(True, "KV-12", noop=True)

#: life state x operation -> answer. Every pair has a cell (tests/unit/test_store_life.py checks it).
TABLE: dict[tuple[LifeState, OpClass], Answer] = {
    # An open store answers everything; KV-12 refuses only a closed one.
    **{(LifeState.OPEN, op): ALLOWED for op in OpClass},
    # RST-8: restore mode changes how commits reach disk (WAL off), not what the store accepts.
    **{(LifeState.RESTORING, op): _RESTORE_OPEN for op in OpClass},
    # KV-12: "Any operation on a closed RocksDB store throws InvalidStateStoreException [...] committedOffset and
    # restore are refused too"; flush and commit MAY answer, the reference refuses them (CACHE-9's choice).
    **{(LifeState.CLOSED, op): _CLOSED for op in OpClass},
    # VS-37: "After close (or a crash) every read and write raises"; KV-52: the crash is found at the next open.
    **{(LifeState.CRASHED, op): _CRASHED for op in OpClass},
    # KV-12: "Closing twice is a no-op"; VS-37: "close is idempotent". A crash after either changes nothing.
    (LifeState.CLOSED, Op.CLOSE): _AGAIN,
    (LifeState.CLOSED, Op.CRASH): _AGAIN,
    (LifeState.CRASHED, Op.CLOSE): _AGAIN,
    (LifeState.CRASHED, Op.CRASH): _AGAIN,
    # What the store is (persistent, managesOffsets, its position): no data touched, so no state to refuse in.
    (LifeState.CLOSED, Op.DESCRIBE): ALLOWED,
    (LifeState.CRASHED, Op.DESCRIBE): ALLOWED,
}

#: The open state as a module constant, for the stores' hot paths (an Enum member's access is slow in 3.11).
OPEN: Final = LifeState.OPEN
_OPEN = OPEN
_RESTORING = LifeState.RESTORING
assert all(TABLE[_OPEN, op].allowed for op in OpClass), "the fast paths below take every operation of an open store"

#: Every public store method, by its operation class: the test sends each to each store in each state.
OPERATIONS: dict[str, OpClass] = {
    **dict.fromkeys((
        "get", "range", "reverse_range", "all", "reverse_all", "prefix_scan", "approximate_num_entries",
        "get_versions", "fetch", "fetch_all", "fetch_keys", "fetch_range", "fetch_session", "find_sessions",
        "find_sessions_range", "column_family_rows", "segment_rows",
    ), Op.READ),
    **dict.fromkeys(("put", "put_if_absent", "put_all", "delete", "remove"), Op.WRITE),
    **dict.fromkeys(("restore_batch", "restore_records", "restoring"), Op.RESTORE),
    **dict.fromkeys(("commit", "flush", "flush_cache"), Op.COMMIT),
    **dict.fromkeys(("committed_offset", "committed_offsets"), Op.OFFSETS),
    "close_for_downgrade": Op.DOWNGRADE,
    "close": Op.CLOSE,
    "simulate_crash": Op.CRASH,
    "drop_cache": Op.CRASH,  # the caching layer's part of a crash: its dirty entries lost (CACHE-9)
    **dict.fromkeys((
        "persistent", "manages_offsets", "set_record_context", "merge_position", "merged_position",
        "offsets_entries", "segment_names", "segment_modes", "segment_positions", "segment_committed_offsets",
        "segment_ids", "window_starts",  # which segments or window starts a store holds, for tests
        "wrapped",  # the store a layer wraps
        "check_write",  # the change-logging layer's check of a write's arguments (CL-1), no data touched
    ), Op.DESCRIBE),
}


def after_crash(persistent: bool) -> LifeState:
    """The state a crash leaves: CRASHED for a persistent store, CLOSED for an in-memory one (KV-52, KV-43)."""
    return LifeState.CRASHED if persistent else LifeState.CLOSED


def answer(state: LifeState, op: OpClass) -> Answer:
    """The table's cell for ``op`` in ``state``."""
    return TABLE[state, op]


class _Openable(Protocol):
    @property
    def is_open(self) -> bool: ...


def life_of(store: _Openable) -> LifeState:
    """A store's life state: its own, or for a store that keeps none (a wrapper over one) OPEN or CLOSED."""
    life = getattr(store, "life", None)
    if isinstance(life, LifeState):
        return life
    return LifeState.OPEN if store.is_open else LifeState.CLOSED


def check_state(state: LifeState, op: OpClass, name: str) -> None:
    """Refuse ``op`` as the table says for ``state`` (the store named ``name``); return if it is allowed."""
    if state is _OPEN:  # every operation is allowed (the table's first row): no lookup on the hot path
        return
    cell = TABLE[state, op]
    if not cell.allowed:
        raise cell.refusal(name)


class LifeCycle:
    """A store's life state and the one check its operations make (KV-12, KV-52, RST-8).

    ``_open`` stays readable and settable for the stores' own code: setting it True opens, False closes."""

    name: str
    _life: LifeState = LifeState.CLOSED

    @property
    def life(self) -> LifeState:
        return self._life

    @property
    def is_open(self) -> bool:
        return self._life is _OPEN or self._life is _RESTORING

    @property
    def _open(self) -> bool:
        return self._life is _OPEN or self._life is _RESTORING

    @_open.setter
    def _open(self, value: bool) -> None:
        if value:
            self._life = LifeState.OPEN
        elif self._life is not LifeState.CRASHED:
            self._life = LifeState.CLOSED

    def _allow(self, op: OpClass) -> None:
        """The table's answer for ``op`` now: return if allowed, else raise its refusal."""
        if self._life is _OPEN:  # every operation is allowed (the table's first row): no lookup on the hot path
            return
        cell = TABLE[self._life, op]
        if not cell.allowed:
            raise cell.refusal(self.name)

    def _crashed(self) -> None:
        """The store was released as a killed process leaves it (KV-52)."""
        self._life = LifeState.CRASHED


@contextlib.contextmanager
def restoring_life(store: object) -> Iterator[None]:
    """The store is RESTORING while the block runs (RST-8), OPEN again after unless it closed meanwhile. A
    wrapper's (changelogging, caching) store below it is the one that restores."""
    while not isinstance(store, LifeCycle) and hasattr(store, "inner"):
        store = store.inner
    if not isinstance(store, LifeCycle) or store.life is not LifeState.OPEN:
        yield
        return
    store._life = LifeState.RESTORING
    try:
        yield
    finally:
        if store._life is LifeState.RESTORING:
            store._life = LifeState.OPEN
