"""Model-based state machine: any implementation of the versioned store family against the executable model.

Each example draws a history retention and segment interval small enough that segments are crossed and
expire within a run, then runs rules that put (in order, out of order, at a timestamp already present, as
tombstones), delete, read (``get``, ``get`` as of any time, within and beyond history retention, the KIP-968
versions query in both orders), commit, restart, crash and restore the whole changelog into a fresh store,
comparing the implementation with :mod:`kstate_conformance.models.versioned` after every step (the put
return codes, every read, the changelog records sent). It speaks only the neutral operations, so it runs in
process and through the testee protocol, and skips an implementation without versioned stores.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, rule

from kstate_conformance import rules
from kstate_conformance.capabilities import Capabilities
from kstate_conformance.models import versioned as m
from kstate_conformance.models.kv import Record, headers_to_json
from kstate_conformance.state_machines import BATCH_SIZES, StoreMachine, hex_or_none, lifecycle_rule, run_family_machine

KEYS = st.sampled_from([b"a", b"b", b"\x00\xff"])
ALL_KEYS = (b"a", b"b", b"\x00\xff")
#: Distinct values of different sizes, so that a misplaced value shows; the empty value and the tombstone apart.
VALUES = st.sampled_from([None, b"a", b"bc", b"xyz", b"", None, b"\x00"])
TIMESTAMPS = st.integers(min_value=0, max_value=40) | st.sampled_from([30, 60, 100, 250])
QUERY_TIMES = st.integers(min_value=-2, max_value=45) | st.sampled_from([m.INT64_MIN, m.INT64_MAX, 300])
HEADERS = st.lists(st.tuples(st.sampled_from(["h", "ü"]), st.none() | st.binary(max_size=2)), max_size=2).map(tuple)
#: ``any`` is served as descending, as Kafka's own tests assert (VS-12).
ORDERS = st.sampled_from([m.ASCENDING, m.DESCENDING, m.ANY])


def _show(rows: dict[bytes, bytes]) -> list[tuple[str, str]]:
    return sorted((k.hex(), v.hex()) for k, v in rows.items())


def _read(record: dict[str, Any] | None, with_headers: bool) -> tuple[Any, ...] | None:
    if record is None:
        return None
    base = (record["value"], record["timestamp"], record.get("valid_to"))
    return (*base, [list(p) for p in record.get("headers", [])]) if with_headers else base


def _expected(record: m.VersionedRecord | None, with_headers: bool) -> tuple[Any, ...] | None:
    if record is None:
        return None
    base = (record.value.hex(), record.timestamp, record.valid_to)
    return (*base, headers_to_json(record.headers)) if with_headers else base


class VersionedStoreMachine(StoreMachine[m.VersionedStoreModel]):
    """Drives one versioned store through ``implementation`` and :class:`models.versioned.VersionedStoreModel` side by side."""

    #: VS-14 withholds only the reopens that would meet it: a store whose database holds versions in segments (in
    #: any state a crash may leave it in). Reopens of a store whose versions are all latest values still run, so the
    #: commits, restarts and crashes of VS-17 are checked with VS-14 withheld.
    WITHHOLDABLE: ClassVar[dict[str, str]] = {"VS-14": "restarts and crashes of a store that holds versions in "
                                                       "segments (every reopen that finds segment rows)",
                                              "VS-17": "crashes"}

    def __init__(self, implementation: Any, store_type: str, backend: str, base_dir: Path, capabilities: Capabilities) -> None:
        super().__init__(implementation, store_type, backend, base_dir, capabilities)
        self.with_headers = store_type == m.VERSIONED_HEADERS
        self.logging = True
        self.changelog: list[Record] = []
        self.pending: list[Record] = []
        self.committed: int | None = None
        #: The model after the last commit and after every write since: the states a crash may leave.
        self.crash_candidates: list[m.VersionedStoreModel] = []
        #: The model and committed offset at the last open or clean close: where a crash may roll a store back to
        #: when its commits are not durable (KV-50, VS-17; Kafka's store, KV-67).
        self.durable: tuple[m.VersionedStoreModel | None, int | None] = (None, None)

    # --- plumbing -----------------------------------------------------------------------------------------

    @property
    def vs(self) -> m.VersionedStoreModel:
        return self.store_model

    def on_store(self, op: str, handle: str | None = None, **payload: Any) -> dict[str, Any]:
        return self.ok(op, {"handle": handle or self.handle, **payload})

    def open_store(self, name: str = "store", **extra: Any) -> dict[str, Any]:
        payload = {"store_type": self.start_type, "backend": self.backend, "name": name, "state_dir": str(self.dir),
                   "logging": self.logging, "options": {"history_retention_ms": self.vs.history_retention,
                                                        "segment_interval_ms": self.vs.segment_interval}, **extra}
        return self.call("store.open", payload)

    def log(self, key: bytes, value: bytes | None, timestamp: int, headers: tuple[Any, ...]) -> None:
        if self.logging:
            record = m.changelog_record(key, value, timestamp, headers if self.with_headers else ())
            self.changelog.append(record)
            self.pending.append(record)
        self.crash_candidates.append(self.vs.snapshot())

    def check_changelog(self) -> None:
        out = self.on_store("store.changelog")
        actual = [Record.from_json(r) for r in out["records"]]
        expected, self.pending = self.pending, []
        assert actual == expected, f"changelog records differ:\n store: {actual}\n model: {expected}"

    def restore_into(self, handle: str, model: m.VersionedStoreModel, records: list[Record], batch_size: int) -> None:
        if not records:
            return
        out = self.on_store("store.restore", handle, records=[r.to_json() for r in records], batch_size=batch_size)
        assert out["restored"] == len(records)
        model.restore(records, batch_size)

    def task_commit(self) -> None:
        self.check_changelog()
        offset = len(self.changelog) - 1 if self.changelog else None
        self.commit_changelog_offset(offset)
        self.committed = offset if self.backend == m.ROCKSDB else None
        got = self.committed_offset()
        assert got == self.committed, f"committed offset {got}, expected {self.committed}"
        self.crash_candidates = [self.vs.snapshot()]

    def signature(self, handle: str | None = None) -> list[Any]:
        """What reads show of every key with nothing expired (right after a reopen): to compare with the model."""
        out = []
        for key in ALL_KEYS:
            latest = self.on_store("versioned_store.get", handle, key=key.hex())["record"]
            found = self.on_store("versioned_store.get_versions", handle, key=key.hex(), from_ms=m.INT64_MIN,
                                  to_ms=m.INT64_MAX, order=m.ASCENDING)["records"]
            out.append((key, _read(latest, self.with_headers), [_read(r, self.with_headers) for r in found]))
        return out

    def rows(self) -> dict[bytes, bytes]:
        """The store's data rows from ``store.dump`` (its ``default`` column family)."""
        families = self.on_store("store.dump").get("column_families", {})
        return {bytes.fromhex(k): bytes.fromhex(v) for k, v in families.get("default", [])}

    @staticmethod
    def model_signature(model: m.VersionedStoreModel, with_headers: bool) -> list[Any]:
        return [(key, _expected(model.get(key), with_headers),
                 [_expected(r, with_headers) for r in model.get_versions(key, m.INT64_MIN, m.INT64_MAX, m.ASCENDING)])
                for key in ALL_KEYS]

    # --- setup / teardown -----------------------------------------------------------------------------------

    # Hypothesis prefers the first choices: several versions per segment row, and history that expires, come first.
    @initialize(history_retention=st.sampled_from([25, 10, 1000, 3, 0]), segment_interval=st.sampled_from([10, 4, 50, 1]),
                logging=st.sampled_from([True, True, False]))
    def start(self, history_retention: int, segment_interval: int, logging: bool) -> None:
        self.logging = logging and self.capabilities.logging
        self.model = m.VersionedStoreModel(history_retention, segment_interval, with_headers=self.with_headers)
        out = self.open_store()
        assert "error" not in out, f"opening a fresh versioned store failed: {out}"
        self.handle = out["handle"]
        self.crash_candidates = [self.vs.snapshot()]
        self.durable = (self.vs.snapshot(), self.committed)

    def teardown(self) -> None:
        if self.handle is not None:
            self.call("store.close", {"handle": self.handle})
        shutil.rmtree(self.dir, ignore_errors=True)

    # --- writes ---------------------------------------------------------------------------------------------

    @rule(key=KEYS, value=VALUES, timestamp=TIMESTAMPS, headers=HEADERS)
    def put(self, key: bytes, value: bytes | None, timestamp: int, headers: tuple[Any, ...]) -> None:
        payload: dict[str, Any] = {"key": key.hex(), "value": hex_or_none(value), "timestamp": timestamp}
        if self.with_headers:
            payload["headers"] = headers_to_json(headers)
        out = self.on_store("versioned_store.put", **payload)
        expected = self.vs.put(key, value, timestamp, headers if self.with_headers and value is not None else ())
        self.log(key, value, timestamp, headers if value is not None else ())  # a tombstone logs the context's (VS-26)
        assert out["valid_to"] == expected, f"put({key.hex()}, {hex_or_none(value)}, {timestamp}) returned {out['valid_to']}, model {expected}"

    @rule(key=KEYS, value=VALUES, offset=st.integers(min_value=-1, max_value=1), headers=HEADERS)
    def put_at_the_grace_bound(self, key: bytes, value: bytes | None, offset: int, headers: tuple[Any, ...]) -> None:
        """A put just below, at or just above observed stream time minus the grace period (VS-6)."""
        self.put(key, value, max(0, self.vs.observed - self.vs.history_retention + offset), headers)

    @rule(key=KEYS, timestamp=TIMESTAMPS)
    def delete(self, key: bytes, timestamp: int) -> None:
        out = self.on_store("versioned_store.delete", key=key.hex(), timestamp=timestamp)
        expected = _expected(self.vs.delete(key, timestamp), self.with_headers)
        self.log(key, None, timestamp, ())
        got = _read(out["record"], self.with_headers)
        # VS-10: the deleted version's validTo may be left out (Kafka's MeteredVersionedKeyValueStore.delete answers
        # the inner ValueAndTimestamp: value and timestamp only); every other field is as the model says.
        without_valid_to = None if expected is None else (*expected[:2], None, *expected[3:])
        assert got in (expected, without_valid_to), f"delete({key.hex()}, {timestamp}): {out} != {expected}"

    # --- reads ----------------------------------------------------------------------------------------------

    @rule(key=KEYS)
    def get(self, key: bytes) -> None:
        out = self.on_store("versioned_store.get", key=key.hex())
        expected = _expected(self.vs.get(key), self.with_headers)
        assert _read(out["record"], self.with_headers) == expected, f"get({key.hex()}): {out} != {expected}"

    @rule(key=KEYS, as_of=QUERY_TIMES)
    def get_as_of(self, key: bytes, as_of: int) -> None:
        out = self.on_store("versioned_store.get", key=key.hex(), as_of=as_of)
        expected = _expected(self.vs.get_as_of(key, as_of), self.with_headers)
        assert _read(out["record"], self.with_headers) == expected, (
            f"get({key.hex()}, as_of={as_of}) with observed {self.vs.observed}: {out} != {expected}")

    @rule(key=KEYS, offset=st.integers(min_value=-1, max_value=1))
    def get_as_of_at_the_retention_bound(self, key: bytes, offset: int) -> None:
        """``get(k, asOf)`` just below, at or just above observed stream time minus history retention (VS-9)."""
        self.get_as_of(key, self.vs.observed - self.vs.history_retention + offset)

    @rule(key=KEYS, data=st.data(), order=ORDERS)
    def get_versions_at_version_bounds(self, key: bytes, data: st.DataObject, order: str) -> None:
        """The versions query with bounds at the key's own validFrom/validTo timestamps, give or take one (VS-11)."""
        history = self.vs.keys.get(key)
        edges = sorted({t for v in (history.stored if history else []) for t in (v.valid_from, v.valid_to)}
                       | ({history.latest.timestamp} if history and history.latest else set()) | {0})
        near = st.sampled_from(edges).flatmap(lambda t: st.sampled_from([t - 1, t, t + 1]))
        self.get_versions(key, (data.draw(near, label="from"), data.draw(near, label="to")), order)

    @rule(key=KEYS, bounds=st.tuples(QUERY_TIMES, QUERY_TIMES), order=ORDERS)
    def get_versions(self, key: bytes, bounds: tuple[int, int], order: str) -> None:
        from_ms, to_ms = bounds
        payload = {"handle": self.handle, "key": key.hex(), "from_ms": from_ms, "to_ms": to_ms, "order": order}
        if to_ms < from_ms:
            # VS-11: no versions, or a typed refusal (Kafka: MeteredVersionedKeyValueStore.runMultiVersionedKeyQuery
            # throws IllegalArgumentException); the store is unchanged either way.
            out = self.call("versioned_store.get_versions", payload)
            if set(out) == {"error"}:
                assert out["error"].get("type"), f"get_versions({from_ms} > {to_ms}) refused without a type: {out}"
                return
            assert "error" not in out, out
        else:
            out = self.on_store("versioned_store.get_versions", key=key.hex(), from_ms=from_ms, to_ms=to_ms, order=order)
        got = [_read(r, self.with_headers) for r in out["records"]]
        expected = [_expected(r, self.with_headers) for r in self.vs.get_versions(key, from_ms, to_ms, order)]
        assert got == expected, (f"get_versions({key.hex()}, {from_ms}, {to_ms}, {order}) with observed "
                                 f"{self.vs.observed}: {got} != {expected}")

    # --- lifecycle (commit and restore: StoreMachine's; restarts and crashes twice as likely) -------------------

    def withholds_reopen(self, action: str) -> bool:
        """Whether the reopen of ``action`` is left out: VS-14 withheld and the reopened store may find segment rows."""
        return "VS-14" in self.withheld and self.reopen_finds_segments(action)

    def reopen_finds_segments(self, action: str) -> bool:
        """Whether the store ``action`` reopens may hold versions in segments (VS-14): now, for a restart (it commits
        and closes first); for a crash, in any state since the last commit or the last open, which a crash may leave."""
        states = [self.vs] if action == "restart" else [self.vs, *self.crash_candidates]
        if action == "crash" and self.durable[0] is not None:
            states.append(self.durable[0])
        return any(history.stored for state in states for history in state.keys.values())

    def _reopened(self) -> None:
        out = self.open_store()
        assert "error" not in out, f"reopening failed: {out['error']}"
        self.handle = out["handle"]

    @lifecycle_rule(lambda self: not self.withholds_reopen("restart"), weight=2, batch_size=BATCH_SIZES)
    def restart(self, batch_size: int) -> None:
        """A clean shutdown (commit, close) and a restart: the observed stream time starts again (VER-25); an
        in-memory store is rebuilt from its changelog, as Kafka rebuilds one on every open."""
        self.task_commit()
        self.on_store("store.close")
        self._reopened()
        if self.backend == m.ROCKSDB:
            self.vs.restart()
        else:
            self.vs.wipe()
            self.restore_into(str(self.handle), self.vs, self.changelog if self.logging else [], batch_size)
        self.crash_candidates = [self.vs.snapshot()]
        self.durable = (self.vs.snapshot(), self.committed)

    @lifecycle_rule(StoreMachine.can_crash, lambda self: "VS-17" not in self.withheld and not self.withholds_reopen("crash"),
                    weight=2, batch_size=BATCH_SIZES)
    def crash(self, batch_size: int) -> None:
        """Kill the store and reopen it: it holds a state since the last commit (or, where the reopen found no unclean
        shutdown, the last open's or clean close's with its offset: KV-50, VS-17); replaying the changelog after the
        committed offset then restores what was logged (KIP-1035 at-least-once recovery)."""
        self.on_store("store.crash")
        self.check_changelog()
        self.reopen_after_crash(self.open_store, detects_crash=True, rule_ids=" (VS-17)", may_roll_back=True)
        assert not self.crash_undetected or self.can_dump, "an open after a crash was not refused (VS-17)"
        if self.backend == m.ROCKSDB:
            # The rows tell the states apart exactly; reads alone cannot tell tombstones apart.
            observed = self.rows() if self.can_dump else self.signature()
            durable, offset = self.durable
            since_commit = [] if self.crash_undetected else [(c, self.committed) for c in reversed(self.crash_candidates)]
            rolled_back = [(durable.snapshot(), offset)] if durable is not None else []
            for candidate, candidate_offset in [*since_commit, *rolled_back]:
                candidate.restart()
                seen = candidate.physical_rows() if self.can_dump else self.model_signature(candidate, self.with_headers)
                if seen == observed:
                    self.model = candidate
                    self.committed = candidate_offset
                    break
            else:
                raise AssertionError(f"after a crash the store holds {observed}, which is no state since the last commit")
        else:
            self.vs.wipe()
        committed = self.committed_offset()
        assert committed == self.committed, f"committed offset after a crash: {committed}, expected {self.committed}"
        after = self.changelog[(committed + 1 if committed is not None else 0):] if self.logging else []
        # What a restore writes is durable only once committed: a later crash may lose it.
        self.crash_candidates = [self.vs.snapshot()]
        self.durable = (self.vs.snapshot(), self.committed)
        self.restore_into(str(self.handle), self.vs, after, batch_size)
        self.crash_candidates.append(self.vs.snapshot())

    def restore_into_fresh_store(self, batch_size: int) -> None:
        """Rebuild the whole changelog into a new store; it answers as the model restored from the same records."""
        if not self.logging:
            return
        self.check_changelog()
        self.fresh_stores += 1
        out = self.open_store(name=f"fresh{self.fresh_stores}", logging=False)
        assert "error" not in out, f"opening a fresh store failed: {out['error']}"
        handle = str(out["handle"])
        try:
            fresh = m.VersionedStoreModel(self.vs.history_retention, self.vs.segment_interval,
                                          with_headers=self.with_headers)
            self.restore_into(handle, fresh, self.changelog, batch_size)
            assert self.signature(handle) == self.model_signature(fresh, self.with_headers), "restored store differs"
            for key in ALL_KEYS:
                for as_of in (0, 5, 20, 40, 100):
                    got = self.on_store("versioned_store.get", handle, key=key.hex(), as_of=as_of)["record"]
                    assert _read(got, self.with_headers) == _expected(fresh.get_as_of(key, as_of), self.with_headers)
            assert self.on_store("store.changelog", handle)["records"] == [], "a restore must not write to the changelog"
        finally:
            self.call("store.close", {"handle": handle})

    # --- after every step ---------------------------------------------------------------------------------

    @invariant()
    def latest_and_changelog_match(self) -> None:
        if self.model is None:
            return
        for key in ALL_KEYS:
            out = self.on_store("versioned_store.get", key=key.hex())
            assert _read(out["record"], self.with_headers) == _expected(self.vs.get(key), self.with_headers), (
                f"latest of {key.hex()}: {out}")
        self.check_changelog()
        if self.can_dump:
            observed = self.rows()
            expected = self.vs.physical_rows()
            assert observed == expected, (f"rows: store {_show(observed)}\n model {_show(expected)}")


