"""Mutants for testing the mutation analysis itself, imported by its worker with ``--mutant-module``.

``noop-survivor`` changes nothing, so it survives and must have run every selected test. With
``KSTATE_TEST_BREAK_REFERENCE=1`` the reference's zig-zag varint writer is broken for the whole worker, so that a
test killing ``unsigned-varints`` fails on the unmutated reference as well and the control must disown the kill.
"""

from __future__ import annotations

import os

from kstate_conformance.adapter import Handler
from kstate_conformance.mutants import MUTANTS, mutant

if "noop-survivor" not in MUTANTS:

    @mutant("noop-survivor", "changes nothing: the analysis must report it alive after every test", "primitives")
    def _noop() -> dict[str, Handler]:
        return {}


if os.environ.get("KSTATE_TEST_BREAK_REFERENCE") == "1":
    from kstate.codecs import primitives

    primitives.write_varint = lambda value: b"\x00"
