"""Model-based state machines: any implementation of the session store family against the executable model.

One machine per session store type, run on each backend the implementation offers. Every example draws the
store's retention, segment interval and change-logging, then runs rules that put, remove, merge sessions as
the DSL's session aggregation does (find the overlapping sessions, remove them, put the merged one), read
with ``findSessions``/``fetch``/``fetchSession`` in both directions, restart, crash, restore into a fresh store
and upgrade to the header-aware type, comparing the implementation with :mod:`kstate_conformance.models.session`
after every step: every session in both directions, the changelog records sent, and (RocksDB) the segments.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import (
    initialize,
    invariant,
    rule,
)

from kstate_conformance import rules
from kstate_conformance.models import session as m
from kstate_conformance.models.kv import Context
from kstate_conformance.models.session import ABOVE_EVERY_KEY
from kstate_conformance.state_machines import (
    KEYS,
    MAYBE_KEY,
    StoreMachine,
    hex_or_none,
    lifecycle_rule,
    run_family_machine,
)
from kstate_conformance.strategies import header_lists, nullable_binary

RAW = st.binary(max_size=4)
HEADERS = header_lists(st.sampled_from(["a", "b"]), nullable_binary(2), max_size=2).map(tuple)
#: Session ends across a few segments of the small intervals; durations from a point session to a long one.
ENDS = st.integers(min_value=0, max_value=400) | st.sampled_from([0, 59_999, 60_000, 120_000])
DURATIONS = st.sampled_from([0, 0, 1, 5, 30, 100])
BOUNDS = st.integers(min_value=-5, max_value=450) | st.sampled_from([0, m.INT64_MAX])
OPTIONS = st.builds(
    m.Options,
    retention_ms=st.sampled_from([50, 200, 10_000]),
    segment_interval_ms=st.sampled_from([None, 20, 100]),
    logging=st.sampled_from([True, True, False]),
)


def value_strategy(store_type: str) -> st.SearchStrategy[bytes]:
    """Well-formed aggregates in the store type's layout."""
    if store_type == m.SESSION:
        return RAW
    return st.builds(m.headers_value, RAW, HEADERS)


def _entries(out: dict[str, Any]) -> list[m.Entry]:
    return [(bytes.fromhex(k), int(s), int(e), bytes.fromhex(v)) for k, s, e, v in out["entries"]]


def _show(entries: list[m.Entry]) -> list[tuple[str, int, int, str]]:
    return [(k.hex(), s, e, v.hex()) for k, s, e, v in entries]


def range_payload(key_from: bytes | None, key_to: bytes | None, single: bool) -> dict[str, Any]:
    """The single-key form (``key_to`` null), or a range whose unbounded upper key is sent as a key above every
    key the machine writes (they are at most 3 bytes)."""
    if single:
        return {"key_from": hex_or_none(key_from), "key_to": None}
    return {"key_from": hex_or_none(key_from), "key_to": ABOVE_EVERY_KEY if key_to is None else key_to.hex()}


