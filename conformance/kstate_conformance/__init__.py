"""kstate_conformance: the Kafka Streams state-store conformance suite.

Implementations plug in through :mod:`kstate_conformance.adapter`; tests speak only the neutral
operation vocabulary (spec/ops.md), never the reference implementation's internals.
"""

from __future__ import annotations

import pytest

#: Marks a test with the spec rule IDs it checks: ``@rules("PRIM-6", "HDR-1")``.
rules = pytest.mark.rules

__all__ = ["rules"]
