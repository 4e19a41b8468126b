"""The store-family machines of the paired runs (:mod:`kstate_conformance.paired`): each draws a sequence of
operations on one store and sends every one to the implementation and to the model; the answers, the changelog
records and the rows left on disk after each close must agree. Known differences of Kafka are excluded by rule.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, consumes, initialize, invariant, precondition, rule

from kstate_conformance import store_types as types
from kstate_conformance.models.kv import headers_to_json, headers_value, timestamped_value
from kstate_conformance.models.session import headers_value as aggregation_with_headers
from kstate_conformance.paired import PairedMachine, excluded
from kstate_conformance.state_machines import KEYS, MAYBE_KEY, TIMESTAMPS, hex_or_none
from kstate_conformance.strategies import header_lists, nullable_binary

RAW = st.binary(max_size=4)
HEADERS = header_lists(st.sampled_from(["a", "b", "ü"]), nullable_binary(2), max_size=2).map(tuple)
TOPICS = st.sampled_from(["in", "in", "other"])
CACHE_SIZES = st.sampled_from([0, 120, 300, 700, 10 * 1024 * 1024])
#: The changelog topic of the store named ``store`` of application ``app`` (the neutral defaults).
CHANGELOG = "app-store-changelog"


def stored_values(store_type: str) -> st.SearchStrategy[bytes]:
    """Values in the store type's stored layout only (CL-1, WS-24: see the exclusions)."""
    excluded("CL-1")
    if store_type in (types.KV, types.WINDOW, types.SESSION):
        return RAW
    if store_type == types.SESSION_WITH_HEADERS:
        return st.builds(aggregation_with_headers, RAW, HEADERS)
    if store_type in (types.TIMESTAMPED_KV, types.TIMESTAMPED_WINDOW):
        return st.builds(timestamped_value, RAW, TIMESTAMPS)
    if store_type in (types.TIMESTAMPED_KV_WITH_HEADERS, types.TIMESTAMPED_WINDOW_WITH_HEADERS):
        return st.builds(headers_value, RAW, TIMESTAMPS, HEADERS)
    raise types.UnknownStoreTypeError(store_type, "paired stored values")


