"""Paired state machines: every generated store operation goes to the implementation under test and to a model
implementation (Apache Kafka Streams' own classes, ``--model kafka-jvm:4.4.0``), and their answers are compared
step by step (OPS-4: outputs equal, a refusal matches a refusal), and so are the rows they leave on disk after a
close, column family by column family, compared as data.

What Kafka deliberately does otherwise than the spec is kept out of the generated sequences or normalised, never
skipped silently: every such choice is an :class:`Exclusion` of :data:`EXCLUSIONS`, naming its rule, and each
place that applies one cites it by name (``excluded("CL-1")``).
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, note, settings
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from kstate.ops.compare import differences, is_error
from kstate_conformance.capabilities import capabilities_of, lacks_reason

#: Examples a paired machine runs by the loaded profile (quick, default, thorough); KSTATE_PAIRED_EXAMPLES overrides.
EXAMPLES = {15: 4, 60: 8, 1000: 150}
ENV_EXAMPLES = "KSTATE_PAIRED_EXAMPLES"
ENV_STEPS = "KSTATE_PAIRED_STEPS"
DEFAULT_STEPS = 25


@dataclass(frozen=True)
class Exclusion:
    """A known, deliberate difference of the model kept out of the sequences or normalised: its rule and why."""

    name: str
    rule: str
    how: str
    why: str


#: Every difference the paired machines do not compare, by name: Kafka's deviations (listed in the testee's
#: expected-failure files) and what the spec leaves open (an estimate, iterating a cache across a write).
EXCLUSIONS: dict[str, Exclusion] = {e.name: e for e in (
    Exclusion("CL-1", "CL-1", "values are drawn in the store type's layout only",
              "Kafka writes the inner store (or its cache) before the change-logging layer refuses a malformed value"),
    Exclusion("KV-57", "KV-57", "no crash and no offsets committed ahead of the data",
              "Kafka opens a store whose committed offsets are ahead of its data; the testee cannot crash a store"),
    Exclusion("OFF-8", "OFF-8", "the offsets family's position row is compared decoded, as a map",
              "PositionSerde.serialize writes topics and partitions in ConcurrentHashMap order, not insertion order"),
    Exclusion("KV-12", "KV-12", "no operation is sent to a closed store",
              "Kafka's closed RocksDB store still answers flush and commit"),
    Exclusion("KV-15", "KV-15", "approximate_num_entries is compared on in-memory stores only",
              "RocksDB's estimate-num-keys is an estimate (deletes and overwrites may count)"),
    Exclusion("CACHE-7", "CACHE-7", "no iterator is open across a write on a caching store",
              "iterating a cached store across a write is unspecified"),
    Exclusion("CACHE-7 reverse", "CACHE-7", "a caching store's reverse scans are compared with the model's forward scan "
              "of the same range, reversed",
              "Kafka's reverse merge of cache and store mishandles cached tombstones: AbstractMergedSortedCacheStoreIterator"
              ".hasNext answers one of a key the store lacks as [key, null], and drops one that sorts below the store's "
              "next key, answering the deleted stored value (spec cases spec.caching.reverse_iterators_hide_*)"),
    Exclusion("WS-2", "WS-2", "window sizes are drawn from 1 ms; the segment interval is Kafka's default",
              "Kafka's windowed iterators refuse window size 0 (TimeWindow); segment_interval_ms is no public option"),
    Exclusion("WS-24", "WS-24", "window values are drawn in the store type's layout only",
              "Kafka writes a window store before its change-logging layer refuses a malformed value"),
    Exclusion("VS-10", "VS-10", "a versioned delete's answer is compared without its valid_to",
              "MeteredVersionedKeyValueStore.delete drops validTo"),
    Exclusion("VS-11", "VS-11", "version queries are drawn with from <= to",
              "MultiVersionedKeyQuery.toTime refuses a toTime before fromTime"),
    Exclusion("VS-14", "VS-14", "versioned stores are not reopened",
              "LogicalKeyValueSegments.openExisting forgets the segments of a reopened store"),
    Exclusion("VS-38", "VS-38", "a versioned store's position row is compared by its presence only, not its bytes",
              "through the testee Kafka 4.4.0 leaves it empty: the commit writes the physical segment store's position, "
              "which RocksDBVersionedStore's writes do not advance (its own is written by the commit callback "
              "segmentStores::writePosition, which ProcessorStateManager runs and the testee does not)"),
    Exclusion("VS-19", "VS-19", "versioned timestamps are drawn non-negative",
              "Kafka writes a versioned store before its change-logging layer refuses a negative timestamp"),
    Exclusion("SS-28", "SS-28", "session values are drawn in the store type's layout only",
              "ChangeLoggingSessionBytesStoreWithHeaders.put writes the store before its log refuses a value that is "
              "not AggregationWithHeaders bytes"),
    Exclusion("SS-2 null key", "SS-2", "no null-key put or remove is sent to an in-memory session store without "
              "change-logging",
              "the testee calls the bytes store under Kafka's metered layer (MeteredSessionStore.put refuses a null "
              "key, MeteredSessionStoreWithHeaders.put does not check it); there InMemorySessionStore.remove returns "
              "before it reads the key when no session ends at that time, so the write is accepted as a no-op"),
    Exclusion("SS-36", "SS-36", "session stores are opened without the record cache",
              "Kafka's session store builders offer a cache (CachingSessionStore); the kit's has none"),
    Exclusion("WS-33", "WS-33", "window stores are opened without the record cache",
              "Kafka's window store builders offer a cache (CachingWindowStore); the kit's has none"),
)}


def excluded(name: str) -> Exclusion:
    """The exclusion ``name`` (a KeyError for one not listed: no exclusion without its entry)."""
    return EXCLUSIONS[name]


class Side:
    """One implementation of the pair: its adapter, its own state directory, and its names for the logical
    handles and iterators the machine uses."""

    def __init__(self, label: str, adapter: Any, base_dir: Path) -> None:
        self.label = label
        self.adapter = adapter
        self.dir = Path(tempfile.mkdtemp(dir=base_dir, prefix=f"{label}-"))
        self.names: dict[str, str] = {}
        #: The side's last answer (its own handle or iterator name, before the pair compares them).
        self.last: dict[str, Any] = {}

    def call(self, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        sent = {k: self.names.get(v, v) if k in ("handle", "iterator") and isinstance(v, str) else v
                for k, v in payload.items()}
        if "state_dir" in sent:
            sent["state_dir"] = str(self.dir)
        out: dict[str, Any] = self.adapter.call(op, sent)
        self.last = out
        return out


def decode_position(data: bytes) -> tuple[dict[str, dict[int, int]], int]:
    """OFF-8 position bytes as ``({topic: {partition: offset}}, length)``; the padding after them must be zeros."""
    version, topics = struct.unpack_from(">bi", data, 0)
    pos = 5
    out: dict[str, dict[int, int]] = {}
    for _ in range(topics):
        (size,) = struct.unpack_from(">i", data, pos)
        topic = data[pos + 4 : pos + 4 + size].decode("utf-8")
        pos += 4 + size
        (count,) = struct.unpack_from(">i", data, pos)
        pos += 4
        partitions = out.setdefault(topic, {})
        for _ in range(count):
            partition, offset = struct.unpack_from(">iq", data, pos)
            partitions[partition] = offset
            pos += 12
    assert version == 0 and not data[pos:].strip(b"\x00"), f"position bytes not in OFF-8's layout: {data.hex()}"
    return out, len(data)


def _column_family_rows(path: Path) -> dict[str, list[tuple[bytes, bytes]]]:
    """Every column family's rows in key order, read with rocksdict in raw mode (as ``raw_rocksdb`` reads them)
    but without its full garbage collection per database: in the suite's heap that took most of a paired run.
    Every handle is closed before the database, which releases RocksDB's lock for the next open."""
    import rocksdict

    families = rocksdict.Rdict.list_cf(str(path))
    db = rocksdict.Rdict(str(path), rocksdict.Options(raw_mode=True),
                         column_families={cf: rocksdict.Options(raw_mode=True) for cf in families})
    out: dict[str, list[tuple[bytes, bytes]]] = {}
    try:
        for cf in families:
            handle = db.get_column_family(cf)
            try:
                items: Any = handle.items()  # rocksdict's stubs type the items view as its own iterator
                out[cf] = list(items)
            finally:
                handle.close()
                del handle
    finally:
        db.close()
        del db
    return out


