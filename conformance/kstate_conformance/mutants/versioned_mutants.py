"""Mutants of the KIP-889 versioned store: each a bug a port of Kafka's versioned store could plausibly have."""

from __future__ import annotations

import struct

from kstate.codecs import versioned as v
from kstate.ops import JsonDict, tohex, unhex
from kstate.ops.versioned_ops import replay_key_scenario, replay_segment_steps
from kstate_conformance.adapter import Handler
from kstate_conformance.mutants import mutant
from kstate_conformance.mutants.paired_mutants import changed_answer, paired_mutant

SEGMENT_OP = "versioned.segment_scenario"
VERSIONS_OP = "versioned.segment_versions"


def _segment_ops(segment_class: type[v.SegmentValue]) -> dict[str, Handler]:
    """The row operations of the reference, run on a broken ``SegmentValue`` subclass."""

    def scenario(payload: JsonDict) -> JsonDict:
        return {"steps": replay_segment_steps(payload["steps"], segment_class)}

    def versions(payload: JsonDict) -> JsonDict:
        row = segment_class.deserialize(bytes.fromhex(payload["bytes"]))
        return {"next_timestamp": row.next_timestamp, "min_timestamp": row.min_timestamp,
                "versions": [{"index": r.index, "valid_from": r.valid_from, "valid_to": r.valid_to,
                              "value": tohex(r.value)} for r in row.versions()]}

    return {SEGMENT_OP: scenario, VERSIONS_OP: versions}


@mutant("versioned-tombstone-size-zero", "segment rows write a tombstone with value_size 0, so it reads back as an "
        "empty value", "versioned", rules=("VER-8",))
def _tombstone_size_zero() -> dict[str, Handler]:
    class EmptyTombstones(v.SegmentValue):
        @staticmethod
        def stored_value(value: bytes | None) -> tuple[bytes, int]:
            return (b"", 0) if value is None else (bytes(value), len(value))

    return _segment_ops(EmptyTombstones)


@mutant("versioned-no-gap-tombstone", "insertAsLatest past next_timestamp stretches the newest version over the gap "
        "instead of inserting a tombstone", "versioned", rules=("VER-15",))
def _no_gap_tombstone() -> dict[str, Handler]:
    class NoGapTombstone(v.SegmentValue):
        def insert_as_latest(self, valid_from: int, valid_to: int, value: bytes | None) -> None:
            if valid_from > self._next and not self._degenerate:
                self._next = valid_from
                self._row = struct.pack(">q", valid_from) + self._row[8:]
            super().insert_as_latest(valid_from, valid_to, value)

    return _segment_ops(NoGapTombstone)


@mutant("versioned-valid-to-from-older-neighbour", "a version's validTo is taken from the next entry in the index "
        "(the older version) instead of the previous one", "versioned", rules=("VER-7",))
def _valid_to_from_older_neighbour() -> dict[str, Handler]:
    def corrected(row: v.SegmentValue, result: v.SegmentSearchResult) -> v.SegmentSearchResult:
        everything = v.SegmentValue.versions(row)
        older = result.index + 1
        valid_to = everything[older].valid_from if older < len(everything) else row.next_timestamp
        return v.SegmentSearchResult(result.index, result.valid_from, valid_to, result.value)

    class OlderNeighbour(v.SegmentValue):
        def find(self, timestamp: int, include_value: bool) -> v.SegmentSearchResult:
            return corrected(self, super().find(timestamp, include_value))

        def find_all(self, from_time: int, to_time: int) -> list[v.SegmentSearchResult]:
            return [corrected(self, r) for r in super().find_all(from_time, to_time)]

        def versions(self) -> list[v.SegmentSearchResult]:
            return [corrected(self, r) for r in super().versions()]

    return _segment_ops(OlderNeighbour)


def _reorder_values(row: bytes, newest_first: bool) -> bytes:
    """Rewrite the values region oldest-first to newest-first (or back), keeping the index."""
    sizes = [max(r.value_size, 0) for r in _entries(row)]
    chunks: list[bytes] = []
    position = len(row) - sum(sizes)
    region_start = position
    order = sizes if not newest_first else list(reversed(sizes))  # as stored now, first chunk first
    for size in order:
        chunks.append(row[position:position + size])
        position += size
    return row[:region_start] + b"".join(reversed(chunks))


