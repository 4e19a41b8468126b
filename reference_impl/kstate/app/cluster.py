"""A small application: an input topic, a changelog topic, instances, and a record of acknowledged input.

Used by the system tests and benchmarks: ``AppCluster`` creates the topics (the changelog with Kafka
Streams' configuration for the store type, CL-15), starts instances each with its own state directory,
feeds input (recording every record the broker acknowledged, with its offset), and reads the instances'
stores back (:mod:`kstate.store_dump`). Its instances run the reference unless an :class:`InstanceCommand` of
another implementation is given, for the cluster or for one instance (INST-1).
"""

from __future__ import annotations

import functools
import random
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kstate.app.config import InstanceConfig
from kstate.app.process import InstanceCommand, InstanceError, InstanceProcess
from kstate.codecs.store_types import STORE_TYPES, StoreType
from kstate.kafka.broker import Broker, describe
from kstate.kafka.changelog_topics import ChangelogIOError, create_changelog_topic, create_topic, flush_bounded
from kstate.spark.oracle import ChangelogRow, State, read_changelog_rows
from kstate.store_dump import SegmentedStoreDump, StoreDump, dump_segmented_store, dump_store

Headers = tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True)
class InputRecord:
    """An input record the broker acknowledged, at its offset."""

    partition: int
    offset: int
    key: bytes
    value: bytes | None
    timestamp: int
    headers: Headers


