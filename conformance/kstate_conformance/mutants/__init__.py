"""Deliberately broken implementations: the suite proves its worth by failing every one.

A mutant is the reference adapter with a few operations replaced by a realistic bug. Family modules
register theirs with :func:`mutant`; ``kstate conformance --impl mutant:NAME`` runs the suite on one.
"""

from __future__ import annotations

import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from kstate import ops
from kstate.ops import JsonDict, call
from kstate_conformance.adapter import Handler, ImplementationAdapter, OverrideAdapter, ReferenceAdapter


def _family_modules() -> list[str]:
    """Every ``*_mutants`` module of this package, by name: a family's mutants module registers itself by being here,
    with no list to extend."""
    return [f"{__name__}.{info.name}" for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name)
            if info.name.endswith("_mutants")]


def import_family_modules() -> None:
    """Import every ``*_mutants`` module, so that each registers its mutants: the catalogue's (:func:`mutant`) and the
    paired ones, which need a model and are not in it (``paired_mutants.paired_mutant``)."""
    ops.import_family_modules(_family_modules())


@dataclass(frozen=True)
class Mutant:
    name: str
    description: str
    family: str
    overrides: dict[str, Handler]
    # The spec rules this mutant breaks (and nothing else): the evidence that a citation of them is checked.
    rules: tuple[str, ...] = ()

    def adapter(self) -> ImplementationAdapter:
        return OverrideAdapter(f"mutant:{self.name}", ReferenceAdapter(), self.overrides)


MUTANTS: dict[str, Mutant] = {}
Change = TypeVar("Change")


def altered(op: str, alter: Callable[[JsonDict, JsonDict], JsonDict]) -> dict[str, Handler]:
    """``{op: handler}`` for a mutant that breaks an answer rather than its computation: the handler answers what
    the reference answers to ``op``, passed through ``alter(payload, answer)``."""
    def handler(payload: JsonDict) -> JsonDict:
        return alter(payload, call(op, payload))

    return {op: handler}


def alters(op: str) -> Callable[[Callable[[JsonDict, JsonDict], JsonDict]], Callable[[], dict[str, Handler]]]:
    """Under ``@mutant``: the decorated ``alter(payload, answer)`` is the mutant's one broken piece, the overrides
    are :func:`altered` of ``op`` with it, so a mutant that bends one answer is that function alone."""
    return lambda alter: lambda: altered(op, alter)


def replaces(op: str) -> Callable[[Handler], Callable[[], dict[str, Handler]]]:
    """Under ``@mutant``: the decorated handler answers ``op`` in the reference's stead, the mutant's only
    override."""
    return lambda handler: lambda: {op: handler}


def mutant(
    name: str, description: str, family: str, rules: tuple[str, ...] | list[str] = (),
) -> Callable[[Callable[[], dict[str, Handler]]], Callable[[], dict[str, Handler]]]:
    """Register a mutant breaking ``rules``; the decorated function returns ``{operation: broken handler}``."""

    def register(build: Callable[[], dict[str, Handler]]) -> Callable[[], dict[str, Handler]]:
        if name in MUTANTS:
            raise ValueError(f"mutant {name!r} registered twice")
        MUTANTS[name] = Mutant(name, description, family, build(), tuple(rules))
        return build

    return register


def registering(
    family: str, build: Callable[[Any], dict[str, Handler]],
) -> Callable[..., Callable[[Change], Change]]:
    """A decorator ``(name, description, rules)`` registering the mutant ``name`` of ``family`` whose overrides are
    ``build`` of the decorated class or function: for the many mutants that are one broken piece (a store mixin, a
    change-logging layer, a payload rewrite) and a fixed place it goes."""

    def decorator(name: str, description: str, rules: tuple[str, ...]) -> Callable[[Change], Change]:
        def register(change: Change) -> Change:
            mutant(name, description, family, rules=rules)(lambda: build(change))
            return change

        return register

    return decorator


def all_mutants() -> dict[str, Mutant]:
    import_family_modules()
    return dict(sorted(MUTANTS.items()))


def get_mutant(name: str) -> Mutant:
    mutants = all_mutants()
    if name not in mutants:
        raise LookupError(f"no mutant named {name!r} (`kstate mutants --list` lists the {len(mutants)} mutants)")
    return mutants[name]


def mutant_listing(mutants: dict[str, Mutant] | None = None) -> str:
    """Every mutant grouped by family, each with the rules it breaks and its description (`kstate mutants --list`)."""
    mutants = all_mutants() if mutants is None else mutants
    by_family: dict[str, list[Mutant]] = {}
    for item in mutants.values():
        by_family.setdefault(item.family, []).append(item)
    lines: list[str] = []
    for family in sorted(by_family):
        members = sorted(by_family[family], key=lambda m: m.name)
        lines.append(f"{family} ({len(members)} mutant{'s' if len(members) != 1 else ''})")
        for item in members:
            rules = ", ".join(item.rules) if item.rules else "no rule named"
            lines.append(f"  {item.name}  [{rules}]")
            lines.append(f"      {item.description}")
        lines.append("")
    lines.append(f"{len(mutants)} mutants in {len(by_family)} families; run one with `kstate mutants NAME`.")
    return "\n".join(lines)
