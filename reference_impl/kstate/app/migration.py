"""KIP-889's manual migration of a key-value store to a versioned store (spec/versioned-store.md, VS-30 to VS-33).

KIP-889 gives no live migration, only a manual procedure: stop the application, delete the store's local state on
every instance, set the changelog topic's ``min.compaction.lag.ms`` to the history retention plus a buffer (Kafka's
own versioned changelogs use one day), switch the application to a versioned store, and restart it, which
restores the versioned store from the same changelog (the changelog bytes are the same for both types).

:func:`migrate_to_versioned` runs those steps for one task's store. The topic-config step goes through a
:class:`TopicConfigAdmin`, so it can be tested without a broker; :class:`BrokerTopicConfigAdmin` is the one over a
real broker (``confluent_kafka``'s ``AdminClient``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kstate.codecs import changelog as cl
from kstate.codecs.store_types import STORE_TYPES, Family, StoreType
from kstate.errors import InvalidArgumentError, KStateError
from kstate.kafka.broker import Broker
from kstate.stores.api import Backend, TopicPartition
from kstate.stores.factory import open_bytes_store, task_directory, wipe_store
from kstate.stores.restore import DEFAULT_RESTORE_BATCH_SIZE, RestoreResult, restore

MIN_COMPACTION_LAG = "min.compaction.lag.ms"


class MigrationError(KStateError):
    """A migration step failed; ``step`` names it (the steps before it have been done)."""

    def __init__(self, step: str, message: str) -> None:
        self.step = step
        super().__init__(f"migration step {step!r}: {message}")


class TopicConfigAdmin(Protocol):
    """What the migration needs of an admin client: read and change one topic's configuration (VS-32)."""

    def describe_topic_config(self, topic: str) -> dict[str, str]: ...
    def alter_topic_config(self, topic: str, config: Mapping[str, str]) -> None: ...


class BrokerTopicConfigAdmin:
    """:class:`TopicConfigAdmin` over a broker at ``bootstrap`` (incremental alter: other settings are kept)."""

    @classmethod
    def for_broker(cls, broker: Broker, timeout: float = 15.0) -> BrokerTopicConfigAdmin:
        """The admin of a :mod:`kstate.kafka.broker` broker (embedded, container or external)."""
        return cls(broker.bootstrap, timeout)

    def __init__(self, bootstrap: str, timeout: float = 15.0, client_config: Mapping[str, Any] | None = None) -> None:
        from confluent_kafka.admin import AdminClient

        self.timeout = timeout
        self._admin = AdminClient({"bootstrap.servers": bootstrap, **dict(client_config or {})})

    def describe_topic_config(self, topic: str) -> dict[str, str]:
        from confluent_kafka.admin import ConfigResource  # type: ignore[attr-defined]

        resource = ConfigResource("topic", topic)
        entries = self._admin.describe_configs([resource], request_timeout=self.timeout)[resource].result(self.timeout)
        return {name: entry.value for name, entry in entries.items() if entry.value is not None}

    def alter_topic_config(self, topic: str, config: Mapping[str, str]) -> None:
        from confluent_kafka.admin import (  # type: ignore[attr-defined]
            AlterConfigOpType,
            ConfigEntry,
            ConfigResource,
        )

        entries = [ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET) for name, value in config.items()]
        resource = ConfigResource("topic", topic, incremental_configs=entries)
        self._admin.incremental_alter_configs([resource], request_timeout=self.timeout)[resource].result(self.timeout)


def versioned_compaction_lag_ms(history_retention_ms: int) -> int:
    """``min.compaction.lag.ms`` for a versioned changelog: history retention + one day, saturating (VS-32, CL-17)."""
    config = cl.changelog_topic_config(StoreType.VERSIONED_KV, history_retention_ms=history_retention_ms)
    return int(config[MIN_COMPACTION_LAG])


@dataclass(frozen=True)
class MigrationResult:
    """What a migration did: the topic setting before and after, and what the restore applied (VS-30)."""

    topic: str
    previous_min_compaction_lag_ms: str | None
    min_compaction_lag_ms: int
    restored: RestoreResult
    store_directory: Path | None


#: A changelog record with its offset in the topic partition (compaction leaves gaps between offsets).
OffsetRecord = tuple[int, cl.ChangelogRecord]


def with_offsets(records: Iterable[cl.ChangelogRecord], first_offset: int = 0) -> Iterator[OffsetRecord]:
    """``records`` numbered from ``first_offset``: a topic that was never compacted."""
    return enumerate(records, first_offset)