class SessionStoreMachine(StoreMachine[m.SessionModel]):
    """Drives one session store through ``implementation`` and :class:`models.session.SessionModel` side by side."""

    # --- plumbing ---------------------------------------------------------------------------------------------

    @property
    def sm(self) -> m.SessionModel:
        return self.store_model

    def open_payload(self, store_type: str, **extra: Any) -> dict[str, Any]:
        options: dict[str, Any] = {"retention_ms": self.sm.options.retention_ms}
        if self.sm.options.segment_interval_ms is not None:
            options["segment_interval_ms"] = self.sm.options.segment_interval_ms
        return {"store_type": store_type, "backend": self.backend, "name": "store", "state_dir": str(self.dir),
                "logging": self.sm.options.logging, "options": options, "context": self.sm.context.to_json(), **extra}

    def open_store(self, store_type: str, **extra: Any) -> dict[str, Any]:
        return self.call("store.open", self.open_payload(store_type, **extra))

    def dump_segments(self) -> dict[str, m.Segment]:
        out = self.on_store("store.dump")
        assert "error" not in out, f"dump refused: {out['error']}"
        return {name: {cf: {bytes.fromhex(k): bytes.fromhex(v) for k, v in rows}
                       for cf, rows in cfs.items() if rows and cf in m.DATA_COLUMN_FAMILIES}
                for name, cfs in out["segments"].items()}

    def task_commit(self) -> None:
        self.commit_offset_reached()
        got = self.committed_offset()
        assert got == self.sm.committed, f"committed offset {got}, expected {self.sm.committed}"

    def known_session(self, data: st.DataObject) -> tuple[bytes, int, int]:
        """A session the model holds (visible or not), or a fresh one: removes and lookups hit as often as miss."""
        held: list[tuple[bytes, int, int]]
        if self.backend == m.MEMORY:
            held = sorted((key, start, end) for key, end, start in self.sm.sessions)
        else:
            held = sorted(m.split_store_key(k) for seg in self.sm.segments.values() for rows in seg.values() for k in rows)
        known: bool = bool(held) and data.draw(st.booleans(), label="known")
        if known:
            return data.draw(st.sampled_from(held), label="session")
        key = data.draw(KEYS, label="key")
        end = data.draw(ENDS, label="end")
        return key, max(0, end - data.draw(DURATIONS, label="duration")), end

    # --- setup / teardown ---------------------------------------------------------------------------------------

    @initialize(options=OPTIONS)
    def start(self, options: m.Options) -> None:
        if not self.capabilities.logging:
            options.logging = False
        self.model = m.SessionModel(self.start_type, self.backend, options)
        self.sm.set_context(Context(timestamp=0, topic="in", partition=0, offset=0))
        out = self.open_store(self.start_type)
        assert "error" not in out, f"opening a fresh store failed: {out}"
        self.handle = out["handle"]
        self.sm.open()

    # --- writes ---------------------------------------------------------------------------------------------------

    @rule(key=KEYS, end=ENDS, duration=DURATIONS, data=st.data())
    def put(self, key: bytes, end: int, duration: int, data: st.DataObject) -> None:
        start = end - duration
        value = data.draw(st.none() | value_strategy(self.sm.store_type), label="value")
        self.expect("session_store.put", {"key": key.hex(), "start": start, "end": end, "value": hex_or_none(value)},
                    lambda: self.sm.put(key, start, end, value))

    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        self.remove_session(*self.known_session(data))

    @rule(key=KEYS, timestamp=ENDS, gap=st.sampled_from([0, 5, 50]), data=st.data())
    def merge(self, key: bytes, timestamp: int, gap: int, data: st.DataObject) -> None:
        """The DSL's session aggregation: find the sessions within ``gap`` of the record, remove them, put the
        merged session (Kafka's KStreamSessionWindowAggregate)."""
        result = self.expect("session_store.find_sessions",
                             {"key_from": key.hex(), "key_to": None, "earliest_end": timestamp - gap,
                              "latest_start": timestamp + gap},
                             lambda: self.sm.find_sessions(key, key, timestamp - gap, timestamp + gap, single=True))
        if result is None:
            return
        out, expected = result
        assert _entries(out) == expected, f"find_sessions for a merge: {_show(_entries(out))} != {_show(expected)}"
        start, end = timestamp, timestamp
        for _, s, e, _value in expected:
            start, end = min(start, s), max(end, e)
        if (start, end) != (timestamp, timestamp):
            # Kafka removes every merged session unless the merged window is the record's own point window.
            for _, s, e, _value in expected:
                self.remove_session(key, s, e)
        value = data.draw(value_strategy(self.sm.store_type), label="merged value")
        self.expect("session_store.put", {"key": key.hex(), "start": start, "end": end, "value": value.hex()},
                    lambda: self.sm.put(key, start, end, value))

    def remove_session(self, key: bytes, start: int, end: int) -> None:
        self.expect("session_store.remove", {"key": key.hex(), "start": start, "end": end},
                    lambda: self.sm.remove(key, start, end))

    @rule(timestamp=st.integers(min_value=0, max_value=500), headers=HEADERS)
    def set_context(self, timestamp: int, headers: Any) -> None:
        self.offset += 1
        context = Context(timestamp=timestamp, headers=headers, offset=self.offset, topic="in", partition=0)
        self.ok("store.set_context", {"handle": self.handle, **context.to_json()})
        self.sm.set_context(context)

    # --- reads ------------------------------------------------------------------------------------------------------

    @rule(data=st.data())
    def fetch_session(self, data: st.DataObject) -> None:
        key, start, end = self.known_session(data)
        result = self.expect("session_store.fetch_session", {"key": key.hex(), "start": start, "end": end},
                             lambda: self.sm.fetch_session(key, start, end))
        if result is not None:
            out, expected = result
            assert out["value"] == hex_or_none(expected), f"fetch_session({key.hex()}, {start}, {end})"

    @rule(key_from=MAYBE_KEY, key_to=MAYBE_KEY, single=st.booleans(), earliest_end=BOUNDS, latest_start=BOUNDS,
          backward=st.booleans())
    def find_sessions(self, key_from: bytes | None, key_to: bytes | None, single: bool, earliest_end: int,
                      latest_start: int, backward: bool) -> None:
        if single:
            if key_from is None:
                return
            key_to = key_from
        payload = {**range_payload(key_from, key_to, single), "earliest_end": earliest_end,
                   "latest_start": latest_start, "backward": backward}
        result = self.expect("session_store.find_sessions", payload,
                             lambda: self.sm.find_sessions(key_from, key_to, earliest_end, latest_start, backward, single))
        if result is not None:
            out, expected = result
            assert _entries(out) == expected, f"find_sessions {payload}: {_show(_entries(out))} != {_show(expected)}"

    @rule(key_from=MAYBE_KEY, key_to=MAYBE_KEY, single=st.booleans(), backward=st.booleans())
    def fetch(self, key_from: bytes | None, key_to: bytes | None, single: bool, backward: bool) -> None:
        if single:
            if key_from is None:
                return
            key_to = key_from
        payload = {**range_payload(key_from, key_to, single), "backward": backward}
        result = self.expect("session_store.fetch", payload, lambda: self.sm.fetch(key_from, key_to, backward))
        if result is not None:
            out, expected = result
            assert _entries(out) == expected, f"fetch {payload}: {_show(_entries(out))} != {_show(expected)}"

    # --- lifecycle (commit and restore: StoreMachine's; crashes twice as likely) --------------------------------------

    @lifecycle_rule()
    def restart(self) -> None:
        """A clean shutdown (commit, close) and a restart of the same store type."""
        self.close_cleanly()
        self.reopen_as(self.sm.store_type, self.open_store)

    def upgradable(self) -> bool:
        """Whether the store can be reopened as ``session_with_headers``: a plain one, on a backend that upgrades, of
        an implementation that offers the type."""
        return (self.sm.store_type == m.SESSION and self.capabilities.offers_store_type(m.HEADERS)
                and self.backend in self.capabilities.upgrade)

    @lifecycle_rule(upgradable)
    def upgrade(self) -> None:
        """Reopen a plain session store as ``session_with_headers``: in place on RocksDB (every segment's plain
        family read through the dual column families), rebuilt from the changelog in memory."""
        self.close_cleanly()
        self.reopen_as(m.HEADERS, self.open_store)

    @lifecycle_rule(StoreMachine.can_crash, weight=2, commit_first=st.booleans())
    def crash(self, commit_first: bool) -> None:
        """Kill the store (right after a commit with ``commit_first``, where data and offsets written apart would
        show, KV-50); reopen it; what survived is a state since the last commit (or, where the reopen found no
        unclean shutdown, the last open's or clean close's with its offsets: KV-50, KV-52); replaying the changelog
        after the committed offset restores everything that was logged."""
        if commit_first:
            self.task_commit()
        # The unclean shutdown is found in the segments' databases: a store without a segment has none to show it.
        had_segments = bool(self.sm.segments)
        self.crash_and_reopen(lambda **extra: self.open_store(self.sm.store_type, **extra), had_segments,
                              may_roll_back=True)
        assert not self.crash_undetected or self.can_dump, "an open after a crash was not refused (KV-52)"
        if self.backend == m.ROCKSDB and self.can_dump:
            observed = self.dump_segments()
            assert self.sm.adopt(observed, rolled_back=self.crash_undetected), (
                f"after a crash the store holds {observed}, which is no state since the last commit: "
                f"{[self.sm._dump_of(c) for c in self.sm.crash_candidates]}")
        self.sm.open()
        committed = self.committed_offset()
        assert committed == self.sm.committed, f"committed offset after a crash: {committed}, expected {self.sm.committed}"
        self.restore_all(self.sm.records_after(committed))

    def restore_into_fresh_store(self, batch_size: int) -> None:
        """Rebuild the whole changelog into a new store of the current type; it holds what the model's replay
        holds (retention applied batch by batch) and logs nothing."""
        records = self.sm.changelog
        with self.fresh_store(lambda name: self.open_payload(self.sm.store_type, name=name), records,
                              batch_size) as (_, handle, _out):
            replayed = m.replay(self.sm.store_type, self.backend, self.sm.options, records, batch_size)
            for backward in (False, True):
                actual = _entries(self.ok("session_store.fetch", {"handle": handle, **range_payload(None, None, False),
                                                                  "backward": backward}))
                expected = replayed.fetch(None, None, backward)
                assert actual == expected, f"restored {_show(actual)}, expected {_show(expected)}"
            assert self.ok("store.changelog", {"handle": handle})["records"] == [], "a restore must not log"

    # --- after every step -------------------------------------------------------------------------------------------

    @invariant()
    def contents_match(self) -> None:
        if self.model is None or not self.sm.is_open:
            return
        for backward in (False, True):
            out = self.ok("session_store.fetch", {"handle": self.handle, **range_payload(None, None, False),
                                                  "backward": backward})
            expected = self.sm.fetch(None, None, backward)
            assert _entries(out) == expected, f"fetch all (backward={backward}):\n store {_show(_entries(out))}\n model {_show(expected)}"
        self.check_changelog()
        if self.backend == m.ROCKSDB and self.can_dump:
            observed = self.dump_segments()
            expected_segments = self.sm.dump()
            assert observed == expected_segments, f"segments: store {observed}\n model {expected_segments}"