class StorePair(PairedMachine):
    """What the key-value and window pairs share: the record context, the changelog, commits, restarts, restores."""

    family_ops: tuple[str, ...] = ()

    def __init__(self, subject: Any, model: Any, base_dir: Path, store_type: str, backend: str) -> None:
        super().__init__(subject, model, base_dir)
        self.store_type = store_type
        self.backend = backend
        self.handle: str | None = None
        self.open_options: dict[str, Any] = {}
        self.logged: list[dict[str, Any]] = []
        self.offset = 0
        self.context: dict[str, Any] = {"timestamp": 0, "topic": "in", "partition": 0, "offset": 0, "headers": []}

    def payload(self, **extra: Any) -> dict[str, Any]:
        return {"store_type": self.store_type, "backend": self.backend, "name": "store", **self.open_options,
                "context": self.context, **extra}

    def on_store(self, op: str, **payload: Any) -> dict[str, Any]:
        return self.agree(op, {"handle": self.handle, **payload})

    def open_store(self) -> None:
        handle = self.open_both(self.payload())
        assert handle is not None, f"both refused to open {self.payload()}"
        self.handle = handle
        if self.backend == "memory" and self.logged:
            # Kafka rebuilds an in-memory store from its changelog whenever it is opened again.
            self.on_store("store.restore", records=self.logged, batch_size=3)

    # --- after every step ---------------------------------------------------------------------------------

    @invariant()
    def changelogs_agree(self) -> None:
        """The records each side's change-logging layer sent since the last step are the same (CL-1, CL-2)."""
        if self.handle is not None:
            self.logged += self.on_store("store.changelog").get("records", [])

    # --- shared rules -------------------------------------------------------------------------------------

    @rule(timestamp=TIMESTAMPS, headers=HEADERS, topic=TOPICS, partition=st.integers(min_value=0, max_value=2))
    def set_context(self, timestamp: int, headers: tuple[tuple[str, bytes | None], ...], topic: str, partition: int) -> None:
        # Two topics and three partitions: the position rows differ in order only (OFF-8, normalised).
        excluded("OFF-8")
        self.offset += 1
        self.context = {"timestamp": timestamp, "headers": headers_to_json(headers), "topic": topic,
                        "partition": partition, "offset": self.offset}
        self.on_store("store.set_context", **self.context)

    @rule()
    def flush(self) -> None:
        self.on_store("store.flush")

    @rule()
    def commit(self) -> None:
        """As a task commits: flush the cache, then commit the changelog offset reached (never ahead: KV-57)."""
        excluded("KV-57")
        self.on_store("store.flush_cache")
        self.changelogs_agree()
        offset = len(self.logged) - 1 if self.logged else None
        self.on_store("store.commit", changelog_offsets=[[CHANGELOG, 0, offset]])
        self.on_store("store.committed_offset", topic=CHANGELOG, partition=0)

    def commit_and_close(self, handle: str, offset: int | None, commit: bool = True) -> None:
        """A shutdown: the task commits ``offset`` (unless ``commit`` is False), then closes the store; the rows
        on disk are compared, the position row's presence included (KV-56, KV-63: only a commit writes it)."""
        self.agree("store.flush_cache", {"handle": handle})
        self.agree("store.changelog", {"handle": handle})
        if commit:
            self.agree("store.commit", {"handle": handle, "changelog_offsets": [[CHANGELOG, 0, offset]]})
        self.close_both(handle)

    @rule(commit=st.booleans())
    def restart(self, commit: bool) -> None:
        """Commit (or not), close (the rows on disk compared), reopen the same store."""
        excluded("KV-12")
        assert self.handle is not None
        self.on_store("store.flush_cache")
        self.changelogs_agree()
        handle, self.handle = self.handle, None
        self.commit_and_close(handle, len(self.logged) - 1 if self.logged else None, commit)
        self.open_store()

    @rule(batch_size=st.integers(min_value=1, max_value=4))
    def restore_into_a_fresh_store(self, batch_size: int) -> None:
        """The changelog so far restored into a fresh store of the same type: its contents, its rows (RST-1)."""
        self.changelogs_agree()
        fresh = self.open_both(self.payload(name=self.fresh_name("fresh"), caching=False))
        assert fresh is not None
        self.agree("store.restore", {"handle": fresh, "records": self.logged, "batch_size": batch_size})
        self.read_everything(fresh)
        self.commit_and_close(fresh, len(self.logged) - 1 if self.logged else None)

    def read_everything(self, handle: str) -> None:
        raise NotImplementedError

    def teardown(self) -> None:
        try:
            if self.handle is not None:
                self.on_store("store.flush_cache")
                self.changelogs_agree()
                handle, self.handle = self.handle, None
                self.commit_and_close(handle, len(self.logged) - 1 if self.logged else None)
        finally:
            super().teardown()


