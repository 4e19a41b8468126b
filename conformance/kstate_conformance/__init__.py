"""kstate_conformance: the Kafka Streams state-store conformance suite.

Implementations plug in through :mod:`kstate_conformance.adapter`; tests speak only the neutral
operation vocabulary (spec/ops.md), never the reference implementation's internals.

Modules import one way: ``adapter`` (the protocol, in-process adapters) < ``testee`` (out of process) <
``mutants`` < ``loading`` (``--impl`` to an adapter) < ``plugin``. Tests build on ``harness`` (Kit, Store),
``strategies`` and ``bytes_model``, which, like ``models``, are written from the spec and import nothing of
the reference, so that the suite can catch the reference's bugs.

PYTEST_DONT_REWRITE: ``kstate conformance`` imports this package before pytest starts, and pytest marks an
installed plugin's packages for assertion rewriting; this package body asserts nothing, so it opts out
(without the marker pytest warns "Module already imported so cannot be rewritten"). The test modules
under ``kstate_conformance.tests`` are still rewritten.
"""

from __future__ import annotations

import pytest

#: Marks a test with the spec rule IDs it checks: ``@rules("PRIM-6", "HDR-1")``.
rules = pytest.mark.rules

__all__ = ["rules"]
