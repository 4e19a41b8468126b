"""Mutants for the paired run against Kafka (``kstate conformance --impl mutant:NAME --model kafka-jvm:4.4.0``):
each changes one answer of the reference so that it disagrees with Kafka. They are not in the catalogue that
``kstate mutants`` runs (that analysis runs without a JVM); ``tests/test_paired_mutants.py`` shows the paired
machines catch every one, where a model is given.
"""

from __future__ import annotations

from collections.abc import Callable

from kstate.ops import JsonDict, call
from kstate_conformance.adapter import Handler
from kstate_conformance.mutants import Mutant

PAIRED_MUTANTS: dict[str, Mutant] = {}


def _changed(op: str, change: Callable[[JsonDict, JsonDict], JsonDict]) -> Handler:
    """``op`` as the reference answers it, then ``change(input, answer)`` unless it refused."""

    def handler(payload: JsonDict) -> JsonDict:
        out = call(op, payload)
        return out if "error" in out else change(payload, out)

    return handler


def _register(name: str, description: str, rules: tuple[str, ...], overrides: dict[str, Handler],
              family: str = "kv") -> None:
    PAIRED_MUTANTS[name] = Mutant(name, description, family, overrides, rules)


_register("paired-range-drops-upper-bound", "range answers the entries below 'to', leaving out the key equal to it",
          ("KV-9",), {"store.range": _changed("store.range", lambda p, out: {
              "entries": [e for e in out["entries"] if p.get("to") is None or e[0] != p["to"]]})})
_register("paired-memory-count-one-more", "approximate_num_entries of a non-empty store answers one more",
          ("KV-15",), {"store.approximate_num_entries": _changed("store.approximate_num_entries", lambda _p, out: {
              "count": out["count"] + 1 if out["count"] else 0})})
_register("paired-changelog-drops-headers", "the changelog records of a header-aware store lose their headers",
          ("CL-8",), {"store.changelog": _changed("store.changelog", lambda _p, out: {
              **out, "records": [{**r, "headers": []} for r in out["records"]]})})
_register("paired-put-if-absent-answers-null", "put_if_absent answers no previous value even when the key is present",
          ("KV-6",), {"store.put_if_absent": _changed("store.put_if_absent", lambda _p, _out: {"previous": None})})
_register("paired-window-backward-all-forward", "a window store's backward all() answers the forward order",
          ("WS-12",), {"window_store.all": _changed("window_store.all", lambda p, out: (
              out if not p.get("backward") else {**out, "entries": out["entries"][::-1]}))}, family="window")
_register("paired-session-backward-fetch-forward", "a session store's backwardFetch answers the forward order",
          ("SS-6", "SS-7"), {"session_store.fetch": _changed("session_store.fetch", lambda p, out: (
              out if not p.get("backward") else {**out, "entries": out["entries"][::-1]}))}, family="session")
_register("paired-versioned-put-answers-latest", "a versioned put answers validTo -1 (the latest) even when out of order",
          ("VS-7",), {"versioned_store.put": _changed("versioned_store.put", lambda _p, out: {
              **out, "valid_to": -1 if out["valid_to"] != -(1 << 63) else out["valid_to"]})}, family="versioned")
