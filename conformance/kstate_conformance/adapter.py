"""The adapter protocol an implementation under test satisfies (spec/ops.md, OPS-1).

A codec adapter answers :meth:`CodecAdapter.call` with the JSON output of a neutral operation, or a
``{"error": ...}`` object when the implementation refuses the input; it raises :class:`Unsupported`
for an operation it does not implement (a first-class answer: the test is skipped, not failed).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

JsonDict = dict[str, Any]
Handler = Callable[[JsonDict], JsonDict]


class Unsupported(Exception):
    """The implementation does not provide this operation or capability."""


class ImplementationNotFound(LookupError):
    """An ``--impl`` name that names no implementation."""


@runtime_checkable
class CodecAdapter(Protocol):
    """What the suite needs from an implementation's codecs."""

    name: str

    def supports(self, op: str) -> bool:
        """Whether ``op`` is implemented."""
        ...

    def call(self, op: str, payload: JsonDict) -> JsonDict:
        """Run ``op`` on ``payload``; errors as ``{"error": ...}``; :class:`Unsupported` if absent."""
        ...


class ReferenceAdapter:
    """The reference implementation (``kstate``) behind the adapter protocol."""

    name = "reference"

    def __init__(self) -> None:
        from kstate.ops import load_all

        self._ops = load_all()

    def supports(self, op: str) -> bool:
        return op in self._ops

    def call(self, op: str, payload: JsonDict) -> JsonDict:
        from kstate.ops import call

        if op not in self._ops:
            raise Unsupported(op)
        return call(op, payload)


class OverrideAdapter:
    """An adapter whose chosen operations are replaced; how mutants are built."""

    def __init__(self, name: str, base: CodecAdapter, overrides: Mapping[str, Handler]) -> None:
        self.name = name
        self._base = base
        self._overrides = dict(overrides)

    def supports(self, op: str) -> bool:
        return op in self._overrides or self._base.supports(op)

    def call(self, op: str, payload: JsonDict) -> JsonDict:
        handler = self._overrides.get(op)
        if handler is None:
            return self._base.call(op, payload)
        from kstate.errors import KStateError
        from kstate.ops import error_of

        try:
            return handler(payload)
        except KStateError as exc:
            return error_of(exc)


TESTEE_PREFIXES = ("cmd:", "testee:")


def load_implementation(spec: str, *, timeout: float | None = None, validate: bool = False) -> CodecAdapter:
    """Resolve ``reference``, ``mutant:NAME``, ``cmd:COMMAND`` (a testee) or ``module:factory`` to an adapter.

    ``timeout`` (seconds per request) and ``validate`` (check every answer against the protocol schema)
    apply to out-of-process testees only (spec/testee-protocol.md).
    """
    if spec == "reference":
        return ReferenceAdapter()
    if spec.startswith(TESTEE_PREFIXES):
        from kstate_conformance.testee import DEFAULT_TIMEOUT, SubprocessAdapter

        command = spec.split(":", 1)[1].strip()
        if not command:
            raise ImplementationNotFound(f"{spec!r} names no command")
        return SubprocessAdapter(command, timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
                                 validate=validate, label=spec)
    if spec.startswith("mutant:"):
        from kstate_conformance.mutants import get_mutant

        return get_mutant(spec.split(":", 1)[1]).adapter()
    if ":" in spec:
        module_name, _, attr = spec.partition(":")
        try:
            factory = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise ImplementationNotFound(f"cannot load implementation {spec!r}: {exc}") from exc
        adapter = factory() if callable(factory) and not isinstance(factory, CodecAdapter) else factory
        if not isinstance(adapter, CodecAdapter):
            raise ImplementationNotFound(f"{spec!r} did not give an object with name, supports() and call()")
        return adapter
    raise ImplementationNotFound(
        f"unknown implementation {spec!r}: use reference, mutant:NAME, cmd:COMMAND or module:factory")