class KeyValuePair(StorePair):
    """A key-value store of one type on one backend, drawn options: change-logging, the record cache and its size."""

    family_ops = ("store.open", "store.put", "store.put_all", "store.get_typed", "store.iterator_open")
    iterators = Bundle("iterators")

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.live_iterators: set[str] = set()
        self.values = stored_values(self.store_type)
        self.written: set[bytes] = set()

    @initialize(logging=st.sampled_from([True, True, False]), caching=st.sampled_from([False, False, True]),
                cache_max_bytes=CACHE_SIZES)
    def start(self, logging: bool, caching: bool, cache_max_bytes: int) -> None:
        self.open_options = {"logging": logging, "caching": caching, "cache_max_bytes": cache_max_bytes}
        self.open_store()

    # --- writes -------------------------------------------------------------------------------------------

    @rule(key=KEYS, data=st.data())
    def put(self, key: bytes, data: st.DataObject) -> None:
        self.on_store("store.put", key=key.hex(), value=hex_or_none(data.draw(st.none() | self.values, label="value")))
        self.written.add(key)

    @rule(data=st.data())
    def put_if_absent(self, data: st.DataObject) -> None:
        key = self.some_key(data, "key") or b""
        self.on_store("store.put_if_absent", key=key.hex(), value=data.draw(self.values, label="value").hex())
        self.written.add(key)

    @rule(keys=st.lists(st.none() | KEYS, max_size=4).filter(lambda ks: None not in ks[1:]) , data=st.data())
    def put_all(self, keys: list[bytes | None], data: st.DataObject) -> None:
        entries = [[hex_or_none(k), hex_or_none(data.draw(st.none() | self.values, label="value"))] for k in keys]
        self.on_store("store.put_all", entries=entries)

    @rule(key=KEYS)
    def delete(self, key: bytes) -> None:
        self.on_store("store.delete", key=key.hex())

    @rule(op=st.sampled_from(["store.put", "store.get", "store.delete", "store.put_if_absent"]))
    def null_key(self, op: str) -> None:
        self.on_store(op, key=None, value=None)

    # --- reads --------------------------------------------------------------------------------------------

    @rule(data=st.data())
    def get(self, data: st.DataObject) -> None:
        self.on_store("store.get", key=hex_or_none(self.some_key(data, "key")))

    @rule(key=KEYS, fields=st.lists(st.sampled_from(["value", "timestamp", "headers"]), unique=True, min_size=1))
    def get_typed(self, key: bytes, fields: list[str]) -> None:
        self.on_store("store.get_typed", key=key.hex(), fields=sorted(fields))

    def reverse_scan(self, op: str, payload: dict[str, Any]) -> None:
        """A reverse scan; on a caching store compared with the model's forward scan reversed ("CACHE-7 reverse")."""
        if not self.open_options.get("caching"):
            self.agree(op, payload)
            return
        excluded("CACHE-7 reverse")
        forward = {"store.reverse_all": "store.all", "store.reverse_range": "store.range"}[op]
        self.agree(op, payload, model_op=forward, normalise_model=lambda out: {**out, "entries": out["entries"][::-1]})

    def some_key(self, data: st.DataObject, label: str) -> bytes | None:
        """A key written before half the time (so that bounds meet data, KV-9), else any key or null."""
        keys = sorted(self.written)
        return data.draw(st.sampled_from(keys) | MAYBE_KEY if keys else MAYBE_KEY, label=label)

    @rule(reverse=st.booleans(), data=st.data())
    def range(self, reverse: bool, data: st.DataObject) -> None:
        lower, upper = self.some_key(data, "from"), self.some_key(data, "to")
        bounds = {"from": hex_or_none(lower), "to": hex_or_none(upper)}
        if reverse:
            self.reverse_scan("store.reverse_range", {"handle": self.handle, **bounds})
        else:
            self.on_store("store.range", **bounds)

    @rule(prefix=KEYS)
    def prefix_scan(self, prefix: bytes) -> None:
        self.on_store("store.prefix_scan", prefix=prefix.hex())

    @rule()
    def count(self) -> None:
        excluded("KV-15")
        if self.backend == "memory":
            self.on_store("store.approximate_num_entries")

    def read_everything(self, handle: str) -> None:
        self.agree("store.all", {"handle": handle})
        self.reverse_scan("store.reverse_all", {"handle": handle})

    @invariant()
    def contents_agree(self) -> None:
        """Everything, both ways; and the range up to the highest key written, whose bound is inclusive (KV-9)."""
        if self.handle is not None:
            self.read_everything(self.handle)
            if self.written:
                self.on_store("store.range", **{"from": None, "to": max(self.written).hex()})

    # --- iterators (none across a write on a caching store: CACHE-7) --------------------------------------

    @precondition(lambda self: self.handle is not None and not self.open_options.get("caching"))
    @rule(target=iterators, kind=st.sampled_from(["range", "reverse_range", "all", "reverse_all", "prefix_scan"]),
          lower=MAYBE_KEY, upper=MAYBE_KEY)
    def open_iterator(self, kind: str, lower: bytes | None, upper: bytes | None) -> str:
        excluded("CACHE-7")
        payload: dict[str, Any] = {"kind": kind}
        if kind in ("range", "reverse_range"):
            payload.update({"from": hex_or_none(lower), "to": hex_or_none(upper)})
        elif kind == "prefix_scan":
            payload["prefix"] = (lower or b"").hex()
        name = self.fresh_name("i")
        model_out = self.agree("store.iterator_open", {"handle": self.handle, **payload},
                               normalise=lambda out: {k: v for k, v in out.items() if k != "iterator"})
        if "error" in model_out:
            return name  # refused by both (an in-memory prefix scan of an unboundable prefix, KV-14): never live
        self.subject.names[name] = self.subject.last["iterator"]
        self.model.names[name] = self.model.last["iterator"]
        self.live_iterators.add(name)
        return name

    @rule(it=iterators, count=st.integers(min_value=1, max_value=3))
    def iterator_next(self, it: str, count: int) -> None:
        if it in self.live_iterators:  # iterators of a closed store are not read (KV-12)
            self.agree("store.iterator_next", {"iterator": it, "max": count})

    @rule(it=iterators)
    def iterator_peek(self, it: str) -> None:
        if it in self.live_iterators:
            self.agree("store.iterator_peek_next_key", {"iterator": it})

    @rule(it=consumes(iterators))
    def iterator_close(self, it: str) -> None:
        if it in self.live_iterators:
            self.agree("store.iterator_close", {"iterator": it})
            self.live_iterators.discard(it)

    @rule(commit=st.booleans())
    def restart(self, commit: bool) -> None:
        for it in sorted(self.live_iterators):
            self.agree("store.iterator_close", {"iterator": it})
        self.live_iterators.clear()
        super().restart(commit)


