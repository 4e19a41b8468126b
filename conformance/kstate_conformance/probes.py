"""A store family's probe, for the store rules checked at every family (KV-12, KV-54, KV-56, LAY-14; issue 25):
its plain store type, open options, a write of one key and its reads of it as the neutral operations' payloads,
and the family's own rules of each check. Each family's model builds its own (``probe``); the cases read them.
Beside it, what the cases at a family's places read (:class:`RowsBySegment`, :class:`FamilyPlaces`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kstate_conformance.harness import Store

Payload = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Probe:
    """One family's plain store type, its open options, a write of key ``k`` and its reads of it, as payloads."""

    store_type: str
    options: dict[str, Any]
    write: Payload
    reads: tuple[Payload, ...]
    restore_key: str
    extra: tuple[Payload, ...] = field(default=())
    #: The fields of :attr:`write` that place it in time (a window start, a session's start and end, a version).
    time_fields: tuple[str, ...] = ("timestamp",)
    #: The write that removes key ``k`` (a delete, a session's remove); None: a write of null does (a window store).
    remove: Payload | None = None
    #: The rules a closed store of the family breaks when it answers (KV-12, and the family's own).
    closed_store_rules: tuple[str, ...] = ("KV-12",)
    #: The rules a position gone back breaks at the family (KV-54, and the family's own).
    position_rules: tuple[str, ...] = ("KV-54",)
    #: The rules a position row written without a commit breaks at the family.
    position_row_rules: tuple[str, ...] = ("KV-56", "KV-63", "OFF-5")

    def put(self, store: Store, key: str) -> None:
        op, payload = self.write
        store.ok(op, **{**payload, "key": key})

    def ops(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(op for op, _ in (self.write, *self.reads, *self.extra)))


@dataclass(frozen=True)
class RowsBySegment:
    """Where a segmented family's rows are (SESS-1, SESS-11): the open options, writes of one key, the row keys each
    segment then holds in the data column families (in their order), and reads that answer the written value."""

    options: dict[str, Any]
    writes: tuple[Payload, ...]
    column_families: tuple[str, ...]
    rows: dict[str, list[str]]
    reads: tuple[Payload, ...]


@dataclass(frozen=True)
class RestoredRows:
    """A segmented family's restore over two segments (RST-8): its records (keys ``k1``..``k6``, one removed by a
    later tombstone), the reads answering every row, and what they answer for a store holding none of them."""

    records: tuple[dict[str, Any], ...]
    #: Each read as its operation, its input and the answer's field; a field that is a list counts each entry a row.
    reads: tuple[tuple[str, dict[str, Any], str], ...]
    nothing: tuple[Any, ...]

    def rows(self, store: Store) -> list[Any]:
        """What ``store`` answers for the restored keys, in :attr:`reads`' order."""
        found: list[Any] = []
        for op, payload, answer in self.reads:
            value = store.ok(op, **payload)[answer]
            if isinstance(value, list):
                found.extend(value)
            else:
                found.append(value)
        return found


@dataclass(frozen=True)
class FamilyPlaces:
    """What the cases at a family's legacy files, zero-byte values and restores need beyond its probe
    (``test_store_rules_family_places``, issue 32 E)."""

    #: The answer's field, and its value, of the probe's first read after its write of a zero-byte value (OPS-2).
    empty_value_answer: tuple[str, Any]
    #: A segmented family's restore over two segments (RST-8); None for a family without one.
    restored: RestoredRows | None = None
