"""What a store must answer to an operation in each life state, as the suite's models and tests read it (KV-12,
KV-52, RST-8, VS-37, SS-37, CACHE-9).

The models compute expectations without the reference's code (tests/test_conformance_imports.py), so this is
the suite's own statement of the life table, written as data with the rule beside each row;
tests/unit/test_store_life.py checks, cell by cell, that it is the reference's table
(``kstate.stores.life.TABLE``), so the two cannot drift apart. States and operation classes are named as there.
The models ask it through :func:`require`; tests/test_store_rules_every_family.py asks :func:`must_refuse` which
operations of a closed store the spec lets answer.
"""

from __future__ import annotations

from dataclasses import dataclass

STATES = ("open", "restoring", "closed", "crashed")
OPERATIONS = ("read", "write", "restore", "commit", "offsets", "downgrade", "close", "crash", "describe")

#: The error a refusal raises: Kafka's ``InvalidStateStoreException``.
REFUSAL_ERROR = "InvalidStateStoreError"


@dataclass(frozen=True)
class LifeAnswer:
    """Allowed or refused, citing ``rule``; ``noop`` an allowed call that changes nothing; ``may_answer`` a
    refusal the spec lets a store replace by a no-op answer (the reference refuses)."""

    allowed: bool
    rule: str
    noop: bool = False
    may_answer: bool = False


_ALLOWED = LifeAnswer(True, "KV-12")
_AGAIN = LifeAnswer(True, "KV-12", noop=True)
_REFUSED = LifeAnswer(False, "KV-12")

#: KV-12: "Any operation on a closed RocksDB store throws ``InvalidStateStoreException`` ("Store X is currently
#: closed") [...] ``committedOffset`` and restore are refused too [...] ``flush`` and ``commit`` MAY answer as
#: no-ops [...] Closing twice is a no-op." VS-37: "After ``close`` (or a crash) every read and write raises".
_CLOSED_ROW = {
    "read": _REFUSED, "write": _REFUSED, "restore": _REFUSED, "offsets": _REFUSED, "downgrade": _REFUSED,
    "commit": LifeAnswer(False, "KV-12", may_answer=True),
    "close": _AGAIN, "crash": _AGAIN, "describe": _ALLOWED,
}

#: life state x operation class -> the answer a store must give.
LIFE_TABLE: dict[tuple[str, str], LifeAnswer] = {
    # Open: every operation is answered (KV-12 refuses only a closed store).
    **{("open", op): _ALLOWED for op in OPERATIONS},
    # RST-8: a store being restored is open; restore mode changes how commits reach disk, not what it accepts.
    **{("restoring", op): LifeAnswer(True, "RST-8") for op in OPERATIONS},
    **{("closed", op): answer for op, answer in _CLOSED_ROW.items()},
    # KV-52: a crashed store is released as a killed process leaves it, and refuses what a closed one refuses.
    **{("crashed", op): LifeAnswer(False, "KV-52", may_answer=answer.may_answer) if not answer.allowed else answer
       for op, answer in _CLOSED_ROW.items()},
}


def after_crash(backend: str) -> str:
    """The state a crash leaves a store of ``backend`` in: crashed on RocksDB, closed in memory, where the crash is
    the close (KV-52, KV-43)."""
    return "crashed" if backend == "rocksdb" else "closed"


def require(state: str, op: str, refused: type[Exception]) -> None:
    """Raise ``refused`` (the model's own refusal class) if the life table refuses ``op`` in ``state``."""
    cell = LIFE_TABLE[state, op]
    if not cell.allowed:
        raise refused(f"store {state}: {op} refused with {REFUSAL_ERROR} ({cell.rule})")


def must_refuse(state: str, op: str) -> bool:
    """Whether every store must refuse ``op`` in ``state``: refused, and the spec lets no no-op answer stand."""
    cell = LIFE_TABLE[state, op]
    return not cell.allowed and not cell.may_answer
