"""What the model-based state machines of every store family share: calls through the implementation's codec,
refusals matched against the model's, and the run settings derived from the loaded hypothesis profile.

A family's machine subclasses :class:`StoreMachine` (``self.codec`` and ``self.handle`` set by its
constructor) and runs with :func:`run_machine`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from kstate_conformance.models.kv import Record, Refused


class StoreMachine(RuleBasedStateMachine):
    """Speaks to one store of the implementation through ``codec``; ``handle`` names the store currently open."""

    codec: Any
    handle: str | None

    @property
    def store_model(self) -> Any:
        """The family's model of the store: ``restore(records, batch_size)`` and ``take_pending()``."""
        raise NotImplementedError

    def call(self, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = self.codec.call(op, payload)
        return out

    def ok(self, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        out = self.call(op, payload)
        assert "error" not in out, f"{op} {payload} was refused: {out['error']}"
        return out

    def on_store(self, op: str, **payload: Any) -> dict[str, Any]:
        return self.call(op, {"handle": self.handle, **payload})

    def expect(self, op: str, payload: dict[str, Any], model_call: Callable[[], Any]) -> Any:
        """Run ``op`` and the model; both refuse, or neither does and ``(answer, model's answer)`` is returned."""
        try:
            expected = model_call()
        except Refused as refusal:
            out = self.on_store(op, **payload)
            assert "error" in out, f"{op} {payload}: the model refuses ({refusal}) but the store answered {out}"
            return None
        out = self.on_store(op, **payload)
        assert "error" not in out, f"{op} {payload}: refused ({out['error']}), the model answers {expected!r}"
        return out, expected

    def restore_all(self, records: list[Record], batch_size: int = 3) -> None:
        """Restore ``records`` into the open store and the model (RST-1)."""
        if not records:
            return
        out = self.on_store("store.restore", records=[r.to_json() for r in records], batch_size=batch_size)
        assert "error" not in out, f"restore refused: {out['error']}"
        assert out["restored"] == len(records)
        self.store_model.restore(records, batch_size)

    def check_changelog(self) -> None:
        """The records the store sent since the last look are the ones the model predicts."""
        out = self.on_store("store.changelog")
        assert "error" not in out
        actual = [Record.from_json(r) for r in out["records"]]
        expected = self.store_model.take_pending()
        assert actual == expected, f"changelog records differ:\n store: {actual}\n model: {expected}"


def run_machine(factory: Callable[[], RuleBasedStateMachine], steps: int = 30) -> None:
    """Run a machine with half the profile's examples, each of up to ``steps`` steps. Shrinking re-runs RocksDB stores
    hundreds of times (minutes): it is off unless KSTATE_SHRINK=1 asks for a minimal failing run."""
    profile = settings()  # the loaded profile's values
    phases = [p for p in profile.phases if p is not Phase.shrink or os.environ.get("KSTATE_SHRINK") == "1"]
    run_state_machine_as_test(  # type: ignore[no-untyped-call,unused-ignore]
        factory,  # type: ignore[arg-type,unused-ignore]  # newer hypothesis types it as a machine class
        settings=settings(
            max_examples=max(4, profile.max_examples // 2),
            stateful_step_count=steps,
            phases=phases,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
        ),
    )
