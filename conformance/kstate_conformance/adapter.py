"""The adapter protocol an implementation under test satisfies (spec/ops.md, OPS-1).

A codec adapter answers :meth:`CodecAdapter.call` with the JSON output of a neutral operation, or a
``{"error": ...}`` object when the implementation refuses the input; it raises :class:`Unsupported`
for an operation it does not implement (a first-class answer: the test is skipped, not failed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

JsonDict = dict[str, Any]
Handler = Callable[[JsonDict], JsonDict]


class Unsupported(Exception):
    """The implementation does not provide this operation or capability."""


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
