"""Every store operation, in every life state, on every store type and backend, answers as the one life table
of :mod:`kstate.stores.life` says (KV-12, KV-52, RST-8, VS-37, SS-37)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from kstate.codecs.store_types import BUILT_TYPES, Family, StoreType, family_of
from kstate.errors import InvalidArgumentError
from kstate.stores.api import Backend, InvalidStateStoreError, RecordContext, StateStore, TopicPartition
from kstate.stores.caching import CachingKeyValueStore
from kstate.stores.changelogging import RecordContextHolder
from kstate.stores.factory import open_bytes_store
from kstate.stores.families import changelogging_store
from kstate.stores.life import OPERATIONS, TABLE, LifeState, Op, OpClass, after_crash, answer, life_of
from kstate.stores.restore import restoring
from kstate_conformance.models import life as models_life

KEY = b"k"
TP = TopicPartition("t", 0)
_TS = (5).to_bytes(8, "big")

#: Options each family needs to open.
_OPTIONS: dict[Family, dict[str, Any]] = {
    Family.KEY_VALUE: {},
    Family.VERSIONED: {"history_retention_ms": 1000},
    Family.WINDOW: {"retention_ms": 1000, "window_size_ms": 10},
    Family.SESSION: {"retention_ms": 1000},
}


def _value(store_type: StoreType) -> bytes:
    """A value in the store type's byte layout: plain, ``[ts][value]``, ``[varint 0][ts][value]``, or a session's
    ``[varint 0][aggregation]`` (HV-*)."""
    name = store_type.value
    if "headers" in name and "session" in name:
        return b"\x00v"
    if "headers" in name:
        return b"\x00" + _TS + b"v"
    if "timestamped" in name:
        return _TS + b"v"
    return b"v"


def _arguments(store_type: StoreType) -> dict[str, tuple[Any, ...]]:
    """One well-formed call of each operation of ``store_type``'s family: the arguments only; the life table
    alone decides whether it is answered."""
    v = _value(store_type)
    common: dict[str, tuple[Any, ...]] = {
        "commit": ({},), "flush": (), "committed_offset": (TP,), "committed_offsets": (), "restore_batch": ([],),
        "restore_records": ([],), "restoring": (), "close": (), "simulate_crash": (), "close_for_downgrade": (),
        "persistent": (), "manages_offsets": (), "set_record_context": (None,), "merge_position": ({},),
        "merged_position": (), "offsets_entries": (), "column_family_rows": (), "segment_rows": (),
        "segment_ids": (), "segment_names": (), "segment_modes": (), "segment_positions": (),
        "segment_committed_offsets": (), "window_starts": (), "wrapped": (), "flush_cache": (), "drop_cache": (),
    }
    family = family_of(store_type)
    if family is Family.KEY_VALUE:
        own: dict[str, tuple[Any, ...]] = {
            "get": (KEY,), "put": (KEY, v), "put_if_absent": (KEY, v), "put_all": ([(KEY, v)],), "delete": (KEY,),
            "range": (b"a", b"z"), "reverse_range": (b"a", b"z"), "all": (), "reverse_all": (),
            "prefix_scan": (KEY,), "approximate_num_entries": (), "check_write": (KEY, v),
        }
    elif family is Family.VERSIONED:
        own = {"get": (KEY,), "get_versions": (KEY,), "put": (KEY, v, 5), "delete": (KEY, 5)}
    elif family is Family.WINDOW:
        own = {
            "put": (KEY, v, 0), "fetch": (KEY, 0), "fetch_range": (KEY, 0, 10), "fetch_keys": (None, None, 0, 10),
            "fetch_all": (0, 10), "all": (), "check_write": (KEY, v, 0),
        }
    elif family is Family.SESSION:
        own = {
            "put": (KEY, 0, 5, v), "remove": (KEY, 0, 5), "fetch_session": (KEY, 0, 5), "find_sessions": (KEY, 0, 5),
            "find_sessions_range": (None, None, 0, 5), "fetch": (KEY,), "fetch_range": (None, None),
        }
    else:
        raise AssertionError(f"no arguments for the {family} family")
    return {**common, **own}


def _operations(store: StateStore) -> list[str]:
    """The store's public operations: every public method, each of which the life table must classify."""
    names = [name for name in dir(store) if not name.startswith("_")]
    methods = [n for n in names if callable(getattr(store, n)) and not isinstance(getattr(store, n), type)]
    unclassified = [n for n in methods if n not in OPERATIONS]
    assert not unclassified, f"{type(store).__name__}: operations the life table does not classify: {unclassified}"
    return methods


