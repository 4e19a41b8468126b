"""Hostile input to every operation: a result or a refusal, never a crash or a hang (PRIM-8, OPS-2, OPS-3).

Two kinds. Hostile *bytes*: every operation whose input has a hex ``bytes`` (or ``file``) field is fed
random and adversarial bytes in that field, other fields kept from a fixture case. Wrong JSON *types*:
every operation is fed its valid example input (a fixture case, or for the ``store.*`` operations a
hand-written one around a live store) with one field at a time, at any depth, replaced by ``null``, a
list, an object, a string, a boolean, a huge integer or a fraction, or removed. Either way the answer must
be an output or a refusal (``{"error": {...}}``); an exception or a testee's internal error fails.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kstate_conformance import rules
from kstate_conformance import store_types as types
from kstate_conformance.fixtures import all_cases
from kstate_conformance.scenarios import SCENARIO_OP
from kstate_conformance.store_types import KV, TIMESTAMPED_KV_HEADERS_ALIAS, VERSIONED_KV_WITH_HEADERS

BYTES_FIELDS = ("bytes", "file")


def _templates() -> dict[str, tuple[str, dict[str, Any]]]:
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for case in all_cases():
        for field in BYTES_FIELDS:
            if isinstance(case["input"].get(field), str) and case["op"] not in found:
                found[case["op"]] = (field, case["input"])
    return dict(sorted(found.items()))


TEMPLATES = _templates()

# Length fields claiming far more than the input holds: a varint count of 2^31-1, int32 sizes of 2^31-1.
ADVERSARIAL = [
    "feffffff0f", "fdffffff0f" + "00" * 4, "7fffffff" * 4, "ffffffff" * 6, "01" * 3 + "feffffff0f",
    "00" * 16 + "7fffffff", "ff" * 40, "80" * 12,
]


@rules("PRIM-8", "OPS-3")
@pytest.mark.parametrize("op", list(TEMPLATES))
@settings(max_examples=40)
@given(data=st.one_of(st.binary(max_size=64), st.sampled_from(ADVERSARIAL).map(bytes.fromhex)))
def test_decoders_refuse_or_answer(implementation: Any, op: str, data: bytes) -> None:
    field, template = TEMPLATES[op]
    out = implementation.call(op, {**template, field: data.hex()})
    assert isinstance(out, dict)


# --- wrong JSON types ---------------------------------------------------------------------------------

#: What stands in for a field: every JSON type, empty and not, a huge and a fractional number.
CONFUSIONS: tuple[Any, ...] = (None, [], [None], {}, {"x": None}, "zz", "", True, 2**70, -(2**70), 1.5)
#: Removal of the field, beside the replacements.
MISSING = object()
#: Fields that name a directory: a string there is a path relative to the testee's working directory, and
#: without one (or with null) a store is made in a fresh temporary directory; neither is worth leaving behind.
PATH_FIELDS = ("state_dir",)


def _codec_examples() -> dict[str, list[dict[str, Any]]]:
    """Per operation, the first valid fixture input (one that is answered, not refused) and the first
    one with another set of fields; an operation whose every case is refused keeps its first case. A store
    scenario is never sent to an implementation (OPS-5): its steps are, and the store.* tests confuse those."""
    found: dict[str, list[dict[str, Any]]] = {}
    cases = [c for c in all_cases() if c["op"] != SCENARIO_OP]
    for case in sorted(cases, key=lambda c: "error" in c["output"]):
        examples = found.setdefault(case["op"], [])
        if len(examples) < 2 and all(set(e) != set(case["input"]) for e in examples):
            examples.append(case["input"])
    return dict(sorted(found.items()))


CODEC_EXAMPLES = _codec_examples()

HANDLE, ITERATOR, STATE_DIR = "$handle", "$iterator", "$state_dir"
CONTEXT = {"timestamp": 1, "headers": [["h", "01"]], "offset": 0, "topic": "in", "partition": 0}
#: Valid inputs of the ``store.*`` operations around a live in-memory key-value store (placeholders filled per call).
STORE_EXAMPLES: dict[str, dict[str, Any]] = {
    "store.open": {"store_type": KV, "backend": "memory", "name": "s", "state_dir": STATE_DIR, "logging": True, "caching": True,
                   "cache_max_bytes": 1000, "cache_flush_listener": True, "context": CONTEXT,
                   "ignore_invalid_state": False, "application_id": "app", "task_id": "0_0"},
    "store.close": {"handle": HANDLE, "downgrade": False},
    "store.crash": {"handle": HANDLE},
    "store.capabilities": {},
    "store.set_context": {"handle": HANDLE, **CONTEXT},
    "store.changelog": {"handle": HANDLE},
    "store.flush": {"handle": HANDLE},
    "store.flush_cache": {"handle": HANDLE},
    "store.commit": {"handle": HANDLE, "changelog_offsets": [["app-s-changelog", 0, 5], ["other", 1, None]]},
    "store.committed_offset": {"handle": HANDLE, "topic": "app-s-changelog", "partition": 0},
    "store.put": {"handle": HANDLE, "key": "01", "value": "02"},
    "store.put_if_absent": {"handle": HANDLE, "key": "05", "value": "02"},
    "store.put_all": {"handle": HANDLE, "entries": [["01", "02"], ["03", None]]},
    "store.delete": {"handle": HANDLE, "key": "01"},
    "store.get": {"handle": HANDLE, "key": "01"},
    "store.range": {"handle": HANDLE, "from": "00", "to": "ff"},
    "store.reverse_range": {"handle": HANDLE, "from": "00", "to": "ff"},
    "store.all": {"handle": HANDLE},
    "store.reverse_all": {"handle": HANDLE},
    "store.prefix_scan": {"handle": HANDLE, "prefix": "01"},
    "store.approximate_num_entries": {"handle": HANDLE},
    "store.iterator_open": {"handle": HANDLE, "kind": "range", "from": "00", "to": "ff"},
    "store.iterator_next": {"iterator": ITERATOR, "max": 2},
    "store.iterator_peek_next_key": {"iterator": ITERATOR},
    "store.iterator_close": {"iterator": ITERATOR},
    "store.restore": {"handle": HANDLE, "records": [{"key": "01", "value": "02", "timestamp": 3, "headers": [["h", None]]}],
                      "batch_size": 10, "commit_offsets": True},
    "store.dump": {"handle": HANDLE},
    "store.task_files": {"handle": HANDLE},
    "store.write_task_file": {"handle": HANDLE, "file": ".checkpoint", "text": "0\n0\n"},
    "store.table_options": {"handle": HANDLE},
    "store.get_typed": {"handle": HANDLE, "key": "01", "fields": ["value"]},
    "store.wipe": {"state_dir": STATE_DIR, "name": "closed", "application_id": "app", "task_id": "0_0"},
    # The operations of each family with a prefix of its own (the key-value family's are the store.* ones above),
    # from its model: on this key-value handle (wrong types first, then the family is refused by name) or on the
    # store FAMILY_STORES names for the family.
    **{op: example for family in types.FAMILIES if family.op_prefix != "store."
       for op, example in types.family_model(family).op_examples(HANDLE).items()},
}
#: The store type and options a family's operations are tried on (by the operation's prefix).
FAMILY_STORES: dict[str, dict[str, Any]] = {
    "versioned_store.": {"store_type": VERSIONED_KV_WITH_HEADERS, "options": {"history_retention_ms": 100}},
}
#: The same on a RocksDB store, for the operations that reach its files.
ROCKSDB_EXAMPLES: dict[str, dict[str, Any]] = {
    "store.open": {"store_type": TIMESTAMPED_KV_HEADERS_ALIAS, "backend": "rocksdb", "name": "t", "state_dir": STATE_DIR,
                   "application_id": "app", "task_id": "0_0", "pre_4_3_reader": False, "ignore_invalid_state": True},
    "store.dump": {"handle": HANDLE},
    "store.table_options": {"handle": HANDLE},
    "store.task_files": {"state_dir": STATE_DIR, "application_id": "app", "task_id": "0_0"},
    "store.write_task_file": {"state_dir": STATE_DIR, "application_id": "app", "task_id": "0_0",
                              "file": "s.position", "text": "0\n1\nin 0 5\n"},
    "store.commit": {"handle": HANDLE, "changelog_offsets": [["app-s-changelog", 0, 5]]},
    "store.committed_offset": {"handle": HANDLE, "topic": "app-s-changelog", "partition": 0},
}


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every field and list item of ``value`` (the first two items of a list), depth first."""
    if path:
        yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:2]):
            yield from _paths(item, (*path, index))


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


