"""What a store must answer to an operation in each life state, as the suite's models read it (KV-12, KV-52,
RST-8, VS-37, SS-37, CACHE-9).

The models compute expectations without the reference's code (tests/test_conformance_imports.py), so this is
the suite's own statement of the life table; tests/unit/test_store_life.py checks, cell by cell, that it is the
reference's table (``kstate.stores.life.TABLE``), so the two cannot drift apart. States and operation classes
are named as there.

KV-12: "Any operation on a closed RocksDB store throws ``InvalidStateStoreException`` ("Store X is currently
closed") [...] Closing twice is a no-op."
"""

from __future__ import annotations

from dataclasses import dataclass

STATES = ("open", "restoring", "closed", "crashed")
OPERATIONS = ("read", "write", "restore", "commit", "offsets", "downgrade", "close", "crash", "describe")

#: The error a refusal raises: Kafka's ``InvalidStateStoreException``.
REFUSAL_ERROR = "InvalidStateStoreError"


@dataclass(frozen=True)
class LifeAnswer:
    allowed: bool
    rule: str
    noop: bool = False


def _cell(state: str, op: str) -> LifeAnswer:
    if state == "open":
        return LifeAnswer(True, "KV-12")
    if state == "restoring":
        return LifeAnswer(True, "RST-8")
    if op in ("close", "crash"):
        return LifeAnswer(True, "KV-12", noop=True)
    if op == "describe":
        return LifeAnswer(True, "KV-12")
    return LifeAnswer(False, "KV-52" if state == "crashed" else "KV-12")


#: life state x operation class -> the answer a store must give.
LIFE_TABLE: dict[tuple[str, str], LifeAnswer] = {(s, op): _cell(s, op) for s in STATES for op in OPERATIONS}


def require(state: str, op: str, refused: type[Exception]) -> None:
    """Raise ``refused`` (the model's own refusal class) if the life table refuses ``op`` in ``state``."""
    cell = LIFE_TABLE[state, op]
    if not cell.allowed:
        raise refused(f"store {state}: {op} refused with {REFUSAL_ERROR} ({cell.rule})")
