"""The implementation-neutral operation vocabulary: JSON in, JSON out, over the pure codecs.

Every operation has a dotted name (``varint.write_varint``), the spec rules it exercises, and a
handler taking and returning JSON-shaped dicts. Conventions (spec/ops.md, OPS-*):

* byte strings are lowercase hex, ``""`` is zero bytes, ``None`` is a null;
* integers are plain ints covering the signed 64-bit range;
* headers are lists of ``[key, hex-or-None]`` pairs;
* a refused input is ``{"error": {...}}`` in place of the output (or of a sub-output), possibly
  beside other fields the operation always reports;
* handlers read their input through :mod:`kstate.ops.inputs`, so a missing field or one of the wrong
  JSON type is refused as an ``InputError`` naming the field, never raised as a ``TypeError``; an operation
  that declares its fields on ``@op`` (:mod:`kstate.ops.fields`: name, type, default, doc) gets them parsed
  into a :class:`~kstate.ops.fields.Request` before its handler runs, and the index is generated from them.

The same vocabulary is what golden fixtures, recorded Kafka vectors and out-of-process testees speak.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from kstate.codecs.store_types import Family
from kstate.errors import CodecError, KStateError
from kstate.ops.fields import Field, Output, Request, parse_request
from kstate.ops.inputs import InputError, as_headers, as_payload

JsonDict = dict[str, Any]
Handler = Callable[[JsonDict], JsonDict]
RequestHandler = Callable[[Request], JsonDict]
LeniencyCheck = Callable[[JsonDict], "str | None"]

LEVELS = ("required", "recommended", "hardened", "tentative")


@dataclass(frozen=True)
class OpSpec:
    """One operation: its name, family, spec rules, handler and the Kafka methods it mirrors."""

    name: str
    family: str
    rules: tuple[str, ...]
    handler: Handler
    java_ops: tuple[str, ...] = ()
    level: str = "required"
    lenient: LeniencyCheck | None = None
    doc: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    #: The declared input and output fields; None where the index derives them from the fixtures.
    inputs: tuple[Field, ...] | None = None
    outputs: tuple[Output, ...] = ()


REGISTRY: dict[str, OpSpec] = {}


@dataclass(frozen=True)
class IndexStore:
    """One store's part of the operation index's example run (``kstate.ops.index``), declared by its family.

    ``steps`` are ``(operation, input)`` pairs, its ``store.open`` among them; they name the store's handle
    ``$<handle>`` and its iterators ``$<handle>-i1``, ... The index shows the handle as ``handle`` (``h5``), its
    name when the family joined the index, so that the families' order of running changes no example.
    """

    family: Family
    handle: str | None
    steps: tuple[tuple[str, JsonDict], ...]


#: The state directory the index's example run names; the run puts a fresh one in its place and shows this name.
INDEX_STATE_DIR = "/tmp/kstate-state"

#: The stores of the index's example run, as the family op modules declare them (:func:`index_store`).
INDEX_STORES: list[IndexStore] = []


def index_store(family: Family, handle: str | None, *steps: tuple[str, JsonDict]) -> None:
    """Declare a store of ``family`` for the index's example run (``handle`` None: its steps open no handle)."""
    if handle is not None and any(store.handle == handle for store in INDEX_STORES):
        raise ValueError(f"index handle {handle!r} declared twice")
    INDEX_STORES.append(IndexStore(family, handle, tuple(steps)))



def _family_modules() -> list[str]:
    """The modules that register operations, by their names: every ``*_ops`` module of this package, so that a
    family's operations module needs no line here; importing them fills REGISTRY."""
    return [f"{__name__}.{info.name}" for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name)
            if info.name.endswith("_ops")]


@overload
def op(name: str, *, rules: tuple[str, ...] | list[str], java: tuple[str, ...] | list[str] = (),
       level: str = "required", lenient: LeniencyCheck | None = None, inputs: None = None,
       outputs: Sequence[Output] = ()) -> Callable[[Handler], Handler]: ...


@overload
def op(name: str, *, rules: tuple[str, ...] | list[str], java: tuple[str, ...] | list[str] = (),
       level: str = "required", lenient: LeniencyCheck | None = None, inputs: Sequence[Field],
       outputs: Sequence[Output] = ()) -> Callable[[RequestHandler], Handler]: ...


