"""Mutants for the paired run against Kafka (``kstate conformance --impl mutant:NAME --model kafka-jvm:4.4.0``):
each changes one answer of the reference so that it disagrees with Kafka. They are not in the catalogue that
``kstate mutants`` runs (that analysis runs without a JVM); ``tests/test_paired_mutants.py`` shows the paired
machines catch every one, where a model is given.

Each family's mutants module registers its own with :func:`paired_mutant`; :data:`PAIRED_MUTANTS` holds every
family's, their modules imported on first use, so that this module names no family.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from kstate.ops import JsonDict, call
from kstate_conformance.adapter import Handler
from kstate_conformance.mutants import Mutant, import_family_modules

_REGISTERED: dict[str, Mutant] = {}


def changed_answer(op: str, change: Callable[[JsonDict, JsonDict], JsonDict]) -> Handler:
    """``op`` as the reference answers it, then ``change(input, answer)`` unless it refused."""

    def handler(payload: JsonDict) -> JsonDict:
        out = call(op, payload)
        return out if "error" in out else change(payload, out)

    return handler


def paired_mutant(name: str, description: str, family: str, rules: tuple[str, ...],
                  overrides: dict[str, Handler]) -> None:
    """Register the paired mutant ``name`` of ``family``, breaking ``rules`` with ``overrides``."""
    if name in _REGISTERED:
        raise ValueError(f"paired mutant {name!r} registered twice")
    _REGISTERED[name] = Mutant(name, description, family, overrides, rules)


class _EveryFamilysPairedMutants(Mapping[str, Mutant]):
    """The paired mutants every family's mutants module registers, those modules imported on first use."""

    def _mutants(self) -> dict[str, Mutant]:
        import_family_modules()
        return _REGISTERED

    def __getitem__(self, name: str) -> Mutant:
        return self._mutants()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(dict(sorted(self._mutants().items())))

    def __len__(self) -> int:
        return len(self._mutants())


PAIRED_MUTANTS: Mapping[str, Mutant] = _EveryFamilysPairedMutants()
