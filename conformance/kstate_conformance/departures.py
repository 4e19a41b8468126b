"""Allowed departures from Kafka (OPS-4): an implementation refuses, with a typed error, input that Kafka accepts
leniently and that a rule lets it refuse ("MAY refuse ... instead", e.g. HV-5).

Such a case is neither passed nor failed: the test raises :func:`depart`, a pytest skip whose reason starts with
:data:`DEPARTS_PREFIX` and names the rules that allow the refusal; the report gives those rules the verdict
``departs from Kafka``, listed, failing neither the run nor any rule (issue 31).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from typing import NoReturn

import pytest

#: How a departing test's skip reason starts; the rules follow in brackets.
DEPARTS_PREFIX = "departs from Kafka"
_DEPARTURE = re.compile(r"^(?:Skipped: )?departs from Kafka \[([A-Z0-9, -]*)\]")
#: A rule that allows an implementation to refuse what Kafka accepts says so in these words.
_MAY_REFUSE = re.compile(r"\bMAY refuse\b")


@cache
def _refusal_allowed_by() -> frozenset[str]:
    from kstate_conformance.spec_rules import load_rules

    return frozenset(rule.id for rule in load_rules().values() if _MAY_REFUSE.search(rule.text))


def allowing_rules(rules: Iterable[str]) -> list[str]:
    """The rules among ``rules`` whose text lets an implementation refuse Kafka's lenient input (OPS-4), else all
    of ``rules`` (a lenient case is an allowed departure by OPS-4 itself)."""
    listed = list(rules)
    return [r for r in listed if r in _refusal_allowed_by()] or listed


def depart(rules: Iterable[str], why: str) -> NoReturn:
    """End the running test as an allowed departure from Kafka, attributed to the rules allowing it."""
    pytest.skip(f"{DEPARTS_PREFIX} [{', '.join(allowing_rules(rules))}]: {why}")


def departure_rules(detail: str) -> list[str] | None:
    """The rules a departing test's skip reason names; None if the skip is no departure."""
    match = _DEPARTURE.match(detail.strip())
    if match is None:
        return None
    return [r.strip() for r in match.group(1).split(",") if r.strip()]
