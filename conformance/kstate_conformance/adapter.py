"""The adapter protocol an implementation under test satisfies (spec/ops.md, OPS-1).

An implementation adapter answers :meth:`ImplementationAdapter.call` with the JSON output of a neutral
operation, or a ``{"error": ...}`` object when the implementation refuses the input; it raises
:class:`Unsupported` for an operation it does not implement (a first-class answer: the test is skipped, not
failed). The suite calls :meth:`~ImplementationAdapter.begin_test` before each test and
:meth:`~ImplementationAdapter.close` once at the end; the base class makes both no-ops, so an adapter
overrides only what it needs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any

JsonDict = dict[str, Any]
Handler = Callable[[JsonDict], JsonDict]


class Unsupported(Exception):
    """The implementation does not provide this operation or capability."""


class ImplementationAdapter(ABC):
    """What the suite needs from an implementation: ``name``, ``supports``, ``call``; ``begin_test`` and
    ``close`` are no-ops unless the implementation needs them (an out-of-process testee does)."""

    name: str

    @abstractmethod
    def supports(self, op: str) -> bool:
        """Whether ``op`` is implemented."""

    @abstractmethod
    def call(self, op: str, payload: JsonDict) -> JsonDict:
        """Run ``op`` on ``payload``; errors as ``{"error": ...}``; :class:`Unsupported` if absent."""

    def begin_test(self, test_id: str = "") -> None:
        """Called before each test (``test_id`` is its pytest node id)."""
        return None  # an in-process implementation has nothing to reset

    def close(self) -> None:
        """Called once when the run ends: release what the implementation holds."""
        return None  # an in-process implementation holds nothing to release


class ReferenceAdapter(ImplementationAdapter):
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

    def begin_test(self, test_id: str = "") -> None:
        """The stores earlier tests closed are forgotten: nothing names them again, and kept they would make
        every full garbage collection of a run walk every store it ever opened (issue 35)."""
        from kstate.ops.store_ops import forget_closed

        forget_closed()


class OverrideAdapter(ImplementationAdapter):
    """An adapter whose chosen operations are replaced; how mutants are built."""

    def __init__(self, name: str, base: ImplementationAdapter, overrides: Mapping[str, Handler]) -> None:
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

    def begin_test(self, test_id: str = "") -> None:
        self._base.begin_test(test_id)

    def close(self) -> None:
        self._base.close()
