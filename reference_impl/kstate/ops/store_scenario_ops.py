"""``store.scenario``: a stateful store case as one fixture, expanded into ordinary ``store.*`` calls (OPS-5).

Input: ``store_type``, ``backend`` (``memory``/``rocksdb``; omitted, every backend runs the scenario and
must answer the same), ``open_input`` (the other fields of ``store.open``: logging, caching, cache size,
context, the family's ``options``, ...) and ``steps``, each ``{"op": "store.x", "input": {...}}``. The scenario opens a fresh store
in a new temporary state directory, then runs the steps in order. A ``store.open`` step reopens: its
input is merged over the scenario's type and options, and later steps use the new handle. A step
naming a handle gets the current one; ``store.iterator_open`` answers the step's ``as`` name (default
``it1``, ``it2``, ...) in place of the implementation's id, and iterator steps name it so. A
``store.dump`` step with ``keep`` (column family names) answers those families' entries and the sorted
names of all families (``families``), per segment for a segmented store. A step with ``by_location`` true names the store by its state
directory, application, task and store name instead of the handle (so does every step after a refused
open).

A step whose ``op`` starts with ``fs.`` is run by the scenario itself on the state directory, never sent
to the implementation (the layout is the LAY rules'): ``fs.write`` (``path``, ``hex`` or ``text``),
``fs.mkdir``, ``fs.symlink`` (``target``), ``fs.delete`` (a file, link or tree), ``fs.truncate``
(``size``; negative: cut from the end), ``fs.corrupt`` (``offset``, default the middle, negative from
the end; ``length``, default 64: those bytes XOR FF), ``fs.rocksdb_put`` (``family``, ``key``, ``value`` hex: a raw write into a closed
database), ``fs.rocksdb_drop_family`` (``family``), ``fs.snapshot`` (``as``, default ``s``) and
``fs.changed`` (``since``): the sorted paths added, removed or changed since that snapshot (RocksDB's info log,
``LOG`` and ``LOG.old.*``, is no part of a store and not listed: KV-23). Paths are
relative to the state directory; a ``*`` in the last part picks the largest matching file. Each answers
``{}`` (``fs.changed``: ``{"changed": [...]}``).

Output: ``{"open": <first open's answer>, "steps": [<each step's answer>]}``. A step's ``fields`` (the
scenario's ``open_fields`` for the first open) keeps only those answer fields; an open keeps none unless
asked (its handle is the implementation's own), a refusal is kept whole.

:func:`run_scenario` takes the ``call`` to expand into, so the conformance harness runs a scenario
through the tested implementation's own ``store.*`` operations; the registered operation is the
reference's expansion, used by ``kstate fixtures verify``.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kstate.errors import KStateError
from kstate.ops import JsonDict, call, op
from kstate.ops.compare import differences
from kstate.ops.fields import Field, Output, Request
from kstate.storage_files import store_digest

SCENARIO_OP = "store.scenario"
ALL_BACKENDS = ("memory", "rocksdb")
Call = Callable[[str, JsonDict], JsonDict]

#: Operations that take no handle: they name the store (or an iterator) otherwise.
_NO_HANDLE = frozenset({"store.open", "store.capabilities", "store.iterator_next",
                        "store.iterator_peek_next_key", "store.iterator_close"})
_ITERATOR_OPS = frozenset({"store.iterator_next", "store.iterator_peek_next_key", "store.iterator_close"})
_LOCATION = {"application_id": "app", "task_id": "0_0", "name": "store"}
#: The scenario's ``store.open`` fields. ``options``, the field's first name, is refused by name: inside it,
#: ``options.options`` read as the family's options, which is the confusion the rename ended.
OPEN_INPUT = "open_input"


class ScenarioError(KStateError):
    """A scenario that cannot run as written, or backends that answered it differently."""


def is_store_op(name: str) -> bool:
    """A ``store.*`` operation, or one of a store family's own (``session_store.*``, ``window_store.*``, ...)."""
    family, dot, _ = name.partition(".")
    return bool(dot) and (family == "store" or family.endswith("_store"))


def _object(value: Any, what: str) -> JsonDict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ScenarioError(f"store.scenario: {what} must be an object, got {type(value).__name__}")
    return value


FS_OPS = frozenset({"fs.write", "fs.mkdir", "fs.symlink", "fs.delete", "fs.truncate", "fs.corrupt",
                    "fs.rocksdb_put", "fs.rocksdb_drop_family", "fs.snapshot", "fs.changed"})