def _run(implementation: Any, store_type: str, backend: str, base: Path) -> None:
    run_family_machine(implementation, "session", "session_store.put", store_type, backend,
                       lambda caps: SessionStoreMachine(implementation, store_type, backend, base, caps))


BACKEND_PARAMS = pytest.mark.parametrize("backend", [m.ROCKSDB, m.MEMORY])


@rules("SS-4", "SS-5", "SS-6", "SS-7", "SS-12", "SS-13", "SS-14", "SS-15", "SS-17", "SS-22", "SS-24", "SS-26", "SS-32")
@BACKEND_PARAMS
def test_session_store_behaves_as_the_model(implementation: Any, backend: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A session store matches the model through puts, removes, merges, reads, restarts, crashes, restores and
    the upgrade to the header-aware type."""
    _run(implementation, m.SESSION, backend, tmp_path_factory.mktemp("session"))


@rules("SS-26", "SS-27", "SS-30", "SS-34")
@BACKEND_PARAMS
def test_session_store_with_headers_behaves_as_the_model(implementation: Any, backend: str,
                                                         tmp_path_factory: pytest.TempPathFactory) -> None:
    """A session store with headers matches the model (headers in the changelog records and in restore)."""
    _run(implementation, m.HEADERS, backend, tmp_path_factory.mktemp("session-hdr"))