#: Window starts: small ones, and ones a segment interval apart (Kafka's default interval is max(retention / 2,
#: 60 s)), so that writes land in several segments and old ones expire.
WINDOW_STARTS = st.sampled_from([0, 1, 5, 59_999, 60_000, 61_000]) | st.integers(min_value=0, max_value=400_000)
TIME_BOUNDS = st.sampled_from([0, 1, 60_000, 400_000]) | st.integers(min_value=0, max_value=400_000)


class WindowPair(StorePair):
    """A window store of one type on one backend; drawn: change-logging, retention, window size, duplicates."""

    family_ops = ("store.open", "window_store.put", "window_store.fetch_keys", "window_store.all")

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.values = stored_values(self.store_type)
        self.written: list[tuple[bytes, int]] = []

    @initialize(logging=st.sampled_from([True, True, False]), retention_ms=st.sampled_from([60_000, 120_000, 200_000]),
                window_size_ms=st.sampled_from([1, 10, 1000]), retain_duplicates=st.booleans())
    def start(self, logging: bool, retention_ms: int, window_size_ms: int, retain_duplicates: bool) -> None:
        excluded("WS-2")  # size from 1 ms, Kafka's default segment interval
        excluded("WS-33")  # no record cache
        self.open_options = {"logging": logging, "caching": False, "options": {
            "retention_ms": retention_ms, "window_size_ms": window_size_ms, "retain_duplicates": retain_duplicates}}
        self.open_store()

    def some_key(self, data: st.DataObject) -> bytes:
        """A key written before, most of the time, so that reads meet data."""
        keys = sorted({k for k, _ in self.written})
        return data.draw(st.sampled_from(keys) | KEYS if keys else KEYS, label="key")

    def some_time(self, data: st.DataObject) -> int:
        """A window start written before (or one ms either side), most of the time."""
        times = sorted({t + d for _, t in self.written for d in (-1, 0, 1) if t + d >= 0})
        return data.draw(st.sampled_from(times) | TIME_BOUNDS if times else TIME_BOUNDS, label="time")

    @rule(key=KEYS, window_start=WINDOW_STARTS, data=st.data())
    def put(self, key: bytes, window_start: int, data: st.DataObject) -> None:
        excluded("WS-24")
        again = bool(self.written) and data.draw(st.booleans(), label="again")
        if again:
            key, window_start = data.draw(st.sampled_from(self.written), label="written")
        value = data.draw(st.none() | self.values, label="value")
        self.on_store("window_store.put", key=key.hex(), value=hex_or_none(value), window_start=window_start)
        self.written.append((key, window_start))

    @rule(data=st.data())
    def fetch(self, data: st.DataObject) -> None:
        self.on_store("window_store.fetch", key=self.some_key(data).hex(), time=self.some_time(data))

    @rule(backward=st.booleans(), data=st.data())
    def fetch_range(self, backward: bool, data: st.DataObject) -> None:
        self.on_store("window_store.fetch_range", key=self.some_key(data).hex(), from_ms=self.some_time(data),
                      to_ms=self.some_time(data), backward=backward)

    @rule(backward=st.booleans(), data=st.data())
    def fetch_keys(self, backward: bool, data: st.DataObject) -> None:
        self.on_store("window_store.fetch_keys", key_from=self.some_key(data).hex(), key_to=self.some_key(data).hex(),
                      from_ms=self.some_time(data), to_ms=self.some_time(data), backward=backward)

    @rule(backward=st.booleans(), data=st.data())
    def fetch_all(self, backward: bool, data: st.DataObject) -> None:
        self.on_store("window_store.fetch_all", from_ms=self.some_time(data), to_ms=self.some_time(data),
                      backward=backward)

    def read_everything(self, handle: str) -> None:
        for backward in (False, True):
            self.agree("window_store.all", {"handle": handle, "backward": backward})

    @invariant()
    def contents_agree(self) -> None:
        if self.handle is not None:
            self.read_everything(self.handle)