def changelog_from_broker(broker: Broker, topic: str, partition: int = 0, timeout: float = 30.0) -> list[OffsetRecord]:
    """Every record of ``topic``-``partition`` on ``broker`` from offset 0 to the end, with its offset."""
    from kstate.kafka.changelog_topics import consume_all

    return [(r["offset"], cl.ChangelogRecord(r["key"], r["value"], r["timestamp"], tuple(r["headers"])))
            for r in consume_all(broker, topic, partition, timeout=timeout)]


def migrate_to_versioned(
    *,
    store_name: str,
    history_retention_ms: int,
    changelog_records: Iterable[OffsetRecord],
    admin: TopicConfigAdmin,
    state_dir: str | Path,
    application_id: str,
    task_id: str = "0_0",
    segment_interval_ms: int | None = None,
    partitions: int | None = None,
    from_store_type: StoreType = StoreType.KEY_VALUE,
    to_store_type: StoreType = StoreType.VERSIONED_KV,
    stop: Callable[[], None] | None = None,
    batch_size: int = DEFAULT_RESTORE_BATCH_SIZE,
) -> MigrationResult:
    """KIP-889's manual migration of one task's store, step by step (VS-30 to VS-33):

    1. ``stop()`` stops the application (the caller's; nothing may write the store or its changelog meanwhile);
    2. the key-value store's local state is wiped (its directory and ``<store>.position`` file);
    3. the changelog topic's ``min.compaction.lag.ms`` is set to history retention + 1 day through ``admin``;
    4. a versioned store of ``to_store_type`` is opened where the old store was, restored from
       ``changelog_records`` (``(offset, record)`` pairs of the topic partition from its start, in order:
       :func:`changelog_from_broker`, or :func:`with_offsets`), the offset of each batch's last record committed
       after it, and closed cleanly.

    Arguments are checked before anything is done (a refused migration changes nothing).
    """
    if STORE_TYPES[StoreType(from_store_type)].family is not Family.KEY_VALUE:
        raise InvalidArgumentError("from_store_type", f"{from_store_type} is not a key-value store type")
    if STORE_TYPES[StoreType(to_store_type)].family is not Family.VERSIONED:
        raise InvalidArgumentError("to_store_type", f"{to_store_type} is not a versioned store type")
    if isinstance(history_retention_ms, bool) or not isinstance(history_retention_ms, int) or history_retention_ms < 0:
        raise InvalidArgumentError("history_retention_ms", f"a history retention is an int >= 0, got {history_retention_ms!r}")
    lag = versioned_compaction_lag_ms(history_retention_ms)
    topic = cl.changelog_topic_name(application_id, store_name)
    partition = _task_partition(task_id) if partitions is None else partitions

    if stop is not None:
        stop()
    wipe_store(state_dir, name=store_name, application_id=application_id, task_id=task_id,
               store_type=StoreType(from_store_type))

    try:
        previous = admin.describe_topic_config(topic).get(MIN_COMPACTION_LAG)
        admin.alter_topic_config(topic, {MIN_COMPACTION_LAG: str(lag)})
    except KStateError:
        raise
    except Exception as exc:  # an admin client's own errors, named with the step
        raise MigrationError("set min.compaction.lag.ms", f"{topic}: {exc}") from exc

    options: dict[str, Any] = {"history_retention_ms": history_retention_ms}
    if segment_interval_ms is not None:
        options["segment_interval_ms"] = segment_interval_ms
    changelog = TopicPartition(topic, partition)
    store = open_bytes_store(StoreType(to_store_type), Backend.ROCKSDB, name=store_name,
                             state_dir=state_dir, application_id=application_id, task_id=task_id,
                             changelog_partitions=[changelog], options=options)
    last_offset = [-1]

    def records() -> Iterator[cl.ChangelogRecord]:
        for offset, record in changelog_records:
            last_offset[0] = offset
            yield record

    try:
        # A batch is read whole before it is restored, so the last offset read is its last record's.
        result = restore(store, StoreType(to_store_type), records(), batch_size=batch_size,
                         after_batch=lambda _progress: store.commit({changelog: last_offset[0]}))
    except BaseException:
        store.close()
        raise
    store.close()
    directory = task_directory(state_dir, application_id, task_id) / "rocksdb" / store_name
    return MigrationResult(topic, previous, lag, result, directory)


def _task_partition(task_id: str) -> int:
    try:
        return int(task_id.rsplit("_", 1)[1])
    except (IndexError, ValueError):
        raise InvalidArgumentError("task_id", f"expected <subtopology>_<partition>, got {task_id!r}") from None