def disk_image(state_dir: Path) -> dict[str, dict[str, Any]]:
    """Every RocksDB database under ``state_dir`` (by path relative to it): every column family's rows in key
    order, the offsets family's position row decoded (OFF-8, :data:`EXCLUSIONS`)."""
    image: dict[str, dict[str, Any]] = {}
    for current in sorted(state_dir.rglob("CURRENT")):
        rows = _column_family_rows(current.parent)
        families: dict[str, Any] = {}
        for cf, entries in rows.items():
            if cf == "offsets":
                families[cf] = [(k, decode_position(v) if k == b"position" else v) for k, v in entries]
            else:
                families[cf] = entries
        image[str(current.parent.relative_to(state_dir))] = families
    return image


class PairedMachine(RuleBasedStateMachine):
    """Sends each operation to the implementation (``subject``) and the model and compares the answers; a family's
    machine adds rules. Logical names (``h1``, ``i1``) stand for each side's own handles and iterators."""

    def __init__(self, subject: Any, model: Any, base_dir: Path) -> None:
        super().__init__()
        self.subject = Side("impl", subject, base_dir)
        self.model = Side("model", model, base_dir)
        self.open_handles: list[str] = []
        self.counter = 0

    def fresh_name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def both(self, op: str, payload: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        return self.subject.call(op, payload), self.model.call(op, payload)

    def agree(self, op: str, payload: dict[str, Any],
              normalise: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
              normalise_model: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
              model_op: str | None = None) -> dict[str, Any]:
        """Run ``op`` on both (``model_op`` instead on the model, if given); they must agree (a refusal matches a
        refusal, OPS-4); the model's answer. ``normalise`` applies to both answers, ``normalise_model`` to the
        model's only (each names its exclusion)."""
        actual = self.subject.call(op, payload)
        expected = self.model.call(model_op or op, payload)
        note(f"{op} {payload} -> {expected}" + (f" (the model's {model_op})" if model_op else ""))
        if normalise is not None:
            actual = actual if is_error(actual) else normalise(actual)
            expected = expected if is_error(expected) else normalise(expected)
        if normalise_model is not None and not is_error(expected):
            expected = normalise_model(expected)
        diffs = differences(expected, actual)
        assert not diffs, (f"{op} {payload}: the model ({self.model.adapter.name}) answered {expected}, "
                           f"the implementation ({self.subject.adapter.name}) answered {actual}: " + "; ".join(diffs[:3]))
        return expected

    def agree_ok(self, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        """:meth:`agree`, and the model did not refuse (the machine's own set-up steps)."""
        out = self.agree(op, payload)
        assert not is_error(out), f"{op} {payload} was refused by both: {out}"
        return out

    def open_both(self, payload: dict[str, Any]) -> str | None:
        """Open a store on both sides under one logical handle (None if both refused it)."""
        impl_out, model_out = self.both("store.open", {**payload, "state_dir": "."})
        note(f"store.open {payload} -> {model_out}")
        assert is_error(impl_out) == is_error(model_out), (
            f"store.open {payload}: the model answered {model_out}, the implementation {impl_out}")
        if is_error(model_out):
            return None
        name = self.fresh_name("h")
        self.subject.names[name] = impl_out["handle"]
        self.model.names[name] = model_out["handle"]
        self.open_handles.append(name)
        return name

    def close_both(self, handle: str) -> None:
        """Close a store on both sides (excluded afterwards: KV-12) and compare what they left on disk."""
        self.open_handles.remove(handle)
        self.agree("store.close", {"handle": handle})
        self.compare_disks()

    def compare_disks(self) -> None:
        """Every row of every column family of every RocksDB database under each side's state directory."""
        if self.open_handles:
            return  # a database still open on one side is not read (RocksDB's lock)
        actual, expected = self.on_disk(disk_image(self.subject.dir)), self.on_disk(disk_image(self.model.dir))
        assert set(actual) == set(expected), f"databases on disk: model {sorted(expected)}, implementation {sorted(actual)}"
        for path, families in expected.items():
            mine = actual[path]
            assert set(mine) == set(families), f"{path}: column families: model {sorted(families)}, implementation {sorted(mine)}"
            for cf, rows in families.items():
                assert mine[cf] == rows, f"{path}, column family {cf}: model {rows}\n implementation {mine[cf]}"

    def on_disk(self, image: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """A side's disk image as compared; a family's machine may normalise it (naming the exclusion)."""
        return image

    def teardown(self) -> None:
        try:
            for handle in list(self.open_handles):
                self.both("store.close", {"handle": handle})
                self.open_handles.remove(handle)
        finally:
            shutil.rmtree(self.subject.dir, ignore_errors=True)
            shutil.rmtree(self.model.dir, ignore_errors=True)


def paired_settings() -> tuple[int, int]:
    """(examples, steps) of a paired machine: the profile's (:data:`EXAMPLES`), or KSTATE_PAIRED_EXAMPLES and
    KSTATE_PAIRED_STEPS for a longer run on demand."""
    profile_examples = settings().max_examples
    examples = int(os.environ.get(ENV_EXAMPLES) or EXAMPLES.get(profile_examples, max(3, profile_examples // 8)))
    return examples, int(os.environ.get(ENV_STEPS) or DEFAULT_STEPS)


def require_model(subject: Any, model: Any, ops: tuple[str, ...], store_type: str, backend: str) -> None:
    """Skip unless a model is given and both sides offer ``ops`` and a ``store_type`` store on ``backend``."""
    if model is None:
        pytest.skip("runs only beside a model implementation (kstate conformance --model IMPL)")
    for side, label in ((subject, "the implementation"), (model, "the model")):
        missing = [op for op in ("store.capabilities", *ops) if not side.supports(op)]
        if missing:
            verb = "does not support operation" if side is subject else "lacks the operation"
            pytest.skip(f"{label} {verb} {missing[0]}")
        lacked = capabilities_of(side).lacks(store_type, backend)
        if lacked is not None:
            # What the implementation lacks is absent (no shortfall of its rules); what the model lacks is n/a.
            pytest.skip(lacks_reason(label, lacked) if side is subject else f"{label} builds no {store_type} store on {backend}")


def run_paired(factory: Callable[[], RuleBasedStateMachine], *, derandomize: bool | None = None) -> None:
    """Run a paired machine with :func:`paired_settings`. Shrinking re-runs both implementations' stores hundreds of
    times (minutes): off unless KSTATE_SHRINK=1 asks for a minimal failing sequence, as for the model machines."""
    examples, steps = paired_settings()
    phases = [p for p in settings().phases if p is not Phase.shrink or os.environ.get("KSTATE_SHRINK") == "1"]
    run_state_machine_as_test(  # type: ignore[no-untyped-call,unused-ignore]
        factory,  # type: ignore[arg-type,unused-ignore]
        settings=settings(max_examples=examples, stateful_step_count=steps, phases=phases, deadline=None,
                          derandomize=settings().derandomize if derandomize is None else derandomize,
                          report_multiple_bugs=False,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                                 HealthCheck.data_too_large]),
    )


def iter_exclusions(rules: tuple[str, ...]) -> Iterator[Exclusion]:
    """The exclusions a family's machine applies, in the order given."""
    return (excluded(name) for name in rules)