def _call(store: StateStore, name: str, args: tuple[Any, ...]) -> None:
    result = getattr(store, name)(*args)
    if isinstance(result, contextlib.AbstractContextManager):
        with result:
            pass
    elif hasattr(result, "close"):
        result.close()


@contextlib.contextmanager
def _in_state(store: StateStore, state: LifeState) -> Iterator[None]:
    if state is LifeState.OPEN:
        yield
    elif state is LifeState.RESTORING:
        with restoring(store):
            yield
    elif state is LifeState.CLOSED:
        store.close()
        yield
    elif state is LifeState.CRASHED:
        _innermost(store).simulate_crash()  # a layer over the store has no crash of its own (store.crash)
        yield
    else:
        raise AssertionError(state)


def _innermost(store: Any) -> Any:
    """The store a wrapper (change-logging, caching) sits over: the one whose life the table reads."""
    while hasattr(store, "inner"):
        store = store.inner
    return store


def _disagreement(store: StateStore, store_type: StoreType, state: LifeState, name: str,
                  args: tuple[Any, ...]) -> str | None:
    """What ``store`` answered to ``name`` in ``state`` where the life table says otherwise; None if it agrees."""
    if state is LifeState.CRASHED:
        state = after_crash(store.persistent())
    where = f"{type(store).__name__}.{name} when {state.value}"
    refused = _REFUSED_IN_EVERY_STATE.get((family_of(store_type), store.persistent(), name))
    if refused is not None:
        try:
            _call(store, name, args)
        except refused:
            return None
        return f"{where}: answered a call refused in every state"
    cell = answer(state, OPERATIONS[name])
    assert life_of(_innermost(store)) is state, f"{type(store).__name__} is {life_of(_innermost(store))}, not {state}"
    try:
        _call(store, name, args)
    except InvalidStateStoreError as exc:
        if cell.allowed:
            return f"{where}: the table allows it ({cell.rule}), the store refused: {exc}"
        if not isinstance(exc, cell.error or ()) or str(exc) != cell.message.format(name=store.name):
            return f"{where}: refused with {type(exc).__name__}({str(exc)!r}), not as {cell.rule} says"
        return None
    if not cell.allowed:
        return f"{where}: the table refuses it ({cell.rule}), the store answered"
    return None


#: Calls refused in every state before the store's state is asked, by family, persistence and name: the versioned
#: store's ``restore_batch`` names ``restore_records``, which it restores with (the record timestamp is the
#: version); the change-logging layer over an in-memory session store has no segments to show.
_REFUSED_IN_EVERY_STATE: dict[tuple[Family, bool, str], type[Exception]] = {
    (Family.VERSIONED, True, "restore_batch"): InvalidArgumentError,
    (Family.VERSIONED, False, "restore_batch"): InvalidArgumentError,
    (Family.SESSION, False, "segment_rows"): InvalidStateStoreError,
}

#: Operations that end the store's life: each is sent to a store of its own.
_ENDING = {Op.CLOSE, Op.CRASH, Op.DOWNGRADE}

#: The layers a store is asked through: the store itself, the change-logging layer every family's builder puts
#: over it (CL-3), and the caching layer over that for a key-value store (CACHE-9), whose life is the store's.
Layer = Callable[[StateStore, StoreType], StateStore]


def _bare(store: StateStore, store_type: StoreType) -> StateStore:
    return store


def _logged(store: StateStore, store_type: StoreType) -> StateStore:
    return cast(StateStore, changelogging_store(store, store_type, RecordContextHolder(RecordContext(timestamp=0)),
                                                []))