def _steps(payload: JsonDict) -> list[JsonDict]:
    steps = payload.get("steps")
    if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
        raise ScenarioError("store.scenario: steps must be a list of {op, input} objects")
    for i, step in enumerate(steps):
        name = step.get("op")
        if isinstance(name, str) and name in FS_OPS:
            pass
        elif not isinstance(name, str) or not is_store_op(name) or name == SCENARIO_OP:
            raise ScenarioError(f"store.scenario: step {i} names no store, store family or fs.* operation: {name!r}")
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
    if "segments" in out:  # a segmented store: the same per segment (LAY-3)
        return {"segments": {name: _keep_families({"column_families": cfs}, keep)
                             for name, cfs in (out.get("segments") or {}).items()}}
    families = out.get("column_families") or {}
    return {"families": sorted(families), "column_families": {cf: families[cf] for cf in keep if cf in families}}



def _path(root: Path, given: JsonDict, exists: bool = False) -> Path:
    rel = given.get("path")
    if not isinstance(rel, str) or not rel or Path(rel).is_absolute() or ".." in Path(rel).parts:
        raise ScenarioError(f"store.scenario: an fs step needs a relative path inside the state directory: {rel!r}")
    path = root / rel
    if "*" in path.name:
        matches = sorted((p for p in path.parent.glob(path.name) if p.is_file()), key=lambda p: (-p.stat().st_size, p.name))
        if not matches:
            raise ScenarioError(f"store.scenario: no file matches {rel!r}")
        path = matches[0]
    if exists and not (path.exists() or path.is_symlink()):
        raise ScenarioError(f"store.scenario: {rel!r} does not exist")
    return path