def _run(implementation: Any, store_type: str, backend: str, base: Path) -> None:
    run_family_machine(implementation, "versioned", "versioned_store.put", store_type, backend,
                       lambda caps: VersionedStoreMachine(implementation, store_type, backend, base, caps), steps=40)


BACKEND_PARAMS = pytest.mark.parametrize("backend", [m.ROCKSDB, m.MEMORY])


@rules("VER-22", "VER-25", "VER-26", "VER-27", "VER-28", "VER-29", "VER-30", "VER-31", "VER-32", "VER-33", "VER-34",
       "VS-1", "VS-2", "VS-3", "VS-5", "VS-6", "VS-7", "VS-8", "VS-9", "VS-10", "VS-11", "VS-12", "VS-13", "VS-14",
       "VS-15", "VS-16", "VS-17", "VS-18", "VS-20")
@BACKEND_PARAMS
def test_versioned_store_behaves_as_the_model(implementation: Any, backend: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A versioned store matches the model through puts, deletes, reads, restarts, crashes and restores."""
    _run(implementation, m.VERSIONED, backend, tmp_path_factory.mktemp("versioned"))


@rules("VER-25", "VER-27", "VER-29", "VER-31", "VER-32", "VER-33", "VS-25", "VS-26", "VS-27", "VS-28", "VS-29")
@BACKEND_PARAMS
def test_versioned_store_with_headers_behaves_as_the_model(implementation: Any, backend: str,
                                                          tmp_path_factory: pytest.TempPathFactory) -> None:
    """A versioned store with headers (KIP-1271, tentative) matches the model; every record carries its headers."""
    _run(implementation, m.VERSIONED_HEADERS, backend, tmp_path_factory.mktemp("versioned-hdr"))