def _cached(store: StateStore, store_type: StoreType) -> StateStore:
    context = RecordContextHolder(RecordContext(timestamp=0))
    logged = changelogging_store(store, store_type, context, [])
    return CachingKeyValueStore(logged, context)


LAYERS: dict[str, Layer] = {"bare": _bare, "logged": _logged, "cached": _cached}

#: A mutant: the operation ``name`` of a store made to answer wrongly in ``state`` (the mutated store's method).
Mutant = Callable[[StateStore], None]


def _disagreements(tmp_path: Path, store_type: StoreType, backend: Backend, state: LifeState, layer: Layer,
                   mutant: Mutant | None = None) -> list[str]:
    """Send every operation of ``store_type`` (through ``layer``) in ``state`` and list where the store's answer
    is not the life table's; ``mutant`` changes each store before it is asked."""
    arguments = _arguments(store_type)
    opened = 0

    def fresh() -> StateStore:
        nonlocal opened
        opened += 1
        store = layer(open_bytes_store(store_type, backend, name=f"s{opened}", state_dir=tmp_path,
                                       options=_OPTIONS[family_of(store_type)]), store_type)
        if mutant is not None:
            mutant(store)
        return store

    found: list[str] = []
    store = fresh()
    names = _operations(store)
    missing = [n for n in names if n not in arguments]
    assert not missing, f"no arguments for {missing}"
    with _in_state(store, state):
        found.extend(filter(None, (_disagreement(store, store_type, state, name, arguments[name])
                                   for name in names if OPERATIONS[name] not in _ENDING)))
    store.close()
    for name in names:
        if OPERATIONS[name] in _ENDING:
            ending = fresh()
            with _in_state(ending, state):
                found.extend(filter(None, [_disagreement(ending, store_type, state, name, arguments[name])]))
            ending.close()
    return found


_CASES = [(t, b, layer) for t in BUILT_TYPES for b in Backend for layer in LAYERS
          if layer != "cached" or family_of(t) is Family.KEY_VALUE]


@pytest.mark.parametrize("state", list(LifeState), ids=lambda s: s.value)
@pytest.mark.parametrize(("store_type", "backend", "layer"), _CASES,
                         ids=[f"{t.value}-{b.value}-{layer}" for t, b, layer in _CASES])
def test_every_operation_answers_as_the_life_table_says(
    tmp_path: Path, store_type: StoreType, backend: Backend, layer: str, state: LifeState
) -> None:
    assert _disagreements(tmp_path, store_type, backend, state, LAYERS[layer]) == []


def _answers_when(state: LifeState, name: str) -> Mutant:
    """A store whose ``name`` answers (None) in ``state`` without asking the table: a refused cell allowed."""
    def mutate(store: StateStore) -> None:
        real = getattr(store, name)
        setattr(store, name, lambda *a: None if life_of(_innermost(store)) is state else real(*a))
    return mutate


def _refuses_when(state: LifeState, name: str, message: str = "Store {name} is currently closed.") -> Mutant:
    """A store whose ``name`` refuses in ``state`` with ``message``: an allowed cell refused, or a refusal in
    words other than the table's (the versioned store once dropped the full stop)."""
    def mutate(store: StateStore) -> None:
        real = getattr(store, name)

        def refusing(*a: Any) -> Any:
            if life_of(_innermost(store)) is state:
                raise InvalidStateStoreError(message.format(name=store.name))
            return real(*a)
        setattr(store, name, refusing)
    return mutate


