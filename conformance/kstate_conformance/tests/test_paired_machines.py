"""The implementation under test against a model implementation, step by step (``kstate conformance --model
kafka-jvm:4.4.0``): hypothesis draws sequences of store operations, each goes to both, and every answer, every
refusal, every changelog record and, after each close, every row of every column family on disk must agree
(:mod:`kstate_conformance.paired`, the machinery in :mod:`kstate_conformance.paired_stores`). Without ``--model``
these tests do not apply. Known differences of Kafka are excluded by rule (``paired.EXCLUSIONS``).

One test a family, made from its paired machine's registration in its model module (``paired_stores.PairedFamily``:
the test's name, its stores, its rules, its docstring), so that this module names no family. Their ``rules`` marks
are set here, not written out in the source: the reports read them from the cases (``plugin.item_rules``); the
static readers of ``@rules`` (traceability, rule_places) do not see them, and need not: every rule they cite is cited
by another test too, at every place.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kstate_conformance import rules
from kstate_conformance.paired import require_model, run_paired
from kstate_conformance.paired_stores import PairedFamily, paired_families


def _run(pair: Any, implementation: Any, model: Any, store_type: str, backend: str, base: Path) -> None:
    """Skip unless both sides offer the family's operations and the store; then run the paired machine."""
    require_model(implementation, model, pair.family_ops, store_type, backend)
    run_paired(lambda: pair(implementation, model, base, store_type, backend))


def _agrees_with_the_model(paired: PairedFamily) -> Callable[..., None]:
    """The family's test: its machine on each of its stores, a parameter each of store type and backend that has
    more than one value (a test id as the family's own test had)."""
    parameters = {"store_type": paired.store_types, "backend": paired.backends}
    varying = [name for name, values in parameters.items() if len(values) > 1]

    def test(implementation: Any, model_impl: Any, tmp_path_factory: pytest.TempPathFactory, **drawn: str) -> None:
        chosen = {name: drawn.get(name, values[0]) for name, values in parameters.items()}
        _run(paired.machine, implementation, model_impl, chosen["store_type"], chosen["backend"],
             tmp_path_factory.mktemp(f"paired-{paired.family}"))

    # pytest reads the fixtures and parameters a test takes from its signature.
    test.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD)
         for name in ("implementation", "model_impl", *varying, "tmp_path_factory")])
    test.__name__ = test.__qualname__ = paired.test_name
    test.__doc__ = paired.doc
    for name in varying:  # store type innermost: ids read [store_type-backend]
        test = pytest.mark.parametrize(name, parameters[name])(test)
    marked: Callable[..., None] = rules(*paired.rules)(test)
    return marked


for _paired in paired_families():
    globals()[_paired.test_name] = _agrees_with_the_model(_paired)