class AppCluster:
    """One application (one store, one sub-topology) and its instances on ``broker``."""

    def __init__(self, broker: Broker, root: Path, *, application_id: str, store_name: str, store_type: StoreType,
                 partitions: int, store_options: dict[str, Any] | None = None,
                 processor_options: dict[str, int] | None = None, timestamp_jitter_ms: int = 0,
                 instance_command: InstanceCommand | None = None) -> None:
        self.broker = broker
        #: The implementation every instance runs unless it is given its own (None: the reference).
        self.instance_command = instance_command
        self.root = Path(root)
        self.application_id = application_id
        self.store_name = store_name
        self.partitions = partitions
        self.input_topic = f"{application_id}-input"
        create_topic(broker, self.input_topic, partitions)
        #: The family's store and processor options every instance gets unless it is given its own.
        self.store_options = dict(store_options or {})
        self.processor_options = dict(processor_options or {})
        #: Input timestamps go back by up to this much at random (out-of-order input); 0 keeps them increasing.
        self.timestamp_jitter_ms = timestamp_jitter_ms
        self.changelog_topic = create_changelog_topic(
            broker, application_id, store_name, StoreType(store_type), partitions,
            retention_ms=self.store_options.get("retention_ms"),
            history_retention_ms=self.store_options.get("history_retention_ms"))
        self.store_type = StoreType(store_type)
        self.instances: dict[str, InstanceProcess] = {}
        self.acked: list[InputRecord] = []
        self._lock = threading.Lock()
        self._errors: list[str] = []
        self._seq = 0
        #: Input timestamps start at the beginning of the current hour: event times years old would be deleted
        #: at once by a real broker's retention (a window or session changelog keeps retention + 1 day of
        #: record timestamps, counted from the broker's clock, CL-16).
        now_ms = int(time.time() * 1000)
        self.time_base = now_ms - now_ms % 3_600_000
        from confluent_kafka import Producer

        self._producer: Any = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "enable.idempotence": True,
                                   "linger.ms": 2})

    # --- instances -----------------------------------------------------------------------------------

    def instance(self, instance_id: str, partitions: Iterable[int], store_type: StoreType | None = None,
                 command: InstanceCommand | None = None, state_dir: Path | None = None,
                 **settings: Any) -> InstanceProcess:
        """An instance (not started) of ``command`` (default the cluster's) owning ``partitions``, with its own
        state directory (``state_dir``, else one under the cluster's root)."""
        settings.setdefault("store_options", dict(self.store_options))
        settings.setdefault("processor_options", dict(self.processor_options))
        config = InstanceConfig(
            instance_id=instance_id, bootstrap=self.broker.bootstrap, application_id=self.application_id,
            input_topic=self.input_topic, partitions=sorted(partitions), store_name=self.store_name,
            store_type=StoreType(store_type or self.store_type).value,
            state_dir=str(state_dir or self.root / instance_id / "state"), status_dir=str(self.root / "status"), **settings)
        process = InstanceProcess(config, command or self.instance_command)
        self.instances[instance_id] = process
        return process

    def require(self, store_types: Iterable[StoreType | str] = (), crash_points: Iterable[str] = (),
                events: Iterable[str] = ()) -> None:
        """Before any work: :class:`UnsupportedByInstance` unless the cluster's implementation described all of
        these (INST-3); the reference's own store types are checked when its instances start."""
        if self.instance_command is not None:
            self.instance_command.require(store_types, crash_points, events)

    def retire(self, instance: InstanceProcess) -> None:
        """A stopped instance gone for good: its partitions are owned by whichever instance else has them."""
        if instance.running:
            raise InstanceError(f"instance {instance.name} is still running")
        del self.instances[instance.name]

    def owner(self, partition: int) -> InstanceProcess:
        for process in self.instances.values():
            if partition in process.config.partitions:
                return process
        raise KeyError(f"no instance owns partition {partition}")

    def stop_all(self) -> None:
        for process in self.instances.values():
            if process.running:
                code = process.stop()
                if code != 0:
                    raise AssertionError(f"{process.name} exited with {code}: {process.log_tail()}")

    def kill_all(self) -> None:
        for process in self.instances.values():
            process.kill()

    # --- input ---------------------------------------------------------------------------------------

    def _on_delivery(self, headers: Headers, err: Any, msg: Any) -> None:
        # A delivery report carries no headers: they are bound at produce time.
        if err is not None:
            self._errors.append(str(err))
            return
        record = InputRecord(msg.partition(), msg.offset(), msg.key(), msg.value(), msg.timestamp()[1], headers)
        with self._lock:
            self.acked.append(record)

    def next_record(self, partition: int, keys: int, rng: random.Random, tombstone_every: int = 13,
                    key: int | None = None) -> tuple[bytes, bytes | None, int, list[tuple[str, bytes | None]]]:
        """A fresh input record: value ``p<p>-s<seq>`` (unique, so every changelog record traces back to its
        input), timestamp increasing with ``seq`` (going back by up to ``timestamp_jitter_ms`` at random), headers
        carrying the sequence number."""
        with self._lock:
            self._seq += 1
            seq = self._seq
        k = rng.randrange(keys) if key is None else key
        value = None if tombstone_every and seq % tombstone_every == 0 else f"p{partition}-s{seq}".encode()
        headers: list[tuple[str, bytes | None]] = [("seq", str(seq).encode()), ("src", b"feeder")]
        if seq % 5 == 0:
            headers.append(("seq", None))  # a duplicate key with a null value
        jitter = rng.randint(0, self.timestamp_jitter_ms) if self.timestamp_jitter_ms else 0
        return f"key-{k:05d}".encode(), value, self.time_base + seq - jitter, headers

    def produce(self, partition: int, records: Iterable[tuple[bytes, bytes | None, int, list[tuple[str, bytes | None]]]],
                flush: bool = True) -> None:
        for key, value, timestamp, headers in records:
            while True:
                try:
                    self._producer.produce(self.input_topic, key=key, value=value, timestamp=timestamp,
                                           headers=headers or None, partition=partition,
                                           on_delivery=functools.partial(self._on_delivery, tuple(headers)))
                    break
                except BufferError:
                    self._producer.poll(0.05)
            self._producer.poll(0)
        if flush:
            self.flush()

    def flush(self, timeout: float = 30.0) -> None:
        remaining = flush_bounded(self._producer, self.broker, timeout)
        if remaining or self._errors:
            raise ChangelogIOError(f"{describe(self.broker)}: input not acknowledged ({remaining} left, {self._errors[:3]})")

    def produce_batch(self, per_partition: int, keys: int, rng: random.Random, tombstone_every: int = 13) -> None:
        for partition in range(self.partitions):
            self.produce(partition, [self.next_record(partition, keys, rng, tombstone_every)
                                     for _ in range(per_partition)], flush=False)
        self.flush()

    def input_end(self) -> dict[int, int]:
        """Per partition, the offset after the last acknowledged input record."""
        end = {p: 0 for p in range(self.partitions)}
        with self._lock:
            for record in self.acked:
                end[record.partition] = max(end[record.partition], record.offset + 1)
        return end

    def input_by_value(self) -> dict[bytes, InputRecord]:
        with self._lock:
            return {r.value: r for r in self.acked if r.value is not None}

    def latest_input(self) -> dict[int, dict[bytes, InputRecord]]:
        """The last acknowledged input record per (partition, key): what the stores must reflect in the end."""
        latest: dict[int, dict[bytes, InputRecord]] = {}
        with self._lock:
            records = sorted(self.acked, key=lambda r: (r.partition, r.offset))
        for record in records:
            latest.setdefault(record.partition, {})[record.key] = record
        return latest

    # --- stores and changelog -----------------------------------------------------------------------

    def dump(self, partition: int, instance: InstanceProcess | None = None) -> StoreDump:
        """The store of a one-database type (key-value, versioned) of ``partition``, read-only."""
        process = instance or self.owner(partition)
        return dump_store(process.config.state_dir, self.application_id, process.config.task_id(partition),
                          self.store_name, StoreType(process.config.store_type))

    def dump_segments(self, partition: int, instance: InstanceProcess | None = None) -> SegmentedStoreDump:
        """The segments of a window or session store of ``partition``, read-only (LAY-3)."""
        process = instance or self.owner(partition)
        return dump_segmented_store(process.config.state_dir, self.application_id, process.config.task_id(partition),
                                    self.store_name, StoreType(process.config.store_type))

    def store_dump(self, partition: int, instance: InstanceProcess | None = None,
                   store_type: StoreType | None = None) -> StoreDump | SegmentedStoreDump:
        """The store of ``partition`` of any family (one database or segments), read-only."""
        process = instance or self.owner(partition)
        kind = StoreType(store_type or process.config.store_type)
        if STORE_TYPES[kind].single_database:
            return self.dump(partition, process)
        return self.dump_segments(partition, process)

    def logical_state(self, store_type: StoreType | None = None) -> State:
        """Every partition's store as its owner's store type reads it (read-only; KV-31, KV-35)."""
        state: State = {}
        for partition in range(self.partitions):
            owner = self.owner(partition)
            kind = StoreType(store_type or owner.config.store_type)
            state[partition] = self.store_dump(partition, owner, kind).logical_view(kind)
        return state

    def changelog_rows(self) -> list[ChangelogRow]:
        return read_changelog_rows(self.broker.bootstrap, self.changelog_topic, range(self.partitions))

    def close(self) -> None:
        self.kill_all()
        self._producer.flush(5)
        # Dropped now, so that it does not keep reconnecting to a broker that is gone.
        self._producer = None


class InputFeeder(threading.Thread):
    """Continuous input: ``rate`` records a second spread over every partition until :meth:`finish`."""

    def __init__(self, cluster: AppCluster, rate: float, keys: int, seed: int = 7) -> None:
        super().__init__(daemon=True, name="input-feeder")
        self.cluster = cluster
        self.rate = rate
        self.keys = keys
        self.rng = random.Random(seed)
        self._stop_event = threading.Event()
        self.error: BaseException | None = None
        self.sent = 0

    def run(self) -> None:
        try:
            interval = 1.0 / self.rate
            next_at = time.monotonic()
            while not self._stop_event.is_set():
                partition = self.sent % self.cluster.partitions
                self.cluster.produce(partition, [self.cluster.next_record(partition, self.keys, self.rng)], flush=False)
                self.sent += 1
                next_at += interval
                delay = next_at - time.monotonic()
                if delay > 0:
                    self._stop_event.wait(delay)
            self.cluster.flush()
        except BaseException as exc:  # reported by finish()
            self.error = exc

    def finish(self, timeout: float = 30.0) -> int:
        self._stop_event.set()
        self.join(timeout)
        if self.error is not None:
            raise self.error
        return self.sent