#: Each mutant gets one cell wrong; the check above must name that cell and no other.
MUTANTS: list[tuple[str, StoreType, Backend, str, LifeState, Mutant, str]] = [
    ("closed in-memory kv answers get", StoreType.KEY_VALUE, Backend.MEMORY, "bare", LifeState.CLOSED,
     _answers_when(LifeState.CLOSED, "get"), "get when closed: the table refuses it (KV-12)"),
    ("crashed window answers committed_offset", StoreType.WINDOW, Backend.ROCKSDB, "bare", LifeState.CRASHED,
     _answers_when(LifeState.CRASHED, "committed_offset"), "committed_offset when crashed: the table refuses it"),
    ("restoring session refuses put", StoreType.SESSION, Backend.ROCKSDB, "logged", LifeState.RESTORING,
     _refuses_when(LifeState.RESTORING, "put"), "put when restoring: the table allows it (RST-8)"),
    ("closed versioned refuses without the full stop", StoreType.VERSIONED_KV, Backend.ROCKSDB, "bare",
     LifeState.CLOSED, _refuses_when(LifeState.CLOSED, "get", "Store {name} is currently closed"),
     "get when closed: refused with InvalidStateStoreError('Store s1 is currently closed')"),
    ("closed caching store answers flush", StoreType.KEY_VALUE, Backend.ROCKSDB, "cached", LifeState.CLOSED,
     _answers_when(LifeState.CLOSED, "flush"), "flush when closed: the table refuses it (KV-12)"),
]


@pytest.mark.parametrize(("store_type", "backend", "layer", "state", "mutant", "expected"),
                         [m[1:] for m in MUTANTS], ids=[m[0] for m in MUTANTS])
def test_a_store_that_answers_one_cell_wrongly_is_caught(
    tmp_path: Path, store_type: StoreType, backend: Backend, layer: str, state: LifeState, mutant: Mutant,
    expected: str,
) -> None:
    found = _disagreements(tmp_path, store_type, backend, state, LAYERS[layer], mutant)
    assert len(found) == 1 and expected in found[0], found


def test_the_table_has_a_cell_for_every_state_and_operation() -> None:
    assert set(TABLE) == {(s, op) for s in LifeState for op in OpClass}
    for (state, op), cell in TABLE.items():
        assert cell.allowed == (cell.error is None), (state, op)
        assert cell.rule, (state, op)


def test_the_suites_models_read_the_same_table() -> None:
    """The models' own statement of the life table (they may not import the reference) is the reference's, cell
    by cell: allowed or refused, the rule, and whether the call is a no-op."""
    assert tuple(s.value for s in LifeState) == models_life.STATES
    assert tuple(op.value for op in OpClass) == models_life.OPERATIONS
    for (state, op), cell in TABLE.items():
        model = models_life.LIFE_TABLE[state.value, op.value]
        assert (model.allowed, model.rule, model.noop) == (cell.allowed, cell.rule, cell.noop), (state, op)
        if not cell.allowed:
            assert cell.error is not None and cell.error.__name__ == models_life.REFUSAL_ERROR
        # The one leeway the spec gives (KV-12: "flush and commit MAY answer as no-ops") is on refused cells only.
        assert not model.may_answer or (not cell.allowed and op is Op.COMMIT), (state, op)
        assert models_life.must_refuse(state.value, op.value) == (not cell.allowed and not model.may_answer)
    for backend in Backend:  # a crash leaves a RocksDB store crashed, an in-memory one closed (KV-52, KV-43)
        assert models_life.after_crash(backend.value) == after_crash(backend is Backend.ROCKSDB).value


def test_closing_or_crashing_twice_is_a_no_op_and_the_state_says_which() -> None:
    refuses: Callable[[LifeState], bool] = lambda s: not answer(s, Op.READ).allowed  # noqa: E731
    assert [s for s in LifeState if refuses(s)] == [LifeState.CLOSED, LifeState.CRASHED]
    for state in (LifeState.CLOSED, LifeState.CRASHED):
        assert answer(state, Op.CLOSE).noop and answer(state, Op.CRASH).noop


def test_the_models_ask_the_table_by_its_operation_classes() -> None:
    """Every ``_require_open("<class>")`` of the suite's models names an operation class of the table, so none
    asks a cell that is not there (a KeyError only on the step that reaches it)."""
    models_dir = Path(models_life.__file__).parent
    named = {m for f in models_dir.glob("*.py") for m in re.findall(r'_require_open\("(\w+)"\)', f.read_text())}
    assert {"read", "write", "commit", "restore"} <= named <= set(models_life.OPERATIONS), named
