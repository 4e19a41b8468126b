"""What an implementation offers, as its ``store.capabilities`` answers it (OPS-1): parsed once into one type.

The suite reads capabilities only through :class:`Capabilities`, never by string key: a field it does not know
is kept in :attr:`Capabilities.answer` for the report and ignored, a field that is absent is not offered, and a
field of the wrong JSON type is an :class:`ImplementationError` naming it (the implementation's answer is wrong,
which no test of a store can judge).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kstate.errors import KStateError
from kstate_conformance import store_types

BACKENDS = ("rocksdb", "memory")


@dataclass(frozen=True)
class OptionalFeature:
    """A feature Kafka 4.4 lacks, which a store that swaps places with Kafka's may lack too (OPS-1)."""

    #: The operations only a store with the feature answers.
    operations: frozenset[str]
    #: The rules that describe the feature: a golden case that checks these alone needs it.
    rules: frozenset[str]
    #: The inputs of operations every store has that only a store with the feature can be given, as
    #: ``(operation, field path, smallest value without the feature)``: a smaller integer needs the feature.
    inputs: tuple[tuple[str, tuple[str, ...], int], ...] = ()


#: Each optional feature by its ``store.capabilities`` flag. A case that needs one the implementation does not
#: declare is ``absent`` (report.ABSENT), as a case on a store type it lacks is (docs/verdicts.md).
OPTIONAL_FEATURES: Mapping[str, OptionalFeature] = {
    # HV-10: reads of the value or timestamp that skip the header bytes, parsing them only when asked for.
    "lazy_headers": OptionalFeature(frozenset({"header_values.deserialize_lazy"}), frozenset({"HV-10"})),
    # VS-31: a wipe of one store that keeps the task's other stores; Kafka's only wipe is a whole task's
    # (StateManagerUtil.closeStateManager deletes the task directory), which store.wipe still reaches.
    "store_wipe": OptionalFeature(frozenset(), frozenset({"VS-31"})),
    # WS-2, WIN-16: a segment interval given to a window store and checked there (below 1 is refused). Kafka's
    # public Stores takes none, and its internal supplier checks none: no Kafka API can be asked to refuse one.
    "segment_interval_option": OptionalFeature(frozenset(), frozenset(), inputs=(
        ("window.segment_interval", ("segment_interval",), 1), ("store.open", ("options", "segment_interval_ms"), 1))),
}


class CapabilitiesError(KStateError):
    """A ``store.capabilities`` answer that is not the shape OPS-1 gives it."""


def canonical_store_type(name: str) -> str:
    """The store type ``name`` names, the legacy alias folded in (spec/ops.md: the harness takes both as one)."""
    return store_types.ALIASES.get(name, name)


@dataclass(frozen=True)
class Capabilities:
    """The store types, backends and features an implementation offers; a backend list says where it works."""

    store_types: frozenset[str] = frozenset()
    #: In the implementation's order, limited to the two the spec knows (the first is a scenario's default).
    backends: tuple[str, ...] = ()
    logging: bool = False
    caching: bool = False
    cache_flush_listener: bool = False
    crash: bool = False
    iterators: bool = False
    #: HV-10's lazy header decoding (OPTIONAL_FEATURES), which Kafka 4.4 does not have.
    lazy_headers: bool = False
    #: VS-31's wipe of one store beside the task's other stores (OPTIONAL_FEATURES), which Kafka does not have.
    store_wipe: bool = False
    #: WS-2's checked segment interval of a window store (OPTIONAL_FEATURES), which Kafka's public Stores lacks.
    segment_interval_option: bool = False
    dump: frozenset[str] = frozenset()
    offsets: frozenset[str] = frozenset()
    upgrade: frozenset[str] = frozenset()
    #: Store types that open on some of :attr:`backends` only, with those backends (OPS-1 ``store_backends``).
    store_backends: Mapping[str, frozenset[str]] = field(default_factory=dict, compare=False)
    #: The answer as given, for reports (never read for a decision).
    answer: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def parse(cls, answer: Mapping[str, Any]) -> Capabilities:
        """The capabilities of a ``store.capabilities`` answer; :class:`CapabilitiesError` names a malformed field."""
        if not isinstance(answer, Mapping):
            raise CapabilitiesError(f"store.capabilities answered a {type(answer).__name__}, not an object")
        if "error" in answer:
            raise CapabilitiesError(f"store.capabilities was refused: {answer['error']}")

        def names(key: str) -> list[str]:
            value = answer.get(key, [])
            if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
                raise CapabilitiesError(f"store.capabilities: {key} is not a list of names: {value!r}")
            return value

        def flag(key: str) -> bool:
            value = answer.get(key, False)
            if not isinstance(value, bool):
                raise CapabilitiesError(f"store.capabilities: {key} is not true or false: {value!r}")
            return value

        where = answer.get("store_backends", {})
        if not isinstance(where, Mapping) or not all(
                isinstance(v, list) and all(isinstance(b, str) for b in v) for v in where.values()):
            raise CapabilitiesError(f"store.capabilities: store_backends is not an object of backend lists: {where!r}")
        return cls(
            store_types=frozenset(canonical_store_type(t) for t in names("store_types")),
            store_backends={canonical_store_type(t): frozenset(v) for t, v in where.items()},
            backends=tuple(b for b in names("backends") if b in BACKENDS),
            logging=flag("logging"), caching=flag("caching"), cache_flush_listener=flag("cache_flush_listener"),
            crash=flag("crash"), iterators=flag("iterators"), lazy_headers=flag("lazy_headers"),
            store_wipe=flag("store_wipe"), segment_interval_option=flag("segment_interval_option"), dump=frozenset(names("dump")), offsets=frozenset(names("offsets")), upgrade=frozenset(names("upgrade")),
            answer=dict(answer))

    def offers_store_type(self, name: str) -> bool:
        """Whether it opens stores of type ``name`` (either spelling)."""
        return canonical_store_type(name) in self.store_types

    def offers(self, store_type: str, backend: str) -> bool:
        """Whether it opens ``store_type`` stores on ``backend``."""
        return self.lacks(store_type, backend) is None

    def lacks(self, store_type: str | None = None, backend: str | None = None, feature: str | None = None) -> str | None:
        """What of ``store_type`` on ``backend`` (or of an optional ``feature``) it does not have (``the versioned_kv
        store on memory``, ``the lazy_headers capability``), or None.

        A store type, backend or optional feature (OPTIONAL_FEATURES) an implementation does not have is a feature it
        lacks, not an operation it fails to answer: its cases are reported ``absent`` (report.ABSENT), never
        ``partial`` (docs/verdicts.md)."""
        if feature is not None:
            if feature not in OPTIONAL_FEATURES:
                raise CapabilitiesError(f"{feature!r} is no optional feature (capabilities.OPTIONAL_FEATURES)")
            if not getattr(self, feature):
                return f"the {feature} capability"
        if store_type is not None and not self.offers_store_type(store_type):
            return f"the {canonical_store_type(store_type)} store"
        if backend is not None and backend not in self.backends:
            return f"the {backend} backend"
        if store_type is not None and backend is not None:
            only = self.store_backends.get(canonical_store_type(store_type))
            if only is not None and backend not in only:
                return f"the {canonical_store_type(store_type)} store on {backend}"
        return None

    def offers_feature(self, feature: str, backend: str | None = None) -> bool:
        """Whether it offers ``feature`` (a field name of OPS-1), on ``backend`` where the field lists backends."""
        value = getattr(self, feature, None)
        if isinstance(value, bool):
            return value
        if isinstance(value, frozenset):
            return bool(value) if backend is None else backend in value
        raise CapabilitiesError(f"{feature!r} is no store.capabilities feature")


