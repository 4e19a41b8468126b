"""Model-based state machines: any implementation of the key-value store family against the executable model.

One machine per store type, run on each backend the implementation offers. Every example draws the
store's options (change-logging, the record cache and its size, a DSL flush listener), then runs rules
that write, read, iterate, flush, commit, restart, crash, restore into a fresh store and upgrade to a
newer store type, comparing the implementation with :mod:`kstate_conformance.models.kv` after every step:
reads in both directions, the changelog records sent, and (RocksDB) the data column families.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    initialize,
    invariant,
    precondition,
    rule,
)

from kstate_conformance import rules, state_machines
from kstate_conformance.capabilities import Capabilities
from kstate_conformance.models import kv as m
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

RAW = st.binary(max_size=5)
HEADER_VALUES = nullable_binary(3)
HEADERS = header_lists(st.sampled_from(["a", "b", "ü"]), HEADER_VALUES, max_size=2).map(tuple)
NEXT_TYPE = {m.PLAIN: (m.TIMESTAMPED, m.HEADERS), m.TIMESTAMPED: (m.HEADERS,), m.HEADERS: ()}


def value_strategy(store_type: str) -> st.SearchStrategy[bytes]:
    """Well-formed values in the store type's layout."""
    return state_machines.layout_values(store_type, m.PLAIN, m.TIMESTAMPED, RAW, HEADERS, with_headers=m.HEADERS)


OPTIONS = st.builds(
    m.Options,
    logging=st.sampled_from([True, True, False]),
    caching=st.sampled_from([False, False, True]),
    cache_max_bytes=st.sampled_from([0, 120, 300, 700, m.DEFAULT_CACHE_MAX_BYTES]),
    cache_flush_listener=st.booleans(),
)


def _entries(out: dict[str, Any]) -> list[tuple[bytes, bytes]]:
    # A scan never answers a null value (a cached tombstone answered as an entry is CACHE-7's bug): said as such,
    # not as a failure to decode it.
    nulls = [k for k, v in out["entries"] if v is None]
    assert not nulls, f"the scan answered entries with a null value (CACHE-7): keys {nulls}"
    return [(bytes.fromhex(k), bytes.fromhex(v)) for k, v in out["entries"]]


def _show(entries: list[tuple[bytes, bytes]] | dict[bytes, bytes]) -> list[tuple[str, str]]:
    items = entries.items() if isinstance(entries, dict) else entries
    return [(k.hex(), v.hex()) for k, v in items]