def _replaced(example: dict[str, Any], path: tuple[Any, ...], confusion: Any) -> dict[str, Any]:
    copy: dict[str, Any] = json.loads(json.dumps(example))
    parent: Any = copy
    for step in path[:-1]:
        parent = parent[step]
    if confusion is MISSING:
        if isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent.pop(path[-1])
    else:
        parent[path[-1]] = confusion
    return copy


def _confused(example: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for path in _paths(example):
        for confusion in (*CONFUSIONS, MISSING):
            if path[-1] in PATH_FIELDS and (isinstance(confusion, str) or confusion in (None, MISSING)):
                continue
            if confusion is True and isinstance(_at(example, path), bool):
                continue  # the other boolean is a value of the field's own type, no confusion of its type
            shown = "removed" if confusion is MISSING else json.dumps(confusion)
            yield f"{'.'.join(map(str, path))} = {shown}", _replaced(example, path, confusion)


def _check_answer(implementation: Any, op: str, payload: dict[str, Any], what: str) -> dict[str, Any]:
    try:
        out = implementation.call(op, payload)
    except Exception as exc:  # an internal error of the implementation: the finding this test reports
        pytest.fail(f"{op} with {what}: {type(exc).__name__}: {exc}")
    assert isinstance(out, dict), f"{op} with {what}: the answer is not an object: {out!r}"
    if "error" in out:
        assert isinstance(out["error"], dict), f"{op} with {what}: the refusal is not an object: {out!r}"
    json.dumps(out, allow_nan=False)
    return out


@rules("OPS-2", "OPS-3")
@pytest.mark.parametrize("op", list(CODEC_EXAMPLES))
def test_wrong_json_types_are_refused_not_crashed(implementation: Any, op: str) -> None:
    if not implementation.supports(op):
        # Asked once, the adapter skips the test as it classifies the answer: absent where the operation is of a
        # feature or store type the implementation does not declare (lazy_headers), else unsupported.
        implementation.call(op, CODEC_EXAMPLES[op][0])
        pytest.skip(f"{implementation.name} does not support operation {op}")
    for example in CODEC_EXAMPLES[op]:
        for what, payload in _confused(example):
            _check_answer(implementation, op, payload, what)


class _LiveStore:
    """A store opened for one confused call of a ``store.*`` operation, closed after it."""

    def __init__(self, implementation: Any, backend: str, state_dir: Path, op: str = "") -> None:
        self.implementation = implementation
        self.state_dir = state_dir
        options: dict[str, Any] = {"store_type": KV, "backend": backend, "name": "s", "caching": True,
                                   "application_id": "app", "task_id": "0_0", "state_dir": str(state_dir)}
        for prefix, family in FAMILY_STORES.items():
            if op.startswith(prefix):
                options = {**options, "caching": False, **family}
        if op == "store.wipe":
            # Kafka's wipe is a whole task's (VS-31): the live store keeps out of the task the wipe names, or its
            # default task when the task field is confused away.
            options["task_id"] = "1_0"
        opened = implementation.call("store.open", options)
        assert "error" not in opened, f"opening a {backend} store failed: {opened['error']}"
        self.handle = opened["handle"]
        implementation.call("store.put_all", {"handle": self.handle, "entries": [["01", "aa"], ["02", "bb"]]})
        self.iterator = implementation.call("store.iterator_open", {"handle": self.handle, "kind": "all"}).get("iterator")

    def fill(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: self.fill(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.fill(v) for v in value]
        return {HANDLE: self.handle, ITERATOR: self.iterator, STATE_DIR: str(self.state_dir)}.get(value, value) \
            if isinstance(value, str) else value

    def close(self, answer_handles: list[str], *, with_own: bool = True) -> None:
        for handle in [self.handle] * with_own + answer_handles:
            self.implementation.call("store.close", {"handle": handle})


def _store_cases() -> list[tuple[str, str]]:
    return [(op, "memory") for op in STORE_EXAMPLES] + [(op, "rocksdb") for op in ROCKSDB_EXAMPLES]


#: Operations that end the store or the iterator they are given: a fresh store for each call.
_ENDING = ("store.close", "store.crash", "store.iterator_close")


@rules("OPS-2", "OPS-3")
@pytest.mark.parametrize(("op", "backend"), _store_cases())
def test_store_operations_refuse_wrong_json_types(implementation: Any, op: str, backend: str, tmp_path: Path) -> None:
    for op_needed in ("store.open", "store.put_all", "store.iterator_open", "store.close", op):
        if not implementation.supports(op_needed):
            pytest.skip(f"{implementation.name} does not support operation {op_needed}")
    example = (ROCKSDB_EXAMPLES if backend == "rocksdb" else STORE_EXAMPLES)[op]
    shared: _LiveStore | None = None
    try:
        for number, (what, payload) in enumerate(_confused(example)):
            # In-memory stores are cheap to open; a RocksDB store is shared unless the operation ends it.
            if op in _ENDING or backend == "memory":
                live = _LiveStore(implementation, backend, tmp_path / str(number), op)
            else:
                live = shared = shared or _LiveStore(implementation, backend, tmp_path / "shared", op)
            opened: list[str] = []
            try:
                out = _check_answer(implementation, op, live.fill(payload), what)
                if op == "store.open" and isinstance(out.get("handle"), str):
                    opened.append(out["handle"])
            finally:
                live.close(opened, with_own=live is not shared)
    finally:
        if shared is not None:
            shared.close([])
