"""Model-based state machines: any implementation of the window store family against the executable model.

One machine per window store type, run on each backend the implementation offers (skipped when it offers no
window stores). Every example draws the store's parameters (retention, window size, segment interval,
``retainDuplicates``, change-logging), then runs rules that put (duplicates and tombstones included), read
with every fetch and backward variant, advance stream time past the retention, commit, restart, crash and
restore the changelog into a fresh store, comparing the implementation with
:mod:`kstate_conformance.models.window` after every step: ``all()`` in both directions, the changelog
records sent, and (RocksDB) every segment database's rows under its directory name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, rule

from kstate_conformance import rules, state_machines
from kstate_conformance.models import window as m
from kstate_conformance.state_machines import (
    KEYS,
    MAYBE_KEY,
    TIMESTAMPS,
    StoreMachine,
    hex_or_none,
    lifecycle_rule,
    run_family_machine,
)
from kstate_conformance.strategies import header_lists, nullable_binary

RAW = st.binary(max_size=4)
#: Window starts near the segment boundaries of the drawn intervals, and jumps that expire what came before.
STARTS = st.integers(min_value=0, max_value=130) | st.sampled_from([0, 59_999, 60_000, 60_001, 120_000, 250_000])
#: Fetch bounds: negative and unbounded ones too (Kafka clamps; it never refuses them).
TIMES = STARTS | st.sampled_from([-1, m.INT64_MAX])
HEADERS = header_lists(st.sampled_from(["a", "b"]), nullable_binary(3), max_size=2).map(tuple)


@st.composite
def store_options(draw: st.DrawFn) -> m.Options:
    """Retention small enough that stream time passes it, a window of 1 ms up to the retention (WIN-16); a window of
    0 ms refuses every windowed read that finds an entry (WS-43), so its checks are test_window_store_contract's."""
    retention = draw(st.sampled_from([3, 10, 50, 100, 60_000, 120_000]))
    return m.Options(
        retention_ms=retention,
        window_size_ms=draw(st.integers(min_value=1, max_value=min(retention, 5))),
        retain_duplicates=draw(st.booleans()),
        segment_interval_ms=draw(st.sampled_from([None, None, 1, 7, 20, 60_000])),
        logging=draw(st.sampled_from([True, True, False])),
    )


def value_strategy(store_type: str) -> st.SearchStrategy[bytes]:
    """Well-formed values in the store type's layout."""
    return state_machines.layout_values(store_type, m.WINDOW, m.TIMESTAMPED, RAW, HEADERS, with_headers=m.HEADERS)


def _windowed(out: dict[str, Any]) -> list[m.Entry]:
    return [(bytes.fromhex(k), int(t), bytes.fromhex(v)) for k, t, v in out["entries"]]


def _timed(out: dict[str, Any]) -> list[tuple[int, bytes]]:
    return [(int(t), bytes.fromhex(v)) for t, v in out["entries"]]


def _show(entries: list[Any]) -> list[tuple[Any, ...]]:
    return [tuple(x.hex() if isinstance(x, bytes) else x for x in e) for e in entries]


def segments_of_dump(out: dict[str, Any], store_type: str) -> dict[str, dict[str, dict[bytes, bytes]]]:
    """``store.dump``'s non-empty data column families by segment directory name (LAY-3)."""
    segments: dict[str, dict[str, dict[bytes, bytes]]] = {}
    for name, families in out["segments"].items():
        data = {cf: {bytes.fromhex(k): bytes.fromhex(v) for k, v in rows}
                for cf, rows in families.items() if cf in m.DATA_COLUMN_FAMILIES and rows}
        if data:
            segments[name] = data
    return segments