class KeyValueStoreMachine(StoreMachine[m.KVModel]):
    """Drives one store through ``implementation`` and :class:`models.kv.KVModel` side by side."""

    iterators = Bundle("iterators")
    WITHHOLDABLE: ClassVar[dict[str, str]] = {"CACHE-7": "reverse scans of a store with a record cache"}

    def __init__(self, implementation: Any, store_type: str, backend: str, base_dir: Path, capabilities: Capabilities) -> None:
        super().__init__(implementation, store_type, backend, base_dir, capabilities)
        self.upgraded_in_place = False

    # --- plumbing -----------------------------------------------------------------------------------------

    @property
    def kv(self) -> m.KVModel:
        return self.store_model

    def open_payload(self, store_type: str, **extra: Any) -> dict[str, Any]:
        options = self.kv.options
        return {
            "store_type": store_type, "backend": self.backend, "name": "store", "state_dir": str(self.dir),
            "logging": options.logging, "caching": options.caching, "cache_max_bytes": options.cache_max_bytes,
            "cache_flush_listener": options.cache_flush_listener, "context": self.kv.context.to_json(), **extra,
        }

    def open_store(self, store_type: str, **extra: Any) -> dict[str, Any]:
        return self.call("store.open", self.open_payload(store_type, **extra))

    def dump_data(self) -> m.Image:
        out = self.on_store("store.dump")
        assert "error" not in out, f"dump refused: {out['error']}"
        return {
            cf: {bytes.fromhex(k): bytes.fromhex(v) for k, v in entries}
            for cf, entries in out["column_families"].items()
            if cf in m.DATA_COLUMN_FAMILIES and entries
        }

    def task_commit(self) -> None:
        """Flush the cache, collect the records it sent, then commit the changelog offset reached (as a task does)."""
        self.ok("store.flush_cache", {"handle": self.handle})
        self.kv.flush()
        self.commit_offset_reached()
        got = self.committed_offset()
        assert got == self.kv.committed, f"committed offset {got}, expected {self.kv.committed}"

    # --- setup / teardown -----------------------------------------------------------------------------------

    @initialize(options=OPTIONS)
    def start(self, options: m.Options) -> None:
        if not self.capabilities.caching:
            options.caching = False
        if not self.capabilities.logging:
            options.logging = False
        self.model = m.KVModel(self.start_type, self.backend, options)
        self.kv.set_context(m.Context(timestamp=0, topic="in", partition=0, offset=0))
        out = self.open_store(self.start_type)
        assert "error" not in out, f"opening a fresh store failed: {out}"
        self.handle = out["handle"]
        self.kv.open()

    # --- writes ---------------------------------------------------------------------------------------------

    @rule(key=KEYS, data=st.data())
    def put(self, key: bytes, data: st.DataObject) -> None:
        value = data.draw(st.none() | value_strategy(self.kv.store_type), label="value")
        self.expect("store.put", {"key": key.hex(), "value": hex_or_none(value)}, lambda: self.kv.put(key, value))

    @rule(key=KEYS, data=st.data())
    def put_if_absent(self, key: bytes, data: st.DataObject) -> None:
        value = data.draw(value_strategy(self.kv.store_type), label="value")
        result = self.expect("store.put_if_absent", {"key": key.hex(), "value": value.hex()},
                             lambda: self.kv.put_if_absent(key, value))
        if result is not None:
            out, expected = result
            assert out["previous"] == hex_or_none(expected)

    @rule(keys=st.lists(KEYS, max_size=4), data=st.data())
    def put_all(self, keys: list[bytes], data: st.DataObject) -> None:
        values = [data.draw(st.none() | value_strategy(self.kv.store_type), label="value") for _ in keys]
        entries = list(zip(keys, values, strict=True))
        self.expect("store.put_all", {"entries": [[k.hex(), hex_or_none(v)] for k, v in entries]},
                    lambda: self.kv.put_all(entries))

    @rule(key=KEYS)
    def delete(self, key: bytes) -> None:
        result = self.expect("store.delete", {"key": key.hex()}, lambda: self.kv.delete(key))
        if result is not None:
            out, expected = result
            assert out["previous"] == hex_or_none(expected)

    @rule(data=st.data())
    def null_key_is_refused(self, data: st.DataObject) -> None:
        op = data.draw(st.sampled_from(["store.put", "store.get", "store.delete", "store.put_if_absent"]))
        out = self.on_store(op, key=None, value=None)
        assert "error" in out, f"{op} with a null key answered {out}"

    @rule(timestamp=TIMESTAMPS, headers=HEADERS)
    def set_context(self, timestamp: int, headers: m.HeaderPairs) -> None:
        self.offset += 1
        context = m.Context(timestamp=timestamp, headers=headers, offset=self.offset, topic="in", partition=0)
        self.ok("store.set_context", {"handle": self.handle, **context.to_json()})
        self.kv.set_context(context)

    # --- reads ----------------------------------------------------------------------------------------------

    @rule(key=KEYS)
    def get(self, key: bytes) -> None:
        result = self.expect("store.get", {"key": key.hex()}, lambda: self.kv.get(key))
        if result is not None:
            out, expected = result
            assert out["value"] == hex_or_none(expected), f"get({key.hex()})"

    @rule(lower=MAYBE_KEY, upper=MAYBE_KEY, reverse=st.booleans())
    def range(self, lower: bytes | None, upper: bytes | None, reverse: bool) -> None:
        reverse = reverse and not self.withholds_reverse_cached_scans()
        op = "store.reverse_range" if reverse else "store.range"
        result = self.expect(op, {"from": hex_or_none(lower), "to": hex_or_none(upper)}, lambda: self.kv.range(lower, upper, reverse))
        if result is not None:
            out, expected = result
            assert _entries(out) == expected, f"{op}({hex_or_none(lower)}, {hex_or_none(upper)}): {_show(_entries(out))} != {_show(expected)}"

    @rule(prefix=KEYS)
    def prefix_scan(self, prefix: bytes) -> None:
        result = self.expect("store.prefix_scan", {"prefix": prefix.hex()}, lambda: self.kv.prefix_scan(prefix))
        if result is not None:
            out, expected = result
            assert _entries(out) == expected, f"prefix_scan({prefix.hex()})"

    # --- iterators (without the cache: interleaved writes under caching are unspecified, CACHE-7) -------------

    @precondition(lambda self: self.model is not None and not self.kv.options.caching and self.capabilities.iterators)
    @rule(target=iterators, lower=st.none() | MAYBE_KEY, upper=st.none() | MAYBE_KEY, reverse=st.booleans())
    def open_iterator(self, lower: bytes | None, upper: bytes | None, reverse: bool) -> tuple[str, m.IteratorModel]:
        kind = "reverse_range" if reverse else "range"
        out = self.ok("store.iterator_open", {"handle": self.handle, "kind": kind, "from": hex_or_none(lower), "to": hex_or_none(upper)})
        if lower is not None and upper is not None and lower > upper:
            model_it = m.IteratorModel(self.backend)  # Kafka's empty iterator
            self.kv.iterators.append(model_it)
        else:
            model_it = self.kv.open_iterator(lower, upper, reverse)
        return out["iterator"], model_it

    @precondition(lambda self: self.model is not None and not self.kv.options.caching and self.capabilities.iterators)
    @rule(reverse=st.booleans(), first=st.integers(min_value=0, max_value=2), key=KEYS, delete=st.booleans(),
          data=st.data())
    def iterate_across_a_write(self, reverse: bool, first: int, key: bytes, delete: bool, data: st.DataObject) -> None:
        """Read part of a full iterator, write (or delete) a key, read the rest (KV-11, KV-41)."""
        kind = "reverse_all" if reverse else "all"
        iterator_id = self.ok("store.iterator_open", {"handle": self.handle, "kind": kind})["iterator"]
        model_it = self.kv.open_iterator(None, None, reverse)
        head = self.ok("store.iterator_next", {"iterator": iterator_id, "max": first}) if first else {"entries": []}
        assert _entries(head) == model_it.next(first)
        if delete:
            self.expect("store.delete", {"key": key.hex()}, lambda: self.kv.delete(key))
        else:
            value = data.draw(value_strategy(self.kv.store_type), label="value")
            self.expect("store.put", {"key": key.hex(), "value": value.hex()}, lambda: self.kv.put(key, value))
        rest = self.ok("store.iterator_next", {"iterator": iterator_id, "max": 1000})
        expected = model_it.next(1000)
        assert _entries(rest) == expected, f"iterating across a write: {_show(_entries(rest))} != {_show(expected)}"
        self.ok("store.iterator_close", {"iterator": iterator_id})
        model_it.closed = True

    @rule(it=iterators, count=st.integers(min_value=1, max_value=4))
    def iterator_next(self, it: tuple[str, m.IteratorModel], count: int) -> None:
        iterator_id, model_it = it
        if model_it.lost:
            return  # an iterator of a killed process is gone with it
        out = self.call("store.iterator_next", {"iterator": iterator_id, "max": count})
        try:
            expected = model_it.next(count)
        except m.Refused:
            assert "error" in out, f"reading a closed iterator answered {out}"
            return
        assert "error" not in out, f"iterator_next refused: {out}"
        assert _entries(out) == expected, f"iterator {iterator_id}: {_show(_entries(out))} != {_show(expected)}"

    @rule(it=iterators)
    def iterator_close(self, it: tuple[str, m.IteratorModel]) -> None:
        iterator_id, model_it = it
        if model_it.lost:
            return
        self.ok("store.iterator_close", {"iterator": iterator_id})
        model_it.closed = True

    # --- lifecycle (commit and restore: StoreMachine's; upgrades and crashes twice as likely, they find the most) ---

    @lifecycle_rule()
    def flush(self) -> None:
        self.ok("store.flush", {"handle": self.handle})
        self.kv.flush()

    @lifecycle_rule()
    def restart(self) -> None:
        """A clean shutdown (commit, close) and a restart of the same store type."""
        self.close_cleanly()
        self.reopen_as(self.kv.store_type, self.open_store)

    def upgradable(self) -> bool:
        """Whether the store can be reopened as a newer type: not yet the newest, on a backend that upgrades."""
        return self.kv.store_type != m.HEADERS and self.backend in self.capabilities.upgrade

    @lifecycle_rule(upgradable, weight=2, data=st.data())
    def upgrade(self, data: st.DataObject) -> None:
        """Reopen as a newer store type: in place on RocksDB (lazy dual column families), rebuilt in memory."""
        new_type = data.draw(st.sampled_from(NEXT_TYPE[self.kv.store_type]), label="new type")
        self.close_cleanly()
        previous = self.kv.store_type
        self.reopen_as(new_type, self.open_store)
        if self.backend == m.ROCKSDB and self.kv.store_type != previous:
            self.upgraded_in_place = True

    @lifecycle_rule(StoreMachine.can_crash, weight=2, commit_first=st.booleans())
    def crash(self, commit_first: bool) -> None:
        """Kill the store (right after a commit with ``commit_first``, where data and offsets written apart would
        show, KV-50); reopen it; what survived is a state since the last commit (or, where the reopen found no
        unclean shutdown, the last open's or clean close's with its offset: KV-50, KV-52); replaying the changelog
        after the committed offset restores everything that was logged (KIP-1035 at-least-once recovery)."""
        if commit_first:
            self.task_commit()
        self.crash_and_reopen(lambda **extra: self.open_store(self.kv.store_type, **extra), detects_crash=True,
                              may_roll_back=True)
        assert not self.crash_undetected or self.can_dump, "an open after a crash was not refused (KV-52)"
        if self.backend == m.ROCKSDB:
            if self.can_dump:
                observed = self.dump_data()
                assert self.kv.adopt_image(observed, rolled_back=self.crash_undetected), (
                    f"after a crash the store holds {observed}, which is no state since the last commit"
                )
            else:
                observed_view = dict(_entries(self.on_store("store.all")))
                assert self.kv.adopt_view(observed_view), "after a crash the store holds no state since the last commit"
        self.kv.open()
        committed = self.committed_offset()
        assert committed == self.kv.committed, f"committed offset after a crash: {committed}, expected {self.kv.committed}"
        self.restore_all(self.kv.records_after(committed))

    def restore_into_fresh_store(self, batch_size: int) -> None:
        """Rebuild the whole changelog into a new store of the current type (RST-1, RST-2, RST-4, RST-6)."""
        records = self.kv.changelog
        with self.fresh_store(lambda name: self.open_payload(self.kv.store_type, name=name, caching=False), records,
                              batch_size) as (_, handle, out):
            assert out["batches"] == -(-len(records) // batch_size)
            expected = sorted(m.replay(self.kv.store_type, records).items())
            actual = _entries(self.ok("store.all", {"handle": handle}))
            assert actual == expected, f"restored {_show(actual)}, expected {_show(expected)}"
            logged = self.ok("store.changelog", {"handle": handle})["records"]
            assert logged == [], "a restore must not write to the changelog"
            if self.kv.options.logging and not self.upgraded_in_place and self.kv.is_open:
                assert dict(expected) == self.kv.below(), "restoring the changelog must reproduce the store"

    def withholds_reverse_cached_scans(self) -> bool:
        """Whether reverse scans are left out: CACHE-7 withheld (a listed Kafka bug) and the store has a cache."""
        return "CACHE-7" in self.withheld and self.kv.options.caching

    # --- after every step ---------------------------------------------------------------------------------

    @invariant()
    def contents_match(self) -> None:
        if self.model is None or not self.kv.is_open:
            return
        for reverse in (False, True)[:1 if self.withholds_reverse_cached_scans() else 2]:
            op = "store.reverse_all" if reverse else "store.all"
            out = self.ok(op, {"handle": self.handle})
            expected = self.kv.all(reverse)
            assert _entries(out) == expected, f"{op}: store {_show(_entries(out))}\n model {_show(expected)}"
        self.check_changelog()
        if self.backend == m.MEMORY:
            count = self.ok("store.approximate_num_entries", {"handle": self.handle})["count"]
            assert count == self.kv.approximate_num_entries()
        elif self.can_dump:
            observed = self.dump_data()
            expected_cfs = self.kv.data_column_families()
            assert observed == expected_cfs, f"column families: store {observed}\n model {expected_cfs}"


def _run(implementation: Any, store_type: str, backend: str, base: Path) -> None:
    run_family_machine(implementation, "key-value", None, store_type, backend,
                       lambda caps: KeyValueStoreMachine(implementation, store_type, backend, base, caps))


BACKEND_PARAMS = pytest.mark.parametrize("backend", [m.ROCKSDB, m.MEMORY])


@rules("CACHE-1", "CACHE-2", "CACHE-3", "CACHE-4", "CACHE-5", "CACHE-6", "CACHE-7", "CACHE-8", "CACHE-9", "CACHE-10",
       "RST-1", "RST-2", "RST-4", "RST-6")
@BACKEND_PARAMS
def test_plain_store_behaves_as_the_model(implementation: Any, backend: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A plain key-value store matches the model through writes, reads, restarts, crashes, restores, upgrades."""
    _run(implementation, m.PLAIN, backend, tmp_path_factory.mktemp("kv-plain"))


@rules("CACHE-1", "CACHE-2", "CACHE-3", "CACHE-6", "CACHE-7", "CACHE-9", "RST-1", "RST-2", "RST-4", "RST-5", "RST-6")
@BACKEND_PARAMS
def test_timestamped_store_behaves_as_the_model(implementation: Any, backend: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A timestamped key-value store matches the model, including the upgrade to the header-aware store."""
    _run(implementation, m.TIMESTAMPED, backend, tmp_path_factory.mktemp("kv-ts"))


@rules("CACHE-1", "CACHE-2", "CACHE-3", "CACHE-6", "CACHE-7", "CACHE-9", "RST-1", "RST-2", "RST-4", "RST-6")
@BACKEND_PARAMS
def test_headers_store_behaves_as_the_model(implementation: Any, backend: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A timestamped key-value store with headers matches the model."""
    _run(implementation, m.HEADERS, backend, tmp_path_factory.mktemp("kv-hdr"))