def feature_of(op: str) -> str | None:
    """The optional feature (OPTIONAL_FEATURES) that ``op`` belongs to, or None for an operation every store has."""
    return next((name for name, feature in OPTIONAL_FEATURES.items() if op in feature.operations), None)


def feature_of_input(op: str, payload: Mapping[str, Any]) -> str | None:
    """The optional feature (OPTIONAL_FEATURES) that ``payload`` of ``op``, an operation every store has, needs: a
    segment interval below 1 given to a window store is one only a store with a checked interval can refuse."""
    for name, feature in OPTIONAL_FEATURES.items():
        for input_op, path, smallest in feature.inputs:
            value: Any = payload
            for step in path:
                value = value.get(step) if isinstance(value, Mapping) else None
            if op == input_op and isinstance(value, int) and not isinstance(value, bool) and value < smallest:
                return name
    return None


def checked_rules(op: str, rules: Sequence[str]) -> list[str]:
    """The rules a golden case of ``op`` checks: an optional feature's rules only where it calls one of the
    feature's operations or checks the feature's rules alone (a store scenario). A case of another operation that
    cites them (the vectors recorded from Kafka cite every rule of ``header_values.deserialize``, HV-10 among them) checks
    what that operation does, which every store has: counted for HV-10, it would pass HV-10 on an eager store."""
    kept = list(rules)
    for feature in OPTIONAL_FEATURES.values():
        if op not in feature.operations and not set(rules) <= feature.rules:
            kept = [rule for rule in kept if rule not in feature.rules]
    return kept


def feature_of_rules(rules: Collection[str]) -> str | None:
    """The optional feature whose rules are all that ``rules`` (a case's) check, or None: such a case needs it."""
    return next((name for name, feature in OPTIONAL_FEATURES.items() if rules and set(rules) <= feature.rules), None)


def lacks_reason(name: str, what: str) -> str:
    """The skip reason of a case on a store type or backend ``name`` lacks (report.classify_skip reads it)."""
    return f"{name} lacks {what}"


NOTHING = Capabilities()
_CACHE: weakref.WeakKeyDictionary[Any, Capabilities] = weakref.WeakKeyDictionary()


def share_capabilities(wrapper: Any, implementation: Any) -> None:
    """``wrapper``, which forwards every call to ``implementation``, has the capabilities already parsed for it (at
    load, :func:`kstate_conformance.loading.load_implementation`), so they are not asked again through it."""
    with contextlib.suppress(KeyError, TypeError):
        _CACHE[wrapper] = _CACHE[implementation]


def capabilities_of(implementation: Any) -> Capabilities:
    """The implementation's capabilities, asked once per implementation object; :data:`NOTHING` when it has no
    ``store.capabilities`` (it offers no store)."""
    with contextlib.suppress(KeyError, TypeError):
        return _CACHE[implementation]
    caps = (Capabilities.parse(implementation.call("store.capabilities", {}))
            if implementation.supports("store.capabilities") else NOTHING)
    with contextlib.suppress(TypeError):  # an object that takes no weak reference is asked again next time
        _CACHE[implementation] = caps
    return caps
