"""The state machines' lifecycle steps (state_machines.lifecycle_rule): each is a rule of its own, weighted as the
lists the one lifecycle rule drew from were, and a shrunk failure names the step."""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from kstate_conformance.adapter import ImplementationAdapter, JsonDict, ReferenceAdapter
from kstate_conformance.capabilities import capabilities_of
from kstate_conformance.state_machines import LIFECYCLE_WEIGHT, StoreMachine
from kstate_conformance.tests import test_kv_state_machine as kv_machine
from kstate_conformance.tests import test_session_state_machine as session_machine
from kstate_conformance.tests import test_versioned_state_machine as versioned_machine
from kstate_conformance.tests import test_window_state_machine as window_machine

#: The lists the one lifecycle rule of each machine drew its step from, before each step was a rule.
OLD_LISTS = {
    kv_machine.KeyValueStoreMachine: ("flush", "commit", "restart", "upgrade", "upgrade", "crash", "crash", "restore"),
    window_machine.WindowStoreMachine: ("flush", "commit", "restart", "restart", "crash", "crash", "restore"),
    session_machine.SessionStoreMachine: ("commit", "restart", "upgrade", "crash", "crash", "restore"),
    versioned_machine.VersionedStoreMachine: ("commit", "restart", "restart", "crash", "crash", "restore"),
}


@pytest.mark.parametrize("machine", list(OLD_LISTS), ids=lambda m: m.__name__)
def test_each_lifecycle_step_is_a_rule_as_likely_as_in_the_old_list(machine: type[StoreMachine[Any]]) -> None:
    rules = machine.setup_state().rules
    steps = collections.Counter(r.function.__name__ for r in rules if hasattr(r.function, LIFECYCLE_WEIGHT))
    assert steps == collections.Counter(OLD_LISTS[machine])
    assert not any(r.function.__name__ == "lifecycle" for r in rules)


class _FreshRestoreCountsOneTooFew(ImplementationAdapter):
    """The reference, except that a restore into a fresh store (the restore step's) answers one record fewer than it
    restored."""

    name = "fresh-restore-counts-one-too-few"

    def __init__(self) -> None:
        self.inner = ReferenceAdapter()
        self.fresh: set[str] = set()

    def supports(self, op: str) -> bool:
        return self.inner.supports(op)

    def call(self, op: str, payload: JsonDict) -> Any:
        out = self.inner.call(op, payload)
        if op == "store.open" and str(payload.get("name", "")).startswith("fresh") and "handle" in out:
            self.fresh.add(out["handle"])
        if op == "store.restore" and payload.get("handle") in self.fresh and out.get("restored"):
            return {**out, "restored": out["restored"] - 1}
        return out


def test_a_shrunk_failure_names_the_lifecycle_step(tmp_path: Path) -> None:
    implementation = _FreshRestoreCountsOneTooFew()
    caps = capabilities_of(implementation)
    with pytest.raises(AssertionError) as failure:
        run_state_machine_as_test(  # type: ignore[no-untyped-call,unused-ignore]
            lambda: kv_machine.KeyValueStoreMachine(implementation, "kv", "memory", tmp_path, caps),  # type: ignore[arg-type,unused-ignore]
            settings=settings(max_examples=200, stateful_step_count=30, deadline=None, database=None,
                              derandomize=True, phases=[Phase.explicit, Phase.generate, Phase.shrink],
                              suppress_health_check=list(HealthCheck)))
    steps = "\n".join(getattr(failure.value, "__notes__", []))
    assert "state.restore(batch_size=" in steps, steps
    assert "state.lifecycle(" not in steps