def _int(given: JsonDict, field: str, default: int | None = None) -> int:
    value = given.get(field, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ScenarioError(f"store.scenario: an fs step's {field} must be an integer, got {value!r}")
    return value


def _rocksdb(path: Path) -> Any:
    import rocksdict

    from kstate.stores.engine import list_column_families

    families = list_column_families(path)
    if not families:
        raise ScenarioError(f"store.scenario: no RocksDB database at {path}")
    return rocksdict.Rdict(str(path), rocksdict.Options(raw_mode=True),
                           column_families={cf: rocksdict.Options(raw_mode=True) for cf in families})


def run_fs_step(root: Path, name: str, given: JsonDict, snapshots: dict[str, dict[str, str]]) -> JsonDict:
    """One ``fs.*`` step on the state directory ``root``, done by the scenario itself (OPS-5)."""
    if name == "fs.snapshot":
        snapshots[str(given.get("as", "s"))] = store_digest(root)
        return {}
    if name == "fs.changed":
        label = str(given.get("since", "s"))
        if label not in snapshots:
            raise ScenarioError(f"store.scenario: fs.changed since an unknown snapshot {label!r}")
        before, after = snapshots[label], store_digest(root)
        return {"changed": sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))}
    path = _path(root, given, exists=name not in ("fs.write", "fs.mkdir", "fs.symlink"))
    if name == "fs.write":
        path.parent.mkdir(parents=True, exist_ok=True)
        if "hex" in given:
            path.write_bytes(bytes.fromhex(str(given["hex"])))
        else:
            path.write_text(str(given.get("text", "")))
    elif name == "fs.mkdir":
        path.mkdir(parents=True, exist_ok=True)
    elif name == "fs.symlink":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(str(given.get("target", "")))
    elif name == "fs.delete":
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    elif name == "fs.truncate":
        size = _int(given, "size")
        with open(path, "r+b") as file:
            file.truncate(max(0, size + path.stat().st_size) if size < 0 else size)  # negative: cut from the end
    elif name == "fs.corrupt":
        data = bytearray(path.read_bytes())
        start = _int(given, "offset", len(data) // 2)
        start = start + len(data) if start < 0 else start
        stop = min(len(data), start + _int(given, "length", 64))
        data[start:stop] = bytes(b ^ 0xFF for b in data[start:stop])
        path.write_bytes(bytes(data))
    else:  # fs.rocksdb_put, fs.rocksdb_drop_family: raw edits of a closed database
        db = _rocksdb(path)
        try:
            family = str(given.get("family"))
            if name == "fs.rocksdb_drop_family":
                db.drop_column_family(family)
            else:
                cf = db.get_column_family(family)
                cf.put(bytes.fromhex(str(given.get("key"))), bytes.fromhex(str(given.get("value"))))
                del cf
        finally:
            db.close()
    return {}


def open_input(payload: JsonDict) -> JsonDict:
    """The scenario's other ``store.open`` fields (``open_input``); the retired name ``options`` is refused (OPS-3)."""
    if "options" in payload:
        raise ScenarioError(f"store.scenario: options is not a scenario field; the store.open fields go in {OPEN_INPUT}"
                            " (the family's options in open_input.options)")
    return _object(payload.get(OPEN_INPUT), OPEN_INPUT)


#: The store.capabilities a scenario step needs, by operation (a step of the state directory: ``fs``).
_STEP_FEATURES = {"store.crash": "crash", "store.dump": "dump", "store.iterator_open": "iterators"}
#: store.open fields that need a capability of the same name.
_OPEN_FEATURES = ("caching", "cache_flush_listener")


def scenario_requires(payload: JsonDict) -> JsonDict:
    """What a scenario needs of an implementation, as a golden case declares it (``requires``): its store type,
    its backend when it names one, and the features (store.capabilities names, ``fs`` for state-directory steps)."""
    opens = [open_input(payload)] + [_object(step.get("input"), "input") for step in _steps(payload)
                                     if step.get("op") == "store.open"]
    features = {name for fields in opens for name in _OPEN_FEATURES if fields.get(name)}
    for step in _steps(payload):
        name = str(step.get("op"))
        if name in FS_OPS:
            features.add("fs")
        elif name in _STEP_FEATURES:
            features.add(_STEP_FEATURES[name])
    out: JsonDict = {"store_type": payload.get("store_type", "kv")}
    if payload.get("backend") is not None:
        out["backend"] = payload["backend"]
    if features:
        out["features"] = sorted(features)
    return out


def run_backend(call_op: Call, payload: JsonDict, backend: str, state_dir: str) -> JsonDict:
    """Run the scenario on one backend in ``state_dir`` through ``call_op``; closes what it opened."""
    store_type = payload.get("store_type", "kv")
    options = open_input(payload)
    location = {**_LOCATION, **{k: options[k] for k in _LOCATION if k in options}, "state_dir": state_dir}
    base = {"store_type": store_type, **options, **location, "backend": backend}
    handles: list[str] = []
    iterators: dict[str, str] = {}
    current: str | None = None
    snapshots: dict[str, dict[str, str]] = {}

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
            if name in FS_OPS:
                try:
                    answers.append(run_fs_step(Path(state_dir), name, given, snapshots))
                except (OSError, ValueError, TypeError) as exc:
                    # The harness's own file edit could not be done as written: the scenario is malformed.
                    raise ScenarioError(f"store.scenario: {name} step could not run: {exc}") from exc
                continue
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


#: The scenario's fields; :func:`run_scenario` reads them itself, as the harness runs it on a testee's operations.
SCENARIO_FIELDS: tuple[Field, ...] = (
    Field("store_type", "string", default="kv"),
    Field("backend", "string | null", "memory or rocksdb; omitted, every backend must answer the same", None),
    Field(OPEN_INPUT, "object", "the other store.open fields (the family's own are its options)", None),
    Field("open_fields", "list[string]", "the first open's answer fields to keep", None),
    Field("steps", "list[{op: string, input: object, as?: string, fields?: list[string], keep?: list[string], "
          "by_location?: bool}]", "store.* calls, the handle filled in; or fs.* steps the harness "
          "runs itself on the state directory (paths relative to it, a * in the last part: the "
          "largest matching file): fs.write {path, hex | text}, fs.mkdir {path}, fs.symlink "
          "{path, target}, fs.delete {path}, fs.truncate {path, size (negative: cut from the end)}, fs.corrupt {path, "
          "offset?, length?} (XOR FF; default the middle, 64 bytes), fs.rocksdb_put {path, "
          "family, key, value}, fs.rocksdb_drop_family {path, family} (a closed database), "
          "fs.snapshot {as?}, fs.changed {since?} -> {changed: [paths]}"),
)


@op(SCENARIO_OP, rules=["OPS-5"], inputs=SCENARIO_FIELDS, outputs=(
    Output("open", "object", "the first open's answer, reduced to open_fields"),
    Output("steps", "list[object]", "each step's answer, reduced to its fields")))
def store_scenario(request: Request) -> JsonDict:
    """Run a list of ``store.*`` steps on a fresh store (per backend when none is named); their answers."""
    return run_scenario(call, request.payload)
