"""``store.scenario``: a stateful store case as one fixture, expanded into ordinary ``store.*`` calls (OPS-5).

Input: ``store_type``, ``backend`` (``memory``/``rocksdb``; omitted, every backend runs the scenario and
must answer the same), ``options`` (the other fields of ``store.open``: logging, caching, cache size,
context, ...) and ``steps``, each ``{"op": "store.x", "input": {...}}``. The scenario opens a fresh store
in a new temporary state directory, then runs the steps in order. A ``store.open`` step reopens: its
input is merged over the scenario's type and options, and later steps use the new handle. A step
naming a handle gets the current one; ``store.iterator_open`` answers the step's ``as`` name (default
``it1``, ``it2``, ...) in place of the implementation's id, and iterator steps name it so. A
``store.dump`` step with ``keep`` (column family names) answers those families' entries and the sorted
names of all families (``families``). A step with ``by_location`` true names the store by its state
directory, application, task and store name instead of the handle (so does every step after a refused
open).

Output: ``{"open": <first open's answer>, "steps": [<each step's answer>]}``. A step's ``fields`` (the
scenario's ``open_fields`` for the first open) keeps only those answer fields; an open keeps none unless
asked (its handle is the implementation's own), a refusal is kept whole.

:func:`run_scenario` takes the ``call`` to expand into, so the conformance harness runs a scenario
through the tested implementation's own ``store.*`` operations; the registered operation is the
reference's expansion, used by ``kstate fixtures verify``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from typing import Any

from kstate.errors import KStateError
from kstate.ops import JsonDict, call, op
from kstate.ops.compare import differences

SCENARIO_OP = "store.scenario"
ALL_BACKENDS = ("memory", "rocksdb")
Call = Callable[[str, JsonDict], JsonDict]

#: Operations that take no handle: they name the store (or an iterator) otherwise.
_NO_HANDLE = frozenset({"store.open", "store.capabilities", "store.iterator_next",
                        "store.iterator_peek_next_key", "store.iterator_close"})
_ITERATOR_OPS = frozenset({"store.iterator_next", "store.iterator_peek_next_key", "store.iterator_close"})
_LOCATION = {"application_id": "app", "task_id": "0_0", "name": "store"}


class ScenarioError(KStateError):
    """A scenario that cannot run as written, or backends that answered it differently."""


def _object(value: Any, what: str) -> JsonDict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ScenarioError(f"store.scenario: {what} must be an object, got {type(value).__name__}")
    return value


def _steps(payload: JsonDict) -> list[JsonDict]:
    steps = payload.get("steps")
    if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
        raise ScenarioError("store.scenario: steps must be a list of {op, input} objects")
    for i, step in enumerate(steps):
        name = step.get("op")
        if not isinstance(name, str) or not name.startswith("store.") or name == SCENARIO_OP:
            raise ScenarioError(f"store.scenario: step {i} names no store.* operation: {name!r}")
        _object(step.get("input"), f"step {i} input")
    return steps


def _project(output: JsonDict, fields: Any) -> JsonDict:
    # Only the answer fields a step asks for (an open answers none by default); a refusal stays whole.
    if "error" in output:
        return output
    if not isinstance(fields, list):
        raise ScenarioError("store.scenario: a step's fields must be a list of answer field names")
    return {k: v for k, v in output.items() if k in fields}


def _keep_families(out: JsonDict, keep: Any) -> JsonDict:
    # A dump step's ``keep``: the entries of those families only, beside the names of all of them.
    if not isinstance(keep, list):
        raise ScenarioError("store.scenario: a dump step's keep must be a list of column family names")
    families = out.get("column_families") or {}
    return {"families": sorted(families), "column_families": {cf: families[cf] for cf in keep if cf in families}}


def run_backend(call_op: Call, payload: JsonDict, backend: str, state_dir: str) -> JsonDict:
    """Run the scenario on one backend in ``state_dir`` through ``call_op``; closes what it opened."""
    store_type = payload.get("store_type", "kv")
    options = _object(payload.get("options"), "options")
    location = {**_LOCATION, **{k: options[k] for k in _LOCATION if k in options}, "state_dir": state_dir}
    base = {"store_type": store_type, **options, **location, "backend": backend}
    handles: list[str] = []
    iterators: dict[str, str] = {}
    current: str | None = None

    def open_store(overrides: JsonDict, fields: Any) -> JsonDict:
        nonlocal current
        if "name" in overrides:  # a second store beside the first, in the same task directory
            location["name"] = str(overrides["name"])
        out = call_op("store.open", {**base, **overrides, **location, "backend": backend})
        current = None if "error" in out else str(out.get("handle"))
        if current is not None:
            handles.append(current)
        return _project(out, fields or [])

    try:
        first = open_store({}, payload.get("open_fields"))
        answers: list[JsonDict] = []
        for step in _steps(payload):
            name, given = step["op"], dict(_object(step.get("input"), "input"))
            if name == "store.open":
                answers.append(open_store(given, step.get("fields")))
                continue
            if name in _ITERATOR_OPS:
                label = str(given.get("iterator"))
                given["iterator"] = iterators.get(label, label)
            elif name not in _NO_HANDLE:
                by_location = current is None or bool(step.get("by_location"))
                given = {**location, **given} if by_location else {**given, "handle": current}
            out = call_op(name, given)
            if name == "store.dump" and "keep" in step and "error" not in out:
                out = _keep_families(out, step["keep"])
            if name == "store.iterator_open" and "error" not in out:
                label = str(step.get("as") or f"it{len(iterators) + 1}")
                iterators[label] = str(out.get("iterator"))
                out = {**out, "iterator": label}
            answers.append(_project(out, step["fields"]) if "fields" in step else out)
        return {"open": first, "steps": answers}
    finally:
        for handle in handles:
            call_op("store.close", {"handle": handle})  # a second close is a no-op (KV-12)


def run_scenario(call_op: Call, payload: JsonDict, backends: Sequence[str] | None = None) -> JsonDict:
    """The scenario's answer through ``call_op``; without a ``backend``, each of ``backends`` must agree."""
    payload = _object(payload, "input")
    backend = payload.get("backend")
    if backend is not None:
        chosen: Sequence[str] = (str(backend),)
    else:
        chosen = tuple(backends) if backends is not None else ALL_BACKENDS
    if not chosen:
        raise ScenarioError("store.scenario: no backend to run on")
    answers: dict[str, JsonDict] = {}
    for name in chosen:
        with tempfile.TemporaryDirectory(prefix="kstate-scenario-") as state_dir:
            answers[name] = run_backend(call_op, payload, name, state_dir)
    first_name, first = next(iter(answers.items()))
    for name, answer in answers.items():
        # Refusals agree whatever their details (OPS-4).
        diffs = differences(answer, first) + differences(first, answer)
        if diffs:
            raise ScenarioError(f"store.scenario: backends {first_name} and {name} answered differently: "
                                + "; ".join(diffs[:5]))
    return first


@op(SCENARIO_OP, rules=["OPS-5"])
def store_scenario(payload: JsonDict) -> JsonDict:
    """Run a list of ``store.*`` steps on a fresh store (per backend when none is named); their answers."""
    return run_scenario(call, payload)