class _Entry:
    def __init__(self, valid_from: int, value_size: int) -> None:
        self.valid_from = valid_from
        self.value_size = value_size


def _entries(row: bytes) -> list[_Entry]:
    out: list[_Entry] = []
    if len(row) < 16:
        return out
    minimum = struct.unpack_from(">q", row, 8)[0]
    position = 16
    while position + 12 <= len(row):
        valid_from, size = struct.unpack_from(">qi", row, position)
        out.append(_Entry(valid_from, size))
        position += 12
        if valid_from == minimum:
            break
    return out


@mutant("versioned-values-newest-first", "segment rows store the values region newest first (reading it back the "
        "same way)", "versioned", rules=("VER-6",))
def _values_newest_first() -> dict[str, Handler]:
    class NewestFirstValues(v.SegmentValue):
        @classmethod
        def deserialize(cls, row: bytes) -> v.SegmentValue:
            return cls(_reorder_values(row, newest_first=True))

        def serialize(self) -> bytes:
            return _reorder_values(super().serialize(), newest_first=False)

    return _segment_ops(NewestFirstValues)


@mutant("versioned-latest-segment-zero", "the latest-value store uses the segment prefix 0 instead of the reserved "
        "-1", "versioned", rules=("VER-2",))
def _latest_segment_zero() -> dict[str, Handler]:
    class LatestAtZero(v.KeyVersions):
        def physical_rows(self, key: bytes) -> list[tuple[bytes, bytes]]:
            rows = [(v.segment_key(sid, key), row) for sid, row in self.segments.items()]
            if self.latest is not None:
                rows.append((v.segment_key(0, key), self.latest))
            return sorted(rows)

    def segment_key(payload: JsonDict) -> JsonDict:
        sid = payload["segment_id"]
        return {"bytes": tohex(v.segment_key(0 if sid == -1 else sid, unhex(payload["key"]) or b""))}

    return {"versioned.key_scenario": lambda payload: replay_key_scenario(payload, LatestAtZero),
            "versioned.segment_key": segment_key}


@mutant("versioned-grace-inclusive", "a put or delete exactly at observedStreamTime - gracePeriod is rejected as "
        "expired", "versioned", rules=("VER-26",))
def _grace_inclusive() -> dict[str, Handler]:
    class InclusiveGrace(v.KeyVersions):
        def put(self, value: bytes | None, timestamp: int) -> int:
            if timestamp <= self.observed_stream_time - self.config.grace_period:
                return v.PUT_RETURN_CODE_NOT_PUT
            return super().put(value, timestamp)

        def delete(self, timestamp: int) -> v.VersionedRecord | None:
            if timestamp <= self.observed_stream_time - self.config.grace_period:
                return None
            return super().delete(timestamp)

    return {"versioned.key_scenario": lambda payload: replay_key_scenario(payload, InclusiveGrace)}


@mutant("versioned-latest-tombstone-accepted", "the latest-value row of a tombstone is written as the bare "
        "timestamp, like an empty value", "versioned", rules=("VER-3",))
def _latest_tombstone_accepted() -> dict[str, Handler]:
    def latest_from(payload: JsonDict) -> JsonDict:
        return {"bytes": (struct.pack(">q", payload["timestamp"]) + (unhex(payload["value"]) or b"")).hex()}

    return {"versioned.latest_from": latest_from}


# --- paired mutants (caught beside a model only: kstate conformance --model; mutants/paired_mutants.py) ---------

paired_mutant("paired-versioned-put-answers-latest",
              "a versioned put answers validTo -1 (the latest) even when out of order",
              "versioned", ("VS-7",), {"versioned_store.put": changed_answer("versioned_store.put", lambda _p, out: {
                  **out, "valid_to": -1 if out["valid_to"] != -(1 << 63) else out["valid_to"]})})
