"""Key-value store semantics on both backends and all three store types (spec/kv-stores.md KV-1..KV-21, KV-40..KV-45)."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kstate.codecs.store_types import BUILT_KV_TYPES, StoreType
from kstate.errors import NullKeyError
from kstate.stores.api import Backend, InvalidPrefixError, InvalidStateStoreError
from kstate.stores.engine import MemoryEngine, RocksDBEngine, list_column_families
from kstate.stores.factory import open_kv_store, store_directory
from kstate.stores.kv import INVALID_RANGE_WARNING, InMemoryKeyValueStore, RocksDBStore, StoreIterator
from kstate_conformance.raw_rocksdb import column_family_rows

EXACT_WARNING = (
    "Returning empty iterator for fetch with invalid key range: from > to. This may be due to range arguments "
    "set in the wrong order, or serdes that don't preserve ordering when lexicographically comparing the "
    "serialized bytes. Note that the built-in numerical serdes do not follow this for negative numbers"
)

BACKENDS = [Backend.ROCKSDB, Backend.MEMORY]
COMBOS = [(b, t) for b in BACKENDS for t in BUILT_KV_TYPES]


@pytest.fixture(params=COMBOS, ids=lambda c: f"{c[0].value}-{c[1].value}")
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RocksDBStore | InMemoryKeyValueStore]:
    backend, store_type = request.param
    opened = open_kv_store(store_type, backend, name="s", state_dir=tmp_path)
    assert isinstance(opened, (RocksDBStore, InMemoryKeyValueStore))
    yield opened
    opened.close()


@pytest.fixture(params=BACKENDS, ids=lambda b: b.value)
def plain(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RocksDBStore | InMemoryKeyValueStore]:
    opened = open_kv_store(StoreType.KEY_VALUE, request.param, name="s", state_dir=tmp_path)
    assert isinstance(opened, (RocksDBStore, InMemoryKeyValueStore))
    yield opened
    opened.close()


def _fill(store: RocksDBStore | InMemoryKeyValueStore, n: int = 5) -> None:
    for i in range(n):
        store.put(bytes([i]), b"v%d" % i)


def test_the_warning_text_is_kafkas_word_for_word() -> None:
    assert INVALID_RANGE_WARNING == EXACT_WARNING


# --- KV-2..KV-8 ---------------------------------------------------------------------------------------


def test_put_get_verbatim_including_empty_key_and_value(store: RocksDBStore) -> None:
    store.put(b"", b"")
    store.put(b"k", b"\x00\xff")
    assert store.get(b"") == b""
    assert store.get(b"k") == b"\x00\xff"
    assert store.get(b"missing") is None


@pytest.mark.parametrize("op", ["put", "put_if_absent", "put_all", "delete", "get"])
def test_null_key_is_refused_and_changes_nothing(store: RocksDBStore, op: str) -> None:
    store.put(b"a", b"1")
    with pytest.raises(NullKeyError, match="key cannot be null"):
        if op == "put":
            store.put(None, b"x")  # type: ignore[arg-type]
        elif op == "put_if_absent":
            store.put_if_absent(None, b"x")  # type: ignore[arg-type]
        elif op == "put_all":
            store.put_all([(b"b", b"2"), (None, b"x")])  # type: ignore[list-item]
        elif op == "delete":
            store.delete(None)  # type: ignore[arg-type]
        else:
            store.get(None)  # type: ignore[arg-type]
    assert list(store.all()) == [(b"a", b"1")]


def test_null_value_deletes_in_put_and_put_all(store: RocksDBStore) -> None:
    _fill(store)
    store.put(b"\x01", None)
    store.put_all([(b"\x02", None), (b"\x03", b"new"), (b"\x03", None), (b"\x09", None)])
    assert list(store.all()) == [(b"\x00", b"v0"), (b"\x04", b"v4")]


def test_put_if_absent(store: RocksDBStore) -> None:
    assert store.put_if_absent(b"k", b"first") is None
    assert store.put_if_absent(b"k", b"second") == b"first"
    assert store.get(b"k") == b"first"
    assert store.put_if_absent(b"n", None) is None  # a no-op delete
    assert store.get(b"n") is None


def test_put_all_later_entry_wins(store: RocksDBStore) -> None:
    store.put_all([(b"k", b"1"), (b"k", b"2")])
    assert store.get(b"k") == b"2"


def test_delete_returns_old_value_even_for_absent_keys(store: RocksDBStore) -> None:
    store.put(b"k", b"v")
    assert store.delete(b"k") == b"v"
    assert store.get(b"k") is None
    assert store.delete(b"k") is None


# --- KV-9..KV-13 --------------------------------------------------------------------------------------


def test_ranges_are_inclusive_with_open_null_bounds(store: RocksDBStore) -> None:
    _fill(store)
    entries = [(bytes([i]), b"v%d" % i) for i in range(5)]
    assert list(store.range(b"\x01", b"\x03")) == entries[1:4]
    assert list(store.reverse_range(b"\x01", b"\x03")) == entries[1:4][::-1]
    assert list(store.range(None, b"\x02")) == entries[:3]
    assert list(store.range(b"\x02", None)) == entries[2:]
    assert list(store.range(None, None)) == entries == list(store.all())
    assert list(store.reverse_range(None, b"\x02")) == entries[:3][::-1]
    assert list(store.reverse_range(b"\x02", None)) == entries[2:][::-1]
    assert list(store.reverse_all()) == entries[::-1]
    assert list(store.range(b"\x02", b"\x02")) == [(b"\x02", store.get(b"\x02"))]
    # bounds that are not keys, and keys longer than a bound
    store.put(b"\x01\x00", b"x")
    assert list(store.range(b"\x00\x05", b"\x01")) == [(b"\x01", b"v1")]
    assert list(store.range(b"\x01", b"\x01\x00")) == [(b"\x01", b"v1"), (b"\x01\x00", b"x")]


def test_unsigned_order(store: RocksDBStore) -> None:
    for key in (b"\xff", b"\x7f", b"\x80", b"\x00", b"\x7f\xff"):
        store.put(key, key)
    assert [k for k, _ in store.all()] == [b"\x00", b"\x7f", b"\x7f\xff", b"\x80", b"\xff"]


@pytest.mark.parametrize("reverse", [False, True])
def test_from_greater_than_to_is_empty_and_warns(
    store: RocksDBStore, caplog: pytest.LogCaptureFixture, reverse: bool
) -> None:
    _fill(store)
    minus_one, one = (-1).to_bytes(4, "big", signed=True), (1).to_bytes(4, "big")
    with caplog.at_level(logging.WARNING, logger="kstate.stores"):
        for low, high in ((b"\x02", b"\x01"), (minus_one, one)):
            it = store.reverse_range(low, high) if reverse else store.range(low, high)
            assert list(it) == []
            it.close()
            it.close()
    warnings = [r for r in caplog.records if r.name == "kstate.stores" and r.levelno == logging.WARNING]
    assert [r.getMessage() for r in warnings] == [EXACT_WARNING, EXACT_WARNING]


def test_prefix_scan_excludes_the_next_larger_key(store: RocksDBStore) -> None:
    for key in (b"k", b"k1", b"k11", b"k2", b"l", b"j\xff"):
        store.put(key, b"v")
    assert [k for k, _ in store.prefix_scan(b"k1")] == [b"k1", b"k11"]
    assert [k for k, _ in store.prefix_scan(b"k")] == [b"k", b"k1", b"k11", b"k2"]
    assert [k for k, _ in store.prefix_scan(b"j")] == [b"j\xff"]
    assert list(store.prefix_scan(b"z")) == []


def test_prefix_scan_uuid_string_prefixes(store: RocksDBStore) -> None:
    prefix = b"b7a5ad0c-5b25-4c6e-a9a5-9d4c4f2e3c10"
    store.put(prefix + b"|1", b"a")
    store.put(prefix + b"|2", b"b")
    store.put(b"b7a5ad0c-5b25-4c6e-a9a5-9d4c4f2e3c11|1", b"c")
    assert [v for _, v in store.prefix_scan(prefix)] == [b"a", b"b"]


@pytest.mark.parametrize("prefix", [b"", b"\xff", b"\xff\xff"])
def test_unboundable_prefix_rocksdb_scans_open_ended_memory_refuses(
    tmp_path: Path, backend: Backend, prefix: bytes
) -> None:
    store = open_kv_store(StoreType.KEY_VALUE, backend, name="s", state_dir=tmp_path)
    for key in (b"\x00", b"\xfe", b"\xff", b"\xff\xff", b"\xff\xff\x00"):
        store.put(key, b"v")
    if backend is Backend.ROCKSDB:
        expected = [k for k in (b"\x00", b"\xfe", b"\xff", b"\xff\xff", b"\xff\xff\x00") if k >= prefix]
        assert [k for k, _ in store.prefix_scan(prefix)] == expected
    else:
        with pytest.raises(InvalidPrefixError):
            store.prefix_scan(prefix)
    store.close()


@pytest.fixture(params=BACKENDS, ids=lambda b: b.value)
def backend(request: pytest.FixtureRequest) -> Backend:
    return Backend(request.param)


def test_approximate_num_entries(store: RocksDBStore) -> None:
    assert store.approximate_num_entries() == 0
    _fill(store)
    if isinstance(store, RocksDBStore):
        store.flush()
    assert store.approximate_num_entries() == 5


def test_restore_batch_matches_puts(store: RocksDBStore) -> None:
    store.restore_batch([(b"a", b"1"), (b"b", b"2"), (b"a", None), (b"c", b"3")])
    assert list(store.all()) == [(b"b", b"2"), (b"c", b"3")]
    with pytest.raises(NullKeyError):
        store.restore_batch([(b"d", b"4"), (None, b"x")])  # type: ignore[list-item]
    assert store.get(b"d") is None


def test_peek_next_key_and_has_next(store: RocksDBStore) -> None:
    _fill(store, 2)
    it = store.all()
    assert isinstance(it, StoreIterator)
    assert it.peek_next_key() == b"\x00"
    assert it.peek_next_key() == b"\x00"
    assert next(it) == (b"\x00", b"v0")
    assert it.has_next()
    assert next(it) == (b"\x01", b"v1")
    assert it.peek_next_key() is None
    assert not it.has_next()
    with pytest.raises(StopIteration):
        next(it)
    it.close()


# --- KV-11, KV-12, KV-41, KV-43: iterators while writing and closing -----------------------------------


def test_writing_during_iteration_never_fails(store: RocksDBStore) -> None:
    _fill(store)
    seen = []
    for i, (key, _) in enumerate(store.all()):
        seen.append(key)
        store.put(bytes([i]) + b"x", b"new")
        store.delete(bytes([min(i + 1, 4)]))
    assert seen[0] == b"\x00"


def test_rocksdb_iterator_reads_a_snapshot(tmp_path: Path) -> None:
    store = open_kv_store(StoreType.KEY_VALUE, Backend.ROCKSDB, name="s", state_dir=tmp_path)
    _fill(store)
    store.flush()
    it = store.all()
    store.put(b"\x01", b"changed")
    store.delete(b"\x02")
    store.put(b"\x03\x00", b"added")
    store.commit({})  # the writes reach RocksDB itself, not only the staging
    staged_it = store.all()
    store.put(b"\x00", None)  # staged after the second iterator was created
    assert list(it) == [(bytes([i]), b"v%d" % i) for i in range(5)]
    assert list(staged_it) == [(b"\x00", b"v0"), (b"\x01", b"changed"), (b"\x03", b"v3"), (b"\x03\x00", b"added"), (b"\x04", b"v4")]
    store.close()


def test_in_memory_iterator_copies_keys_and_reads_values_live() -> None:
    store = InMemoryKeyValueStore("s")
    _fill(store)
    it = store.all()
    store.put(b"\x01", b"changed")
    store.delete(b"\x02")
    store.put(b"\x03\x00", b"added")
    assert list(it) == [(b"\x00", b"v0"), (b"\x01", b"changed"), (b"\x03", b"v3"), (b"\x04", b"v4")]


def test_reads_of_a_closed_iterator_are_refused(store: RocksDBStore) -> None:
    _fill(store)
    it = store.all()
    next(it)
    it.close()
    with pytest.raises(InvalidStateStoreError):
        next(it)
    with pytest.raises(InvalidStateStoreError):
        it.peek_next_key()


def test_closing_a_rocksdb_store_closes_its_iterators(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = open_kv_store(StoreType.KEY_VALUE, Backend.ROCKSDB, name="s", state_dir=tmp_path)
    _fill(store)
    open_one, open_two = store.all(), store.range(b"\x01", b"\x02")
    done = store.all()
    done.close()
    with caplog.at_level(logging.WARNING, logger="kstate.stores"):
        store.close()
    assert "Closing 2 open iterators for store s" in caplog.text
    for it in (open_one, open_two):
        with pytest.raises(InvalidStateStoreError, match="RocksDB iterator for store s has closed"):
            next(it)


def test_in_memory_close_clears_contents_and_ends_iterators() -> None:
    store = InMemoryKeyValueStore("s")
    _fill(store)
    it = store.all()
    assert next(it) == (b"\x00", b"v0")
    store.close()
    assert list(it) == []


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.get(b"k"),
        lambda s: s.put(b"k", b"v"),
        lambda s: s.put_if_absent(b"k", b"v"),
        lambda s: s.put_all([(b"k", b"v")]),
        lambda s: s.delete(b"k"),
        lambda s: s.range(None, None),
        lambda s: s.reverse_all(),
        lambda s: s.prefix_scan(b"k"),
        lambda s: s.approximate_num_entries(),
        lambda s: s.commit({}),
    ],
)
def test_use_of_a_closed_store_is_refused(store: RocksDBStore, call: object) -> None:
    store.close()
    store.close()  # idempotent
    assert not store.is_open
    with pytest.raises(InvalidStateStoreError):
        call(store)  # type: ignore[operator]


# --- a model check of the operations -----------------------------------------------------------------------

keys = st.binary(max_size=3)
values = st.none() | st.binary(max_size=4)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("put"), keys, values),
        st.tuples(st.just("put_if_absent"), keys, values),
        st.tuples(st.just("delete"), keys, st.none()),
        st.tuples(st.just("put_all"), st.lists(st.tuples(keys, values), max_size=4), st.none()),
        st.tuples(st.just("commit"), st.none(), st.none()),
        st.tuples(st.just("reopen"), st.none(), st.none()),
    ),
    max_size=30,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations, bounds=st.tuples(st.none() | keys, st.none() | keys), prefix=st.binary(min_size=1, max_size=2))
def test_operations_agree_with_a_dict_model(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, object, object]], bounds: tuple[bytes | None, bytes | None], prefix: bytes
) -> None:
    state_dir = tmp_path_factory.mktemp("model")
    stores = {b: open_kv_store(StoreType.KEY_VALUE, b, name="m", state_dir=state_dir) for b in BACKENDS}
    model: dict[bytes, bytes] = {}
    try:
        for op, a, b in ops:
            if op == "reopen":
                stores[Backend.ROCKSDB].close()
                stores[Backend.ROCKSDB] = open_kv_store(StoreType.KEY_VALUE, Backend.ROCKSDB, name="m", state_dir=state_dir)
                continue
            for store in stores.values():
                if op == "put":
                    store.put(a, b)  # type: ignore[arg-type]
                elif op == "put_if_absent":
                    assert store.put_if_absent(a, b) == model.get(a)  # type: ignore[arg-type, call-overload]
                elif op == "delete":
                    assert store.delete(a) == model.get(a)  # type: ignore[arg-type, call-overload]
                elif op == "put_all":
                    store.put_all(a)  # type: ignore[arg-type]
                elif op == "commit":
                    store.commit({})
            if op in ("put", "put_if_absent", "delete"):
                entries = [(a, b)]
            elif op == "put_all":
                entries = list(a)  # type: ignore[call-overload]
            else:
                entries = []
            for key, value in entries:
                if op == "put_if_absent" and key in model:
                    continue
                if value is None:
                    model.pop(key, None)
                else:
                    model[key] = value
        expected = sorted(model.items())
        low, high = bounds
        in_range = [(k, v) for k, v in expected if (low is None or k >= low) and (high is None or k <= high)]
        if low is not None and high is not None and low > high:
            in_range = []
        with_prefix = [(k, v) for k, v in expected if k.startswith(prefix)]
        for store in stores.values():
            assert list(store.all()) == expected
            assert list(store.reverse_all()) == expected[::-1]
            assert list(store.range(low, high)) == in_range
            assert list(store.reverse_range(low, high)) == in_range[::-1]
            if prefix.strip(b"\xff"):
                assert list(store.prefix_scan(prefix)) == with_prefix
            for key in {k for k, _ in expected} | {b"", b"\x00"}:
                assert store.get(key) == model.get(key)
        assert stores[Backend.MEMORY].approximate_num_entries() == len(model)
    finally:
        for store in stores.values():
            store.close()


# --- KV-20, KV-21: the directory, read with plain rocksdict ---------------------------------------------


def test_a_reference_store_is_readable_with_plain_rocksdict(tmp_path: Path) -> None:
    store = open_kv_store(StoreType.KEY_VALUE, Backend.ROCKSDB, name="counts", state_dir=tmp_path, application_id="app", task_id="1_3")
    store.put(b"\x00k", b"\xffv")
    store.put(b"a", b"")
    store.close()
    path = tmp_path / "app" / "1_3" / "rocksdb" / "counts"
    assert path == store_directory(tmp_path, "app", "1_3", "counts")
    cfs = column_family_rows(path)
    assert set(cfs) == {"default", "offsets"}
    assert cfs["default"] == [(b"\x00k", b"\xffv"), (b"a", b"")]
    assert dict(cfs["offsets"])[b"status"] == (0).to_bytes(8, "big")


def test_options_file_shows_format_version_5_for_every_column_family(tmp_path: Path) -> None:
    store = open_kv_store(StoreType.TIMESTAMPED_KV_WITH_HEADERS, Backend.ROCKSDB, name="s", state_dir=tmp_path)
    store.put(b"k", b"\x00" + bytes(8) + b"v")
    store.close()
    path = store_directory(tmp_path, "app", "0_0", "s")
    options = sorted(path.glob("OPTIONS-*"))[-1].read_text()
    sections = re.findall(r'\[TableOptions/BlockBasedTable "([^"]+)"\]([^\[]*)', options)
    assert {name for name, _ in sections} == {"default", "keyValueWithTimestampAndHeaders", "offsets"}
    for _name, body in sections:
        assert re.search(r"^\s*format_version=5\s*$", body, re.M), body
    assert "comparator=leveldb.BytewiseComparator" in options


def test_close_releases_the_lock(tmp_path: Path) -> None:
    for _ in range(3):
        store = open_kv_store(StoreType.TIMESTAMPED_KV, Backend.ROCKSDB, name="s", state_dir=tmp_path)
        it = store.all()
        store.put(b"k", bytes(8))
        store.close()
        del it
    assert sorted(list_column_families(store_directory(tmp_path, "app", "0_0", "s"))) == [
        "default",
        "keyValueWithTimestamp",
        "offsets",
    ]


def test_engines_agree(tmp_path: Path) -> None:
    engines = [MemoryEngine(), RocksDBEngine(tmp_path / "db")]
    try:
        for engine in engines:
            engine.create_column_family("x")
            for i in range(0, 10, 2):
                engine.put("x", bytes([i]), b"v")
            engine.delete("x", b"\x04")
        results = []
        for engine in engines:
            cursors = {
                "fwd": engine.iterate("x", b"\x02", b"\x08", lower_inclusive=False, upper_inclusive=False),
                "rev": engine.iterate("x", b"\x02", b"\x08", reverse=True),
                "rev-open": engine.iterate("x", None, b"\x05", reverse=True, upper_inclusive=False),
                "gap": engine.iterate("x", b"\x03", b"\x03"),
            }
            results.append({name: [k for k, _ in cursor] for name, cursor in cursors.items()})
        assert results[0] == results[1] == {
            "fwd": [b"\x06"],
            "rev": [b"\x08", b"\x06", b"\x02"],
            "rev-open": [b"\x02", b"\x00"],
            "gap": [],
        }
    finally:
        for engine in engines:
            engine.close()


def test_in_memory_iterator_reads_a_peeked_value_live() -> None:
    """KV-41: after ``peek_next_key``, ``next`` still reads the value live and skips a key deleted since."""
    from kstate.codecs.store_types import StoreType
    from kstate.stores.api import Backend
    from kstate.stores.factory import open_kv_store

    store = open_kv_store(StoreType.KEY_VALUE, Backend.MEMORY, name="peek")
    for key in (b"a", b"b", b"c"):
        store.put(key, b"old-" + key)
    iterator = store.all()
    assert iterator.peek_next_key() == b"a"
    store.delete(b"a")
    store.put(b"b", b"new-b")
    assert next(iterator) == (b"b", b"new-b")
    assert iterator.peek_next_key() == b"c"
    store.put(b"c", b"new-c")
    assert next(iterator) == (b"c", b"new-c")
    iterator.close()
    store.close()