class WindowStoreMachine(StoreMachine[m.WindowModel]):
    """Drives one window store through ``implementation`` and :class:`models.window.WindowModel` side by side."""

    WITHHOLDABLE: ClassVar[dict[str, str]] = {"WS-35": "refused null-key puts into a store keeping duplicates"}

    # --- plumbing -----------------------------------------------------------------------------------------

    @property
    def win(self) -> m.WindowModel:
        return self.store_model

    def open_payload(self, name: str = "store", **extra: Any) -> dict[str, Any]:
        return {"store_type": self.start_type, "backend": self.backend, "name": name, "state_dir": str(self.dir),
                "logging": self.win.options.logging, "options": self.win.options.to_json(),
                "context": self.win.context.to_json(), **extra}

    def open_store(self, **extra: Any) -> dict[str, Any]:
        return self.call("store.open", self.open_payload(**extra))

    def dump_segments(self, handle: str | None = None) -> dict[str, dict[str, dict[bytes, bytes]]]:
        out = self.call("store.dump", {"handle": handle or self.handle})
        assert "error" not in out, f"dump refused: {out['error']}"
        assert "segments" in out, f"a window store dumps by segment, got {sorted(out)}"
        return segments_of_dump(out, self.start_type)

    def expected_segments(self, model: m.WindowModel) -> dict[str, dict[str, dict[bytes, bytes]]]:
        return {name: {m.HOME_CF[self.start_type]: rows} for name, rows in model.segment_names().items()}

    def task_commit(self) -> None:
        self.ok("store.flush", {"handle": self.handle})
        self.commit_offset_reached()

    # --- setup / teardown -----------------------------------------------------------------------------------

    @initialize(options=store_options())
    def start(self, options: m.Options) -> None:
        if not self.capabilities.logging:
            options.logging = False
        self.model = m.WindowModel(self.start_type, self.backend, options)
        self.win.set_context(m.Context(timestamp=0, topic="in", partition=0, offset=0))
        out = self.open_store()
        assert "error" not in out, f"opening a fresh {self.start_type} store with {options} failed: {out}"
        self.handle = out["handle"]
        self.win.open()

    # --- writes ---------------------------------------------------------------------------------------------

    @rule(key=KEYS, start=STARTS, data=st.data())
    def put(self, key: bytes, start: int, data: st.DataObject) -> None:
        value = data.draw(value_strategy(self.start_type), label="value")
        self.expect("window_store.put", {"key": key.hex(), "value": value.hex(), "window_start": start},
                    lambda: self.win.put(key, value, start))

    @rule(key=KEYS, start=STARTS, data=st.data())
    def put_again(self, key: bytes, start: int, data: st.DataObject) -> None:
        """Two writes to one window: an update, or a duplicate with its own seqnum (WIN-1)."""
        for _ in range(2):
            value = data.draw(value_strategy(self.start_type), label="value")
            self.expect("window_store.put", {"key": key.hex(), "value": value.hex(), "window_start": start},
                        lambda: self.win.put(key, value, start))  # noqa: B023 - called at once

    @rule(key=KEYS, start=STARTS)
    def put_tombstone(self, key: bytes, start: int) -> None:
        """A null put: a delete, or with duplicates a no-op in the store that still logs a tombstone."""
        self.expect("window_store.put", {"key": key.hex(), "value": None, "window_start": start},
                    lambda: self.win.put(key, None, start))

    @rule(key=KEYS, delta=st.sampled_from([-1, 0, 1, 2]), data=st.data())
    def put_at_the_retention_edge(self, key: bytes, delta: int, data: st.DataObject) -> None:
        """A late put right at the edge of the retention, ``T - R + delta``: kept, clamped or dropped (WS-7, WS-17)."""
        start = self.win.observed - self.win.retention + delta
        if start < 0:
            return
        value = data.draw(value_strategy(self.start_type), label="value")
        self.expect("window_store.put", {"key": key.hex(), "value": value.hex(), "window_start": start},
                    lambda: self.win.put(key, value, start))

    @rule(key=KEYS, delta=st.sampled_from([-1, 0, 1]))
    def fetch_at_the_retention_edge(self, key: bytes, delta: int) -> None:
        """Reads right at ``T - R + 1``, where every fetch clamps (WS-10, WS-11, WS-19)."""
        time = max(0, self.win.observed - self.win.retention + delta)
        self.fetch(key, time)
        self.fetch_range(key, time, time + 1, False)

    @rule()
    def put_null_key(self) -> None:
        """Refused at a live window; at an expired one it is test_a_null_key_put_into_an_expired_window_logs_nothing's
        (Kafka's in-memory store counts a seqnum there, WS-24)."""
        if "WS-35" in self.withheld and self.win.options.retain_duplicates:
            return
        out = self.on_store("window_store.put", key=None, value="00", window_start=max(0, self.win.observed))
        assert "error" in out, f"a put with a null key answered {out}"

    @rule(timestamp=TIMESTAMPS)
    def set_context(self, timestamp: int) -> None:
        self.offset += 1
        context = m.Context(timestamp=timestamp, offset=self.offset, topic="in", partition=0)
        self.ok("store.set_context", {"handle": self.handle, **context.to_json()})
        self.win.set_context(context)

    # --- reads ----------------------------------------------------------------------------------------------

    @rule(key=KEYS, time=STARTS)
    def fetch(self, key: bytes, time: int) -> None:
        result = self.expect("window_store.fetch", {"key": key.hex(), "time": time}, lambda: self.win.fetch(key, time))
        if result is not None:
            out, expected = result
            assert out["value"] == hex_or_none(expected), f"fetch({key.hex()}, {time}): {out['value']} != {hex_or_none(expected)}"

    @rule(key=KEYS, time_from=TIMES, time_to=TIMES, backward=st.booleans())
    def fetch_range(self, key: bytes, time_from: int, time_to: int, backward: bool) -> None:
        payload = {"key": key.hex(), "from_ms": time_from, "to_ms": time_to, "backward": backward}
        result = self.expect("window_store.fetch_range", payload,
                             lambda: self.win.fetch_range(key, time_from, time_to, backward))
        if result is not None:
            out, expected = result
            assert _timed(out) == expected, f"fetch_range {payload}: {_show(_timed(out))} != {_show(expected)}"

    @rule(key_from=MAYBE_KEY, key_to=MAYBE_KEY, time_from=TIMES, time_to=TIMES, backward=st.booleans())
    def fetch_keys(self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int, backward: bool) -> None:
        payload = {"key_from": hex_or_none(key_from), "key_to": hex_or_none(key_to), "from_ms": time_from, "to_ms": time_to,
                   "backward": backward}
        result = self.expect("window_store.fetch_keys", payload,
                             lambda: self.win.fetch_keys(key_from, key_to, time_from, time_to, backward))
        if result is not None:
            out, expected = result
            assert _windowed(out) == expected, f"fetch_keys {payload}: {_show(_windowed(out))} != {_show(expected)}"

    @rule(time_from=TIMES, time_to=TIMES, backward=st.booleans())
    def fetch_all(self, time_from: int, time_to: int, backward: bool) -> None:
        payload = {"from_ms": time_from, "to_ms": time_to, "backward": backward}
        result = self.expect("window_store.fetch_all", payload,
                             lambda: self.win.fetch_all(time_from, time_to, backward))
        if result is not None:
            out, expected = result
            assert _windowed(out) == expected, f"fetch_all {payload}: {_show(_windowed(out))} != {_show(expected)}"

    # --- lifecycle (commit and restore: StoreMachine's; restarts and crashes twice as likely) -------------------

    @lifecycle_rule()
    def flush(self) -> None:
        self.ok("store.flush", {"handle": self.handle})

    @lifecycle_rule(weight=2)
    def restart(self) -> None:
        """A clean close and a reopen: RocksDB keeps its segments but forgets the stream time and the seqnums;
        an in-memory store is rebuilt from its changelog (WIN-1, RST-1)."""
        self.close_cleanly()
        out = self.open_store()
        assert "error" not in out, f"reopening failed: {out['error']}"
        self.handle = out["handle"]
        self.win.open()
        if self.backend == m.MEMORY:
            self.restore_all(self.win.records_after(None))

    @lifecycle_rule(StoreMachine.can_crash, weight=2, commit_first=st.booleans())
    def crash(self, commit_first: bool) -> None:
        """Kill the store (right after a commit with ``commit_first``, where data and offsets written apart would
        show, KV-50) and reopen it; each segment holds a state since the last commit; replaying the changelog after
        the committed offset gives back every logged write (KIP-1035 at-least-once recovery)."""
        if commit_first:
            self.task_commit()
        self.crash_and_reopen(self.open_store, detects_crash=False)
        if self.backend == m.ROCKSDB:
            if self.can_dump:
                observed = self.dump_segments()
                by_id = self._segments_by_id(observed)
                assert self.win.adopt_segments(by_id), (
                    f"after a crash the store holds {observed}, which is no state since the last commit")
            else:
                observed_rows = _windowed(self.ok("window_store.all", {"handle": self.handle}))
                assert self.win.adopt_view(observed_rows), (
                    f"after a crash the store holds {_show(observed_rows)}, which is no state since the last commit")
        self.win.open()
        committed = self.committed_offset()
        assert committed in (None, self.win.committed), (
            f"committed offset after a crash: {committed}, expected {self.win.committed} (or none known)")
        self.restore_all(self.win.records_after(committed))

    def _segments_by_id(self, observed: dict[str, dict[str, dict[bytes, bytes]]]) -> m.Segments:
        interval = self.win.options.interval
        home = m.HOME_CF[self.start_type]
        out: m.Segments = {}
        for name, families in observed.items():
            prefix = f"{self.win.name}."
            assert name.startswith(prefix), f"segment directory {name!r} is not named <store>.<segment start>"
            start = int(name[len(prefix):])
            assert start % interval == 0, f"segment directory {name!r} is not a multiple of the interval {interval}"
            assert set(families) == {home}, f"segment {name} keeps rows in {sorted(families)}, not {home}"
            out[start // interval] = families[home]
        return out

    def restore_into_fresh_store(self, batch_size: int) -> None:
        """Rebuild the whole changelog into a new store of the same type and parameters (RST-1, RST-2)."""
        records = self.win.changelog
        with self.fresh_store(lambda name: self.open_payload(name=name, logging=False), records,
                              batch_size) as (name, handle, _out):
            expected = m.replay(self.win, records, batch_size)
            expected.name = name
            for backward in (False, True):
                actual = _windowed(self.ok("window_store.all", {"handle": handle, "backward": backward}))
                assert actual == expected.all(backward), (
                    f"restored all(backward={backward}): {_show(actual)}\n expected {_show(expected.all(backward))}")
            assert self.ok("store.changelog", {"handle": handle})["records"] == [], "a restore must not log"
            if self.can_dump and self.backend == m.ROCKSDB:
                assert self.dump_segments(handle) == self.expected_segments(expected), "restored segments differ"

    # --- after every step ---------------------------------------------------------------------------------

    @invariant()
    def contents_match(self) -> None:
        if self.model is None or not self.win.is_open:
            return
        for backward in (False, True):
            out = self.ok("window_store.all", {"handle": self.handle, "backward": backward})
            expected = self.win.all(backward)
            assert _windowed(out) == expected, (
                f"all(backward={backward}): store {_show(_windowed(out))}\n model {_show(expected)}")
        self.check_changelog()
        if self.backend == m.ROCKSDB and self.can_dump:
            observed = self.dump_segments()
            expected_segments = self.expected_segments(self.win)
            assert observed == expected_segments, f"segments: store {observed}\n model {expected_segments}"


def _run(implementation: Any, store_type: str, backend: str, base: Path) -> None:
    run_family_machine(implementation, "window", "window_store.put", store_type, backend,
                       lambda caps: WindowStoreMachine(implementation, store_type, backend, base, caps))


BACKEND_PARAMS = pytest.mark.parametrize("backend", [m.ROCKSDB, m.MEMORY])


@rules("RST-1", "RST-2", "WS-4", "WS-6", "WS-7", "WS-8", "WS-11", "WS-12", "WS-13", "WS-14", "WS-15", "WS-17", "WS-18", "WS-22", "WS-23", "WS-25", "WS-26", "WS-30")
@BACKEND_PARAMS
def test_window_store_behaves_as_the_model(implementation: Any, backend: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A plain window store matches the model through puts, fetches, expiry, restarts, crashes and restores."""
    _run(implementation, m.WINDOW, backend, tmp_path_factory.mktemp("win-plain"))


@rules("RST-1", "RST-2", "WS-4", "WS-6", "WS-7", "WS-8", "WS-11", "WS-12", "WS-13", "WS-14", "WS-15", "WS-17", "WS-18", "WS-22", "WS-23", "WS-25", "WS-26", "WS-30")
@BACKEND_PARAMS
def test_timestamped_window_store_behaves_as_the_model(implementation: Any, backend: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A timestamped window store matches the model (timestamps from the value in its changelog records)."""
    _run(implementation, m.TIMESTAMPED, backend, tmp_path_factory.mktemp("win-ts"))


@rules("RST-1", "RST-2", "WS-4", "WS-6", "WS-7", "WS-8", "WS-11", "WS-12", "WS-13", "WS-14", "WS-15", "WS-17", "WS-18", "WS-22", "WS-23", "WS-25", "WS-26", "WS-30")
@BACKEND_PARAMS
def test_headers_window_store_behaves_as_the_model(implementation: Any, backend: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A timestamped window store with headers matches the model."""
    _run(implementation, m.HEADERS, backend, tmp_path_factory.mktemp("win-hdr"))
