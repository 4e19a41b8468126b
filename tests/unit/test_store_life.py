"""Every store operation, in every life state, on every store type and backend, answers as the one life table
of :mod:`kstate.stores.life` says (KV-12, KV-52, RST-8, VS-37, SS-37)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kstate.codecs.store_types import BUILT_TYPES, Family, StoreType, family_of
from kstate.errors import InvalidArgumentError
from kstate.stores.api import Backend, InvalidStateStoreError, StateStore, TopicPartition
from kstate.stores.factory import open_bytes_store
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
    """A value in the store type's byte layout: plain, ``[ts][value]``, or ``[varint 0][ts][value]``."""
    name = store_type.value
    if "headers" in name and "session" not in name:
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
        "segment_committed_offsets": (), "window_starts": (),
    }
    family = family_of(store_type)
    if family is Family.KEY_VALUE:
        own: dict[str, tuple[Any, ...]] = {
            "get": (KEY,), "put": (KEY, v), "put_if_absent": (KEY, v), "put_all": ([(KEY, v)],), "delete": (KEY,),
            "range": (b"a", b"z"), "reverse_range": (b"a", b"z"), "all": (), "reverse_all": (),
            "prefix_scan": (KEY,), "approximate_num_entries": (),
        }
    elif family is Family.VERSIONED:
        own = {"get": (KEY,), "get_versions": (KEY,), "put": (KEY, v, 5), "delete": (KEY, 5)}
    elif family is Family.WINDOW:
        own = {
            "put": (KEY, v, 0), "fetch": (KEY, 0), "fetch_range": (KEY, 0, 10), "fetch_keys": (None, None, 0, 10),
            "fetch_all": (0, 10), "all": (),
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
        store.simulate_crash()
        yield
    else:
        raise AssertionError(state)


def _check(store: StateStore, state: LifeState, name: str, args: tuple[Any, ...]) -> None:
    if state is LifeState.CRASHED:
        state = after_crash(store.persistent())
    if (family_of(store.store_type), name) in _NOT_IN_ANY_STATE:
        with pytest.raises(InvalidArgumentError):
            _call(store, name, args)
        return
    cell = answer(state, OPERATIONS[name])
    assert life_of(store) is state, f"{type(store).__name__} is {life_of(store)}, not {state}"
    where = f"{type(store).__name__}.{name} when {state.value}"
    if cell.allowed:
        try:
            _call(store, name, args)
        except InvalidStateStoreError as exc:
            pytest.fail(f"{where}: the table allows it ({cell.rule}), the store refused: {exc}")
        return
    assert cell.error is not None
    with pytest.raises(cell.error) as refused:
        _call(store, name, args)
    assert str(refused.value) == cell.message.format(name=store.name), where


#: Calls refused in every state for their arguments, before the store's state is asked: the versioned store's
#: ``restore_batch`` names ``restore_records``, which it restores with (the record timestamp is the version).
_NOT_IN_ANY_STATE = {(Family.VERSIONED, "restore_batch")}

#: Operations that end the store's life: each is sent to a store of its own.
_ENDING = {Op.CLOSE, Op.CRASH, Op.DOWNGRADE}

_CASES = [(t, b) for t in BUILT_TYPES for b in Backend]


@pytest.mark.parametrize("state", list(LifeState), ids=lambda s: s.value)
@pytest.mark.parametrize(("store_type", "backend"), _CASES, ids=[f"{t.value}-{b.value}" for t, b in _CASES])
def test_every_operation_answers_as_the_life_table_says(
    tmp_path: Path, store_type: StoreType, backend: Backend, state: LifeState
) -> None:
    arguments = _arguments(store_type)
    opened = 0

    def fresh() -> StateStore:
        nonlocal opened
        opened += 1
        return open_bytes_store(store_type, backend, name=f"s{opened}", state_dir=tmp_path,
                                options=_OPTIONS[family_of(store_type)])

    store = fresh()
    names = _operations(store)
    missing = [n for n in names if n not in arguments]
    assert not missing, f"no arguments for {missing}"
    with _in_state(store, state):
        for name in names:
            if OPERATIONS[name] not in _ENDING:
                _check(store, state, name, arguments[name])
    store.close()
    for name in names:
        if OPERATIONS[name] in _ENDING:
            ending = fresh()
            with _in_state(ending, state):
                _check(ending, state, name, arguments[name])
            ending.close()


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


def test_closing_or_crashing_twice_is_a_no_op_and_the_state_says_which() -> None:
    refuses: Callable[[LifeState], bool] = lambda s: not answer(s, Op.READ).allowed  # noqa: E731
    assert [s for s in LifeState if refuses(s)] == [LifeState.CLOSED, LifeState.CRASHED]
    for state in (LifeState.CLOSED, LifeState.CRASHED):
        assert answer(state, Op.CLOSE).noop and answer(state, Op.CRASH).noop