def op(
    name: str,
    *,
    rules: tuple[str, ...] | list[str],
    java: tuple[str, ...] | list[str] = (),
    level: str = "required",
    lenient: LeniencyCheck | None = None,
    inputs: Sequence[Field] | None = None,
    outputs: Sequence[Output] = (),
) -> Callable[[Any], Handler]:
    """Register ``handler`` as operation ``name``; the family is the part before the first dot.

    With ``inputs`` the handler takes the :class:`Request` those fields parse (OPS-2, OPS-3), and what is
    registered and returned is a handler of the JSON input, so mutants and callers keep passing payloads.
    """
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}")
    declared = None if inputs is None else tuple(inputs)

    def register(handler: Any) -> Handler:
        if name in REGISTRY:
            raise ValueError(f"operation {name!r} registered twice")
        if declared is None:
            json_handler: Handler = handler
        else:
            typed: RequestHandler = handler

            def json_handler(payload: JsonDict) -> JsonDict:
                return typed(parse_request(declared, payload))

            json_handler.__doc__, json_handler.__name__ = handler.__doc__, handler.__name__
            json_handler.__wrapped__ = handler  # type: ignore[attr-defined]
        REGISTRY[name] = OpSpec(
            name=name,
            family=name.split(".", 1)[0],
            rules=tuple(rules),
            handler=json_handler,
            java_ops=tuple(java),
            level=level,
            lenient=lenient,
            doc=(handler.__doc__ or "").strip().splitlines()[0] if handler.__doc__ else "",
            inputs=declared,
            outputs=tuple(outputs),
        )
        return json_handler

    return register


def import_family_modules(modules: Iterable[str]) -> None:
    """Import each module that exists, so that it registers itself; one that exists but cannot import still raises."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise


#: Whether every family module has been imported (or found not to exist): from then on :func:`load_all` answers the
#: registry without asking the import system again, which every operation call did (issue 35: 15 imports a call).
_families_loaded = False


def load_all() -> dict[str, OpSpec]:
    """Import every family module that exists and return the filled registry; a module that failed to import is
    tried again at the next call, as before."""
    global _families_loaded
    if not _families_loaded:
        import_family_modules(_family_modules())
        _families_loaded = True
    return REGISTRY


def error_of(exc: KStateError) -> JsonDict:
    """The JSON form of a typed error (OPS-3)."""
    body: JsonDict = {"type": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, CodecError):
        body["format"] = exc.fmt
        body["reason"] = exc.reason
        if exc.offset is not None:
            body["offset"] = exc.offset
    elif isinstance(exc, InputError):
        body["field"] = exc.field
        body["reason"] = exc.reason
    return {"error": body}


def capture(compute: Callable[[], JsonDict]) -> JsonDict:
    """Run ``compute``; a typed error becomes ``{"error": ...}`` (for sub-outputs of composite ops)."""
    try:
        return compute()
    except KStateError as exc:
        return error_of(exc)


def call(name: str, payload: JsonDict) -> JsonDict:
    """Run the reference handler of ``name`` on ``payload``; typed errors become ``{"error": ...}``.

    A missing input field or one of the wrong JSON type is a refusal naming the field (OPS-3).
    """
    spec = load_all().get(name)
    if spec is None:
        raise KeyError(f"unknown operation {name!r}")
    return capture(lambda: spec.handler(as_payload(payload)))


# --- JSON helpers shared by the family modules ------------------------------------------------------


def unhex(value: str | None, fmt: str = "hex") -> bytes | None:
    """Hex (or None) to bytes (or None)."""
    if value is None:
        return None
    try:
        return bytes.fromhex(value)
    except (ValueError, TypeError) as exc:
        raise CodecError(fmt, f"not a hex string: {value!r}") from exc


def unhex_required(value: str | None, fmt: str = "hex") -> bytes:
    """Hex to bytes, refusing None."""
    data = unhex(value, fmt)
    if data is None:
        raise CodecError(fmt, "expected bytes, got null")
    return data


def tohex(value: bytes | None) -> str | None:
    """Bytes (or None) to lowercase hex (or None)."""
    return None if value is None else value.hex()


def headers_from_json(value: Any, where: str = "headers") -> list[tuple[str, bytes | None]] | None:
    """``[[key, hex-or-None], ...]`` to ``[(key, bytes-or-None), ...]``; None stays None; a wrong shape names ``where``."""
    return as_headers(value, where)


def headers_to_json(value: list[tuple[str, bytes | None]] | None) -> list[list[Any]] | None:
    """``[(key, bytes-or-None), ...]`` to ``[[key, hex-or-None], ...]``; None stays None."""
    if value is None:
        return None
    return [[k, tohex(v)] for k, v in value]


# --- recorded vectors ---------------------------------------------------------------------------------

#: Java method (as the vector files spell it) to how its recorded input reads as the operation's input,
#: for the few inputs a vector file cannot express (Java identity); registered by the family modules.
VECTOR_INPUTS: dict[str, Callable[[JsonDict], JsonDict]] = {}


def vector_input(java_op: str, payload: JsonDict) -> JsonDict:
    """The operation input standing for a recorded vector's ``input`` (unchanged for most methods)."""
    adapt = VECTOR_INPUTS.get(java_op)
    return payload if adapt is None else adapt(payload)