VERSION_TIMES = st.sampled_from([0, 1, 5, 999, 1000, 60_000]) | st.integers(min_value=0, max_value=200_000)


class VersionedPair(StorePair):
    """A versioned key-value store on RocksDB (Kafka has no in-memory one); drawn: change-logging, history retention.
    Never reopened (VS-14: Kafka forgets a reopened store's segments); closed once, at the end, rows compared."""

    family_ops = ("store.open", "versioned_store.put", "versioned_store.get", "versioned_store.delete",
                  "versioned_store.get_versions")

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.written: set[bytes] = set()

    @initialize(logging=st.sampled_from([True, True, False]),
                history_retention_ms=st.sampled_from([0, 1000, 60_000, 300_000]))
    def start(self, logging: bool, history_retention_ms: int) -> None:
        excluded("VS-14")  # no restart rule: restart below is a plain method, not a rule
        self.open_options = {"logging": logging, "caching": False,
                             "options": {"history_retention_ms": history_retention_ms}}
        self.open_store()

    def restart(self, commit: bool = True) -> None:
        """Not a rule here (VS-14)."""

    def on_disk(self, image: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        excluded("VS-38")
        # The row's presence is compared (only a commit writes it: KV-56, KV-63), its content is not.
        return {path: {cf: [(k, "present" if k == b"position" else v) for k, v in rows] if cf == "offsets"
                       else rows for cf, rows in families.items()} for path, families in image.items()}

    def some_key(self, data: st.DataObject) -> bytes:
        keys = sorted(self.written)
        return data.draw(st.sampled_from(keys) | KEYS if keys else KEYS, label="key")

    @rule(key=KEYS, timestamp=VERSION_TIMES, data=st.data())
    def put(self, key: bytes, timestamp: int, data: st.DataObject) -> None:
        excluded("VS-19")  # timestamps drawn non-negative
        value = data.draw(st.none() | RAW, label="value")
        self.on_store("versioned_store.put", key=key.hex(), value=hex_or_none(value), timestamp=timestamp)
        self.written.add(key)

    @rule(timestamp=VERSION_TIMES, data=st.data())
    def delete(self, timestamp: int, data: st.DataObject) -> None:
        excluded("VS-10")
        self.agree("versioned_store.delete", {"handle": self.handle, "key": self.some_key(data).hex(),
                                              "timestamp": timestamp},
                   normalise=lambda out: {"record": None if out["record"] is None else
                                          {k: v for k, v in out["record"].items() if k != "valid_to"}})

    @rule(as_of=st.none() | VERSION_TIMES, data=st.data())
    def get(self, as_of: int | None, data: st.DataObject) -> None:
        payload: dict[str, Any] = {"key": self.some_key(data).hex()}
        if as_of is not None:
            payload["as_of"] = as_of
        self.on_store("versioned_store.get", **payload)

    @rule(bounds=st.tuples(st.none() | VERSION_TIMES, st.none() | VERSION_TIMES),
          order=st.sampled_from(["any", "ascending", "descending"]), data=st.data())
    def get_versions(self, bounds: tuple[int | None, int | None], order: str, data: st.DataObject) -> None:
        excluded("VS-11")  # from <= to
        lower, upper = bounds
        if lower is not None and upper is not None and lower > upper:
            lower, upper = upper, lower
        self.on_store("versioned_store.get_versions", key=self.some_key(data).hex(), from_ms=lower, to_ms=upper,
                      order=order)

    def read_everything(self, handle: str) -> None:
        for key in sorted(self.written):
            self.agree("versioned_store.get_versions", {"handle": handle, "key": key.hex(), "order": "ascending"})

    @invariant()
    def contents_agree(self) -> None:
        if self.handle is not None:
            self.read_everything(self.handle)


#: Session times: small ones, and ones a default segment interval (max(retention / 2, 60 s)) apart, so that
#: sessions land in several segments and old ones expire (SS-10, SS-13).
SESSION_TIMES = (st.sampled_from([0, 1, 5, 10, 100, 1000]) | st.sampled_from([59_999, 60_000, 61_000, 150_000])
                 | st.integers(min_value=0, max_value=400_000))
SESSION_LENGTHS = st.sampled_from([0, 0, 1, 10, 5000, 70_000])


class SessionPair(StorePair):
    """A session store of one type on one backend; drawn: change-logging, retention, the segment interval."""

    family_ops = ("store.open", "session_store.put", "session_store.remove", "session_store.fetch_session",
                  "session_store.find_sessions", "session_store.fetch")

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.values = stored_values(self.store_type)
        self.written: list[tuple[bytes, int, int]] = []

    @initialize(logging=st.sampled_from([True, True, False]), retention_ms=st.sampled_from([0, 60_000, 120_000, 200_000]),
                segment_interval_ms=st.sampled_from([None, None, 1000, 60_000]))
    def start(self, logging: bool, retention_ms: int, segment_interval_ms: int | None) -> None:
        excluded("SS-36")  # no record cache
        options: dict[str, Any] = {"retention_ms": retention_ms}
        if segment_interval_ms is not None:
            options["segment_interval_ms"] = segment_interval_ms
        self.open_options = {"logging": logging, "caching": False, "options": options}
        self.open_store()

    def some_key(self, data: st.DataObject, label: str = "key") -> bytes:
        """A key written before, most of the time, so that reads meet data."""
        keys = sorted({k for k, _, _ in self.written})
        return data.draw(st.sampled_from(keys) | KEYS if keys else KEYS, label=label)

    def some_time(self, data: st.DataObject, label: str) -> int:
        """A session start or end written before (or one ms either side), most of the time."""
        times = sorted({t + d for _, s, e in self.written for t in (s, e) for d in (-1, 0, 1) if t + d >= 0})
        return data.draw(st.sampled_from(times) | SESSION_TIMES if times else SESSION_TIMES, label=label)

    def some_session(self, data: st.DataObject) -> tuple[bytes, int, int]:
        """A session written before half the time, else a new one (start > end now and then: refused, SS-3)."""
        if bool(self.written) and data.draw(st.booleans(), label="again"):
            return data.draw(st.sampled_from(self.written), label="written")
        start = self.some_time(data, "start")  # near the sessions written, so that several stay live together
        end = data.draw(st.sampled_from([start - 1]) | st.builds(lambda n: start + n, SESSION_LENGTHS), label="end")
        return data.draw(KEYS, label="key"), start, end

    @rule(data=st.data())
    def put(self, data: st.DataObject) -> None:
        excluded("SS-28")  # values drawn in the type's layout (AggregationWithHeaders)
        key, start, end = self.some_session(data)
        value = data.draw(st.none() | self.values, label="value")
        self.on_store("session_store.put", key=key.hex(), start=start, end=end, value=hex_or_none(value))
        self.written.append((key, start, end))

    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        key, start, end = self.some_session(data)
        self.on_store("session_store.remove", key=key.hex(), start=start, end=end)

    @rule(op=st.sampled_from(["session_store.put", "session_store.remove", "session_store.fetch_session"]))
    def null_key(self, op: str) -> None:
        if op != "session_store.fetch_session" and self.backend == "memory" and not self.open_options["logging"]:
            excluded("SS-2 null key")
            return
        self.on_store(op, key=None, start=0, end=0, value=None)

    @rule(data=st.data())
    def fetch_session(self, data: st.DataObject) -> None:
        key, start, end = self.some_session(data)
        self.on_store("session_store.fetch_session", key=key.hex(), start=start, end=end)

    @rule(ranged=st.booleans(), backward=st.booleans(), data=st.data())
    def find_sessions(self, ranged: bool, backward: bool, data: st.DataObject) -> None:
        lower = self.some_key(data, "from")
        upper = self.some_key(data, "to") if ranged else None
        self.on_store("session_store.find_sessions", key_from=lower.hex(), key_to=hex_or_none(upper),
                      earliest_end=self.some_time(data, "earliest_end"),
                      latest_start=self.some_time(data, "latest_start"), backward=backward)

    @rule(ranged=st.booleans(), backward=st.booleans(), data=st.data())
    def fetch(self, ranged: bool, backward: bool, data: st.DataObject) -> None:
        lower = self.some_key(data, "from")
        upper = self.some_key(data, "to") if ranged else None
        self.on_store("session_store.fetch", key_from=lower.hex(), key_to=hex_or_none(upper), backward=backward)

    def read_everything(self, handle: str) -> None:
        """Every live session, both ways: the key range from the empty key to the largest key drawn (SS-8, SS-9)."""
        for backward in (False, True):
            self.agree("session_store.fetch", {"handle": handle, "key_from": "", "key_to": "ffffff",
                                               "backward": backward})

    @invariant()
    def contents_agree(self) -> None:
        if self.handle is not None:
            self.read_everything(self.handle)
