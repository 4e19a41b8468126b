"""What the model-based state machines of every store family share: calls through the implementation's adapter,
refusals matched against the model's, and the run settings derived from the loaded hypothesis profile.

A family's machine subclasses :class:`StoreMachine` (its constructor takes the implementation, the backend, a base
directory and the capabilities) and runs with :func:`run_family_machine`. Each lifecycle step of a machine is a rule of
its own, made with :func:`lifecycle_rule`, so that a shrunk failure names the step.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RULE_MARKER,
    RuleBasedStateMachine,
    precondition,
    rule,
    run_state_machine_as_test,
)

from kstate_conformance.capabilities import Capabilities, capabilities_of, lacks_reason
from kstate_conformance.models.kv import Record, Refused, headers_value, timestamped_value
from kstate_conformance.store_types import UnknownStoreTypeError

#: The rules whose steps the running machine withholds (an expected-failure entry's ``withhold:``; set by the
#: plugin around the test's call): a machine knows which steps reach each rule it can withhold.
_WITHHELD: frozenset[str] = frozenset()


@contextmanager
def withholding(rules: frozenset[str]) -> Iterator[None]:
    """Run the machines created inside with the steps reaching ``rules`` withheld."""
    global _WITHHELD
    before, _WITHHELD = _WITHHELD, rules
    try:
        yield
    finally:
        _WITHHELD = before


#: The changelog topic every machine commits offsets of.
CHANGELOG_TOPIC = "app-store-changelog"
#: Keys of up to 3 bytes from byte values at the edges of the unsigned order, and range bounds that may be null.
KEY_BYTES = (0x00, 0x01, 0x7F, 0x80, 0xFF)
KEYS = st.lists(st.sampled_from(KEY_BYTES), max_size=3).map(bytes)
MAYBE_KEY = st.none() | KEYS
#: Record timestamps: small ones, an epoch time, and any non-negative int64.
TIMESTAMPS = st.sampled_from([0, 1, 7, 1_700_000_000_000]) | st.integers(min_value=0, max_value=(1 << 63) - 1)


def layout_values(store_type: str, plain: str, timestamped: str, raw: st.SearchStrategy[bytes],
                  headers: st.SearchStrategy[Any], *, with_headers: str) -> st.SearchStrategy[bytes]:
    """Well-formed values of a key-value or window store type's layout: ``raw`` alone, with a timestamp, or with a
    timestamp and ``headers`` (TSKV-1, HV-6); :class:`UnknownStoreTypeError` for a type of none of the three."""
    if store_type == plain:
        return raw
    if store_type == timestamped:
        return st.builds(timestamped_value, raw, TIMESTAMPS)
    if store_type == with_headers:
        return st.builds(headers_value, raw, TIMESTAMPS, headers)
    raise UnknownStoreTypeError(store_type, f"the layouts of {plain}, {timestamped} and {with_headers}")


def hex_or_none(data: bytes | None) -> str | None:
    """Bytes as the JSON operations carry them: hex, or null."""
    return None if data is None else data.hex()


#: The family's model of the store.
ModelT = TypeVar("ModelT")
#: A rule's method, as the decorators of :mod:`hypothesis.stateful` take and give it.
RuleMethod = Callable[..., Any]

#: Marks a lifecycle rule with its weight (see :func:`lifecycle_rule`).
LIFECYCLE_WEIGHT = "kstate_lifecycle_weight"
#: The batch sizes a restore into a fresh store draws.
BATCH_SIZES = st.integers(min_value=1, max_value=4)


def lifecycle_rule(*conditions: Callable[[Any], bool], weight: int = 1,
                   **arguments: st.SearchStrategy[Any]) -> Callable[[RuleMethod], RuleMethod]:
    """A lifecycle step (commit, crash, restart, restore, upgrade...) as a rule of its own, so that a shrunk failure
    names it; the steps stay as rare, and as likely to each other, as when one rule drew them from a list.

    The rule takes ``arguments``. It runs only while the store is started and every ``condition`` of the machine
    holds (a withheld rule, a capability, a store type). It is ``weight`` times as likely as a step of weight 1:
    hypothesis picks among the rules uniformly, so :class:`StoreMachine` registers it ``weight`` times, each copy
    printed by the one name.

    Every lifecycle rule also draws ``pause``, how many other steps must run before the next lifecycle step may
    (:meth:`StoreMachine.pauses`): what keeps the lifecycle steps together as rare as the one rule was.
    """
    def decorate(step: RuleMethod) -> RuleMethod:
        def run(self: StoreMachine[Any], pause: int, **kwargs: Any) -> None:
            step(self, **kwargs)
            self.pause = pause + 1  # the count of this step itself (StoreMachine.check_invariants) leaves ``pause``
        run.__name__, run.__qualname__, run.__doc__ = step.__name__, step.__qualname__, step.__doc__
        setattr(run, LIFECYCLE_WEIGHT, weight)
        ruled = _rule(**arguments, pause=PAUSES)(run)
        return precondition(lambda self: self.lifecycle_due() and all(c(self) for c in conditions))(ruled)
    return decorate


#: :func:`hypothesis.stateful.rule` of strategies alone (no target), as :func:`lifecycle_rule` calls it.
_rule: Callable[..., Callable[[RuleMethod], RuleMethod]] = rule
#: The pause a lifecycle step draws, from the running machine's :meth:`StoreMachine.pauses`.
PAUSES: st.SearchStrategy[int] = st.runner().flatmap(lambda machine: machine.pauses())


class StoreMachine(RuleBasedStateMachine, Generic[ModelT]):
    """Speaks to one store of the implementation through ``implementation`` and keeps the family's ``model`` of it (set by
    the machine's initialize rule); ``handle`` names the store currently open."""

    #: What the family's lifecycle rules run: a task's commit (compare what the store logged, commit the offset
    #: reached), and the changelog rebuilt into a fresh store in batches of the given size.
    task_commit: Callable[[], None]
    restore_into_fresh_store: Callable[[int], None]
    #: The rules this family's machine can withhold the steps of, each with what it then leaves out.
    WITHHOLDABLE: ClassVar[dict[str, str]] = {}
    #: Rules whose withheld steps also leave other rules unchecked: the entry must name those too.
    WITHHELD_TOGETHER: ClassVar[dict[str, frozenset[str]]] = {}

    def __init__(self, implementation: Any, store_type: str, backend: str, base_dir: Path,
                 capabilities: Capabilities) -> None:
        super().__init__()
        self.implementation = implementation
        #: The store type the machine opens first; a key-value or session upgrade opens a newer one over it, which
        #: the model then holds.
        self.start_type = store_type
        self.backend = backend
        self.capabilities = capabilities
        self.dir = Path(tempfile.mkdtemp(dir=base_dir))
        self.model: ModelT | None = None
        self.handle: str | None = None
        self.fresh_stores = 0
        self.offset = 0
        self.can_dump = backend in capabilities.dump
        unknown = sorted(_WITHHELD - self.WITHHOLDABLE.keys())
        if unknown:
            raise AssertionError(f"{type(self).__name__} cannot withhold the steps of {', '.join(unknown)} "
                                 f"(it can: {', '.join(self.WITHHOLDABLE) or 'none'})")
        for rule_id in sorted(_WITHHELD):
            missing = sorted(self.WITHHELD_TOGETHER.get(rule_id, frozenset()) - _WITHHELD)
            if missing:
                raise AssertionError(f"withholding {rule_id} ({self.WITHHOLDABLE[rule_id]}) leaves {', '.join(missing)} "
                                     "unchecked too: the entry must withhold them as well")
        #: The rules whose steps this machine withholds (see :func:`withholding`).
        self.withheld = _WITHHELD
        #: How many other steps must run before the next lifecycle step may (see :func:`lifecycle_rule`).
        self.pause = 0

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Register each lifecycle rule of weight ``w`` under ``w`` names (hypothesis picks among rules uniformly);
        every copy runs, and is printed as, the one rule."""
        super().__init_subclass__(**kwargs)
        assert callable(getattr(RuleBasedStateMachine, "check_invariants", None)), (
            "hypothesis no longer checks invariants through check_invariants: the pauses would never end")
        for name, member in list(vars(cls).items()):
            rule_of = getattr(member, RULE_MARKER, None)
            weight = getattr(getattr(rule_of, "function", None), LIFECYCLE_WEIGHT, 1)
            for copy in range(2, weight + 1):
                setattr(cls, f"{name}_weight_{copy}", member)

    @classmethod
    @functools.cache
    def pauses(cls) -> st.SearchStrategy[int]:
        """The pauses after a lifecycle step, from 0 to twice the number ``N`` of the machine's other rules: a
        lifecycle step then comes after about ``N`` other steps, as when it was one rule among ``N + 1``.

        Drawn mirrored (the simplest choice is the longest pause): hypothesis draws its simplest choices far more
        often than the others, and a pause of 0 that often would make lifecycle steps several times as frequent as
        they were. For the same reason the first rule in hypothesis's order of rules, ``commit``, runs more often
        than the others once a pause is over."""
        rules = cls.setup_state().rules
        others = sum(1 for r in rules if getattr(r.function, LIFECYCLE_WEIGHT, None) is None)
        return st.integers(min_value=0, max_value=2 * others).map(lambda shorter: 2 * others - shorter)

    def lifecycle_due(self) -> bool:
        """Whether a lifecycle step may run now: the store started, and the last lifecycle step's pause over
        (:meth:`check_invariants` counts it down)."""
        return self.model is not None and self.pause == 0

    def check_invariants(self, settings: Any, output: Callable[[str], object], runtimes: dict[str, float]) -> None:
        """Count a step off the pause that the last lifecycle step drew: hypothesis checks the invariants after every
        step (and after the initialize rules, while the pause is still 0). Done here rather than as an invariant of its
        own, which a failing example would print after every step."""
        self.pause = max(0, self.pause - 1)
        super().check_invariants(settings, output, runtimes)

    def can_crash(self) -> bool:
        """Whether the implementation can crash a store (the crash steps' condition)."""
        return self.capabilities.crash

    def teardown(self) -> None:
        model: Any = self.model
        if self.handle is not None and model is not None and model.is_open:
            self.call("store.close", {"handle": self.handle})
        shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def store_model(self) -> ModelT:
        """The family's model of the store, once started: ``restore(records, batch_size)`` and ``take_pending()``."""
        assert self.model is not None
        return self.model

    def call(self, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = self.implementation.call(op, payload)
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

    # --- the lifecycle steps every family has ----------------------------------------------------------------

    @lifecycle_rule()
    def commit(self) -> None:
        """A task's commit (the family's :meth:`task_commit`)."""
        self.task_commit()

    @lifecycle_rule(batch_size=BATCH_SIZES)
    def restore(self, batch_size: int) -> None:
        """The whole changelog rebuilt into a fresh store in batches of ``batch_size`` (the family's
        :meth:`restore_into_fresh_store`)."""
        self.restore_into_fresh_store(batch_size)

    def close_cleanly(self) -> None:
        """A clean shutdown: the family's commit, then the store and the model closed, and the records the close
        logged compared."""
        self.task_commit()
        self.ok("store.close", {"handle": self.handle})
        model: Any = self.store_model
        model.close()
        self.check_changelog()

    def reopen_as(self, store_type: str, open_store: Callable[[str], dict[str, Any]]) -> None:
        """Open the closed store again as ``store_type`` (``open_store`` of a type sends the open) and the model with
        it: where the model refuses the type the store must refuse it too, and both open as before. An in-memory
        store then restores its whole changelog, as Kafka rebuilds one whenever it is opened again (RST-1)."""
        model: Any = self.store_model
        out = open_store(store_type)
        try:
            model.open(store_type)
        except Refused as refusal:
            assert "error" in out, f"reopening as {store_type} should be refused ({refusal}), got {out}"
            out = open_store(model.store_type)
            assert "error" not in out, f"reopening as {model.store_type} after a refused {store_type} failed: {out}"
            model.open()
        else:
            assert "error" not in out, f"reopening as {store_type} failed: {out['error']}"
        self.handle = out["handle"]
        if self.backend == "memory":
            self.restore_all(model.records_after(None))

    def commit_offset_reached(self) -> None:
        """A commit's common part: compare what the store logged, then commit the changelog offset reached in the
        store and in the model (``None``: nothing logged yet)."""
        model: Any = self.store_model
        self.check_changelog()
        offset = len(model.changelog) - 1 if model.changelog else None
        self.commit_changelog_offset(offset)
        model.commit(offset)

    def commit_changelog_offset(self, offset: int | None) -> None:
        """Commit the changelog offset reached (``None``: nothing logged yet)."""
        self.ok("store.commit", {"handle": self.handle, "changelog_offsets": [[CHANGELOG_TOPIC, 0, offset]]})

    def committed_offset(self) -> int | None:
        """The changelog offset the open store reports as committed."""
        offset: int | None = self.ok("store.committed_offset",
                                     {"handle": self.handle, "topic": CHANGELOG_TOPIC, "partition": 0})["offset"]
        return offset

    def crash_and_reopen(self, open_store: Callable[..., dict[str, Any]], detects_crash: bool,
                         may_roll_back: bool = False) -> None:
        """Kill the store and the model, compare what the store logged, and reopen it (:meth:`reopen_after_crash`);
        a crash step's, which runs only where the implementation can crash a store (:meth:`can_crash`)."""
        self.ok("store.crash", {"handle": self.handle})
        model: Any = self.store_model
        model.crash()
        self.check_changelog()
        self.reopen_after_crash(open_store, detects_crash, may_roll_back=may_roll_back)

    #: Whether the last reopen after a crash found no unclean shutdown (:meth:`reopen_after_crash`).
    crash_undetected = False

    def reopen_after_crash(self, open_store: Callable[..., dict[str, Any]], detects_crash: bool, rule_ids: str = "",
                           may_roll_back: bool = False) -> None:
        """Reopen the store after ``store.crash``: refused first where ``detects_crash`` (a RocksDB store that keeps
        offsets sees the unclean shutdown), then opened ignoring it; ``handle`` names the reopened store. With
        ``may_roll_back`` an open that is not refused is kept (``crash_undetected``): the caller checks that the store
        is back at its last open or clean close, all a crash may undetectedly leave (KV-52; KV-67 wants a refusal)."""
        self.crash_undetected = False
        if detects_crash and self.backend == "rocksdb" and self.backend in self.capabilities.offsets:
            refused = open_store()
            if may_roll_back and "error" not in refused:
                self.crash_undetected = True
                self.handle = refused["handle"]
                return
            assert "error" in refused, f"reopening after a crash must detect the unclean shutdown{rule_ids}"
        out = open_store(ignore_invalid_state=True)
        assert "error" not in out, f"reopening after a crash failed: {out['error']}"
        self.handle = out["handle"]

    @contextmanager
    def fresh_store(self, open_payload: Callable[[str], dict[str, Any]], records: list[Record],
                    batch_size: int) -> Iterator[tuple[str, str, dict[str, Any]]]:
        """Open a fresh store (``open_payload`` of its name ``fresh<n>``), restore ``records`` into it in batches,
        yield its name, its handle and the restore's answer; it is closed afterwards (RST-1)."""
        self.fresh_stores += 1
        name = f"fresh{self.fresh_stores}"
        handle: str = self.ok("store.open", open_payload(name))["handle"]
        try:
            out = self.ok("store.restore", {"handle": handle, "records": [r.to_json() for r in records],
                                            "batch_size": batch_size})
            assert out["restored"] == len(records)
            yield name, handle, out
        finally:
            self.ok("store.close", {"handle": handle})

    def restore_all(self, records: list[Record], batch_size: int = 3) -> None:
        """Restore ``records`` into the open store and the model (RST-1)."""
        if not records:
            return
        out = self.on_store("store.restore", records=[r.to_json() for r in records], batch_size=batch_size)
        assert "error" not in out, f"restore refused: {out['error']}"
        assert out["restored"] == len(records)
        model: Any = self.store_model  # every family's model restores; not every one keeps pending records
        model.restore(records, batch_size)

    def check_changelog(self) -> None:
        """The records the store sent since the last look are the ones the model predicts."""
        out = self.on_store("store.changelog")
        assert "error" not in out
        actual = [Record.from_json(r) for r in out["records"]]
        model: Any = self.store_model
        expected = model.take_pending()
        assert actual == expected, f"changelog records differ:\n store: {actual}\n model: {expected}"


def run_family_machine(implementation: Any, family: str, operation: str | None, store_type: str, backend: str,
                       machine: Callable[[Capabilities], RuleBasedStateMachine], steps: int = 30) -> None:
    """Run ``machine(capabilities)`` when the implementation offers ``operation`` and a ``store_type`` store on
    ``backend``; skip the test otherwise."""
    if not implementation.supports("store.capabilities") or (operation is not None and not implementation.supports(operation)):
        pytest.skip(f"the implementation offers no {family} store operations")
    caps = capabilities_of(implementation)
    lacked = caps.lacks(store_type, backend)
    if lacked is not None:
        pytest.skip(lacks_reason("the implementation", lacked))
    run_machine(lambda: machine(caps), steps)


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
