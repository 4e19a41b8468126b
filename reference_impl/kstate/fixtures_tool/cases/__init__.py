"""Reference fixture cases, one module per family; each that writes a file of its own exposes ``cases() -> list[CaseSpec]``.

A file over every family (changelog, layout) takes each family's part from the family's module, found by the
family's name (``cases.<family>``): :func:`family_cases`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

from kstate.codecs.store_types import Family, UnknownFamilyError

if TYPE_CHECKING:
    from kstate.fixtures_tool import CaseSpec


def family_module(family: Family, needed_for: str) -> ModuleType:
    """The cases module of ``family`` (``cases.<family value>``); :class:`UnknownFamilyError` where it has none."""
    name = f"{__name__}.{family.value}"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        raise UnknownFamilyError(family, needed_for) from exc


def family_cases(part: str) -> list[CaseSpec]:
    """Every family's cases of ``part`` (the function of that name in its cases module), the families in the
    table's order; a family whose module lacks it is refused (:class:`UnknownFamilyError`), never skipped."""
    out: list[CaseSpec] = []
    for family in Family:
        builder: Callable[[], list[CaseSpec]] | None = getattr(family_module(family, part), part, None)
        if builder is None:
            raise UnknownFamilyError(family, part)
        out += builder()
    return out
