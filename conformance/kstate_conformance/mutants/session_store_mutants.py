"""Mutants of the session stores (spec/session-store.md): each a bug a port of Kafka's session stores could
plausibly have. Bugs of a read's filter or order replace that ``session_store.*`` operation with the reference's
answer mishandled the way the port would; bugs of what a store keeps or logs act at the store level.
"""

from __future__ import annotations

from typing import Any

from kstate.ops import JsonDict, call
from kstate_conformance.adapter import Handler
from kstate_conformance.mutants import mutant

FAMILY = "session_store"
SESSION_TYPES = ("session", "session_with_headers")
_READS = ("session_store.find_sessions", "session_store.fetch")


def _entries_of(op: str, payload: JsonDict, keep: Any) -> JsonDict:
    out = call(op, payload)
    if "error" not in out:
        out["entries"] = [e for e in out["entries"] if keep(payload, e)]
    return out


@mutant("session-overlap-strict", "findSessions with strict inequalities: end > earliestSessionEndTime and "
        "start < latestSessionStartTime (sessions touching a bound are missed)", FAMILY, rules=("SS-4",))
def _overlap_strict() -> dict[str, Handler]:
    def strict(payload: JsonDict, entry: list[Any]) -> bool:
        _, start, end, _ = entry
        return bool(end > payload["earliest_end"] and start < payload["latest_start"])

    return {"session_store.find_sessions": lambda payload: _entries_of("session_store.find_sessions", payload, strict)}


@mutant("session-find-ordered-by-start", "findSessions and fetch order the sessions by start time (then key) "
        "instead of Kafka's end-time order", FAMILY, rules=("SS-5",))
def _ordered_by_start() -> dict[str, Handler]:
    def by_start(op: str) -> Handler:
        def handler(payload: JsonDict) -> JsonDict:
            out = call(op, payload)
            if "error" not in out:
                out["entries"] = sorted(out["entries"], key=lambda e: (e[1], bytes.fromhex(e[0]), e[2]),
                                        reverse=bool(payload.get("backward")))
            return out

        return handler

    return {op: by_start(op) for op in _READS}


@mutant("session-backward-forward-order", "the backward variants answer the forward order", FAMILY, rules=("SS-5",))
def _backward_forward() -> dict[str, Handler]:
    def forward(op: str) -> Handler:
        return lambda payload: call(op, {**payload, "backward": False})

    return {op: forward(op) for op in _READS}


@mutant("session-expiry-off-by-one", "a session ending exactly at observed stream time - retention is still live "
        "(< where Kafka has <=): the store keeps one millisecond more than its retention", FAMILY,
        rules=("SS-10", "SS-12"))
def _expiry_off_by_one() -> dict[str, Handler]:
    def open_store(payload: JsonDict) -> JsonDict:
        options = payload.get("options")
        if payload.get("store_type") in SESSION_TYPES and isinstance(options, dict) \
                and isinstance(options.get("retention_ms"), int):
            payload = {**payload, "options": {**options, "retention_ms": options["retention_ms"] + 1}}
        return call("store.open", payload)

    return {"store.open": open_store}


@mutant("session-remove-writes-empty", "remove writes an empty aggregate (and logs it) instead of deleting the "
        "session with a tombstone", FAMILY, rules=("SS-8", "SS-13"))
def _remove_writes_empty() -> dict[str, Handler]:
    def remove(payload: JsonDict) -> JsonDict:
        return call("session_store.put", {**payload, "value": ""})

    return {"session_store.remove": remove}
