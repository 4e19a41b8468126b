"""The configuration of one application instance, exchanged as a JSON file."""

from __future__ import annotations

import json
import types
import typing
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from kstate.codecs import changelog as cl
from kstate.codecs.store_types import STORE_TYPES, StoreType
from kstate.errors import KStateError

#: What an instance does when its store directory was left by an unclean shutdown (KV-52): keep the committed
#: data and restore the rest of the changelog on top (at-least-once), or wipe and rebuild (as Kafka does under
#: exactly-once, where the unclean store is a ``TaskCorruptedException``).
UNCLEAN_KEEP = "keep"
UNCLEAN_WIPE = "wipe"
#: What an instance does with a store it refuses to open (UPG-1): fail, or wipe and rebuild (UPG-3).
ON_REFUSED_FAIL = "fail"
ON_REFUSED_WIPE = "wipe"

#: Crash points an instance can be told to SIGKILL itself at (``crash_at = "<point>:<n>"``, the n-th time).
CRASH_POINTS = (
    "after_put",              # a record applied to the store and logged, not yet committed
    "after_producer_flush",   # the changelog acknowledged, no offset committed yet
    "after_consumer_commit",  # input offsets committed, the store's offsets not yet
    "after_store_commit",     # the store's data and offsets committed atomically
    "after_restore_batch",    # one restore batch written, not yet committed
)


class InstanceConfigError(KStateError, ValueError):
    """A config file that cannot be read, or a field of it missing or of the wrong JSON type (INST-6)."""

    def __init__(self, field_name: str | None, reason: str) -> None:
        self.field = field_name
        super().__init__(f"instance config field {field_name!r}: {reason}" if field_name else f"instance config: {reason}")


def _matches(value: Any, annotation: Any) -> bool:
    """Whether the JSON ``value`` has the type a config field is annotated with (bool is no int)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (types.UnionType, typing.Union):
        return any(_matches(value, arg) for arg in args)
    if annotation is type(None):
        return value is None
    if annotation is Any:
        return True
    if origin is list:
        return isinstance(value, list) and all(_matches(item, args[0]) for item in value)
    if origin is dict:
        return isinstance(value, dict) and all(_matches(item, args[1]) for item in value.values())
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, annotation)


@dataclass
class InstanceConfig:
    """One application instance: which input partitions it owns, its store, its state directory."""

    instance_id: str
    bootstrap: str
    application_id: str
    input_topic: str
    partitions: list[int]
    store_name: str
    store_type: str
    state_dir: str
    status_dir: str
    commit_every_records: int = 200
    commit_interval_ms: int = 200
    on_unclean_shutdown: str = UNCLEAN_KEEP
    on_refused: str = ON_REFUSED_FAIL
    manage_offsets: bool = True
    crash_at: str | None = None
    restore_batch_size: int = 1000
    #: The store family's own options (``retention_ms``, ``window_size_ms``, ``history_retention_ms``, ...),
    #: passed to ``open_bytes_store`` as the family's ``StoreClasses.options`` name them.
    store_options: dict[str, Any] = field(default_factory=dict)
    #: The family's processor's options (``grace_ms``, ``inactivity_gap_ms``; :mod:`kstate.app.processors`).
    processor_options: dict[str, int] = field(default_factory=dict)
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def changelog_topic(self) -> str:
        return cl.changelog_topic_name(self.application_id, self.store_name)

    @property
    def kv_store_type(self) -> StoreType:
        """The store type, of any family (the name predates the other families)."""
        return StoreType(self.store_type)

    def task_id(self, partition: int) -> str:
        """Every instance runs one sub-topology: task ``0_<partition>`` (LAY-1)."""
        return f"0_{partition}"

    def write(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(asdict(self), indent=1))
        return path

    @classmethod
    def read(cls, path: str | Path) -> InstanceConfig:
        """The config in the JSON file ``path``: unknown fields ignored (INST-5), a missing required field or one
        of the wrong JSON type an :class:`InstanceConfigError` naming it (INST-6)."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InstanceConfigError(None, f"cannot read {str(path)!r}: {exc}") from exc
        return cls.from_json(data)

    @classmethod
    def from_json(cls, data: Any) -> InstanceConfig:
        """A config from its decoded JSON object; see :meth:`read`."""
        if not isinstance(data, dict):
            raise InstanceConfigError(None, f"expected a JSON object, got {type(data).__name__}")
        hints = typing.get_type_hints(cls)
        known: dict[str, Any] = {}
        for spec in fields(cls):
            if spec.name not in data:
                if spec.default is MISSING and spec.default_factory is MISSING:
                    raise InstanceConfigError(spec.name, "required")
                continue
            value = data[spec.name]
            if not _matches(value, hints[spec.name]):
                raise InstanceConfigError(spec.name, f"expected {hints[spec.name]}, got {value!r:.80}")
            known[spec.name] = value
        try:
            store_type = StoreType.parse(known["store_type"])
        except KStateError as exc:
            raise InstanceConfigError("store_type", str(exc)) from exc
        if not STORE_TYPES[store_type].built:
            # Only a type --describe lists is ever given (INST-3); anything else is a usage error.
            raise InstanceConfigError("store_type", f"the reference has no {store_type.value} store")
        for name, choices in (("on_unclean_shutdown", (UNCLEAN_KEEP, UNCLEAN_WIPE)),
                              ("on_refused", (ON_REFUSED_FAIL, ON_REFUSED_WIPE))):
            if known.get(name, choices[0]) not in choices:
                raise InstanceConfigError(name, f"one of {', '.join(choices)}, got {known[name]!r:.80}")
        crash_point = (known.get("crash_at") or "").partition(":")[0]
        if crash_point and crash_point not in CRASH_POINTS:
            raise InstanceConfigError("crash_at", f"unknown crash point {crash_point!r}; one of {', '.join(CRASH_POINTS)}")
        return cls(**known)
