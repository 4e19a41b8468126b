"""What the suite's model-based state machines share: calling the implementation beside a model, and running a
machine under the loaded hypothesis profile.

A machine mixes in :class:`ModelledCalls` and sets ``codec`` and ``handle``; :func:`run_machine` runs it with half
the profile's examples, each up to ``steps`` steps, without shrinking unless ``KSTATE_SHRINK=1`` (shrinking
re-runs RocksDB stores hundreds of times).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from kstate_conformance.models.kv import Refused


class ModelledCalls:
    """Operations on the implementation under test, each compared with what the model answers or refuses."""

    codec: Any
    handle: str | None

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


def run_machine(factory: Callable[[], RuleBasedStateMachine], steps: int = 30) -> None:
    """Run the machine ``factory`` builds: half the profile's examples (at least 4), up to ``steps`` steps each."""
    profile = settings()  # the loaded profile's values
    examples = max(4, profile.max_examples // 2)
    phases = [p for p in profile.phases if p is not Phase.shrink or os.environ.get("KSTATE_SHRINK") == "1"]
    run_state_machine_as_test(  # type: ignore[no-untyped-call,unused-ignore]
        factory,
        settings=settings(
            max_examples=examples,
            stateful_step_count=steps,
            phases=phases,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
        ),
    )
