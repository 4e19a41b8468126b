"""One Kafka Streams application instance as a process: ``python -m kstate.app CONFIG.json``.

It owns the input partitions of its config (one task ``0_<p>`` each, with its own store in Kafka's state
directory layout, LAY-1/LAY-2), opens each store with Kafka's open logic (refusing newer stores, UPG-1;
detecting an unclean shutdown, KV-52), restores it from its changelog partition from the committed offset
on (RST-*), then applies every input record to the store through the change-logging layer (CL-*). The store
is of any built family; the processor that applies a record is the family's (:mod:`kstate.app.processors`).

A commit is Kafka's at-least-once commit: flush the producer (every changelog record acknowledged), commit
the input offsets, then commit each store's data with its changelog offset in one atomic batch (KV-50).
SIGTERM stops cleanly (final commit, stores closed with status CLOSED, OFF-7); SIGKILL is a crash.

Progress is reported in ``<status_dir>/<instance>.status.json`` (rewritten atomically after each commit) and
``<status_dir>/<instance>.events.jsonl`` (one JSON object per line).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from kstate.app.config import CRASH_POINTS, ON_REFUSED_WIPE, UNCLEAN_WIPE, InstanceConfig, InstanceConfigError
from kstate.app.processors import Processor, ProcessorConfigError, processor_for
from kstate.app.restore_io import restore_from_changelog
from kstate.codecs import changelog as cl
from kstate.codecs.offsets import UncleanShutdownError
from kstate.codecs.store_types import STORE_TYPES
from kstate.stores.api import (
    Backend,
    ColumnFamilyStore,
    PositionTracking,
    ProcessorStateError,
    RecordContext,
    StateStore,
    TopicPartition,
    UnknownColumnFamilyError,
)
from kstate.stores.changelogging import RecordContextHolder
from kstate.stores.factory import open_bytes_store, wipe_store
from kstate.stores.families import changelogging_store

EXIT_REFUSED = 3
EXIT_FATAL = 2
#: A bad command line or config file (INST-1, INST-6).
EXIT_USAGE = 64
#: The version of the instance protocol this host speaks (spec/instance-protocol.md, INST-2).
INSTANCE_PROTOCOL = 1
IMPLEMENTATION = "kstate-reference"
#: Every event this host writes (INST-21).
EVENTS = ("starting", "opened", "restored", "running", "refused", "unclean_shutdown", "wiped", "crash", "fatal",
          "exit", "stopped")


@runtime_checkable
class SegmentModes(Protocol):
    """A segmented store that tells each open segment's column-family mode (``regular`` / ``upgrade``)."""

    def segment_modes(self) -> dict[str, str]: ...


@dataclass
class Task:
    """One input partition, its store, its changelog partition, and the family's processor writing to it."""

    partition: int
    changelog: TopicPartition
    store: StateStore
    #: The change-logging layer over ``store``, of the store's family.
    logged: Any
    holder: RecordContextHolder
    processor: Processor
    sink: list[cl.ChangelogRecord] = field(default_factory=list)
    changelog_end: int | None = None
    next_input_offset: int | None = None


class Host:
    """The instance's main loop; see the module docstring."""

    def __init__(self, config: InstanceConfig) -> None:
        self.config = config
        self.store_type = config.kv_store_type
        status_dir = Path(config.status_dir)
        status_dir.mkdir(parents=True, exist_ok=True)
        self.status_path = status_dir / f"{config.instance_id}.status.json"
        self._events = (status_dir / f"{config.instance_id}.events.jsonl").open("a", buffering=1)
        self.stopping = False
        self.commits = 0
        self.processed = 0
        self.tasks: dict[int, Task] = {}
        self.delivery_errors: list[str] = []
        self._crash_point, self._crash_after = self._parse_crash(config.crash_at)
        self._crash_count = 0

    # --- reporting -------------------------------------------------------------------------------------

    def event(self, kind: str, **data: Any) -> None:
        self._events.write(json.dumps({"event": kind, "instance": self.config.instance_id, "pid": os.getpid(),
                                       "time": time.time(), **data}) + "\n")

    def write_status(self, state: str) -> None:
        status = {
            "instance": self.config.instance_id, "pid": os.getpid(), "state": state, "commits": self.commits,
            "processed": self.processed, "store_type": self.store_type.value,
            "input_next": {str(p): t.next_input_offset for p, t in self.tasks.items()},
            "changelog_end": {str(p): t.changelog_end for p, t in self.tasks.items()},
        }
        tmp = self.status_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(status))
        os.replace(tmp, self.status_path)

    @staticmethod
    def _parse_crash(spec: str | None) -> tuple[str | None, int]:
        if not spec:
            return None, 0
        point, _, count = spec.partition(":")
        if point not in CRASH_POINTS:
            raise ValueError(f"unknown crash point {point!r}; one of {', '.join(CRASH_POINTS)}")
        return point, int(count or "1")

    def crash_point(self, point: str) -> None:
        """SIGKILL this process the n-th time ``point`` is reached, if the config says so."""
        if point != self._crash_point:
            return
        self._crash_count += 1
        if self._crash_count >= self._crash_after:
            self.event("crash", point=point, count=self._crash_count)
            os.kill(os.getpid(), signal.SIGKILL)

    # --- opening and restoring -----------------------------------------------------------------------

    def _open(self, partition: int, ignore_invalid_state: bool = False) -> StateStore:
        c = self.config
        return open_bytes_store(self.store_type, Backend.ROCKSDB, name=c.store_name, state_dir=c.state_dir,
                                application_id=c.application_id, task_id=c.task_id(partition),
                                ignore_invalid_state=ignore_invalid_state, manage_offsets=c.manage_offsets,
                                options=c.store_options)

    def _wipe(self, partition: int) -> None:
        c = self.config
        wipe_store(c.state_dir, name=c.store_name, application_id=c.application_id, task_id=c.task_id(partition),
                   store_type=self.store_type)
        self.event("wiped", partition=partition)

    def open_task(self, partition: int) -> Task:
        c = self.config
        changelog = TopicPartition(c.changelog_topic, partition)
        try:
            store = self._open(partition)
        except UnknownColumnFamilyError as exc:
            # A store written by a newer version (UPG-1): refuse it, or wipe it and rebuild (UPG-3).
            self.event("refused", partition=partition, error=str(exc), column_families=list(exc.unknown_column_families))
            if c.on_refused != ON_REFUSED_WIPE:
                raise
            self._wipe(partition)
            store = self._open(partition)
        except ProcessorStateError as exc:
            if not isinstance(exc.__cause__, UncleanShutdownError):
                raise
            self.event("unclean_shutdown", partition=partition, error=str(exc), policy=c.on_unclean_shutdown)
            if c.on_unclean_shutdown == UNCLEAN_WIPE:
                self._wipe(partition)
                store = self._open(partition)
            else:
                store = self._open(partition, ignore_invalid_state=True)
        committed = store.committed_offset(changelog)
        mode, families, segments = "regular", [], {}
        if isinstance(store, ColumnFamilyStore):
            mode, families = store.mode, list(store.column_families)
        if isinstance(store, SegmentModes):
            segments = store.segment_modes()
        self.event("opened", partition=partition, store_type=self.store_type.value, mode=mode,
                   column_families=families, segment_modes=segments, committed_changelog_offset=committed)
        holder = RecordContextHolder()
        if isinstance(store, PositionTracking):
            holder.subscribe(store.set_record_context)  # each record's context moves the store's position
        sink: list[cl.ChangelogRecord] = []
        logged = changelogging_store(store, self.store_type, holder, sink)
        try:  # before the restore: a bad processor option is refused at once (INST-26)
            processor = processor_for(logged, self.store_type, c.store_options, c.processor_options)
        except ProcessorConfigError:
            logged.close()
            raise
        outcome = restore_from_changelog(store, self.store_type, c.bootstrap, changelog,
                                         batch_size=c.restore_batch_size,
                                         after_batch=lambda _offset: self.crash_point("after_restore_batch"))
        self.event("restored", partition=partition, records=outcome.records, batches=outcome.batches,
                   first_offset=outcome.first_offset, last_offset=outcome.last_offset)
        task = Task(partition, changelog, store, logged, holder, processor, sink)
        task.changelog_end = outcome.last_offset if outcome.last_offset is not None else committed
        return task

    # --- processing --------------------------------------------------------------------------------------

    def _on_delivery(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.delivery_errors.append(str(err))
            return
        task = self.tasks[msg.partition()]
        if task.changelog_end is None or msg.offset() > task.changelog_end:
            task.changelog_end = msg.offset()

    def process(self, message: Any, producer: Any) -> None:
        task = self.tasks[message.partition()]
        headers = tuple(message.headers() or ())
        timestamp = message.timestamp()[1]
        context = RecordContext(timestamp=timestamp, headers=headers, offset=message.offset(),
                                topic=message.topic(), partition=message.partition())
        task.holder.current = context
        task.processor.process(message.key(), message.value(), timestamp, headers)
        for record in task.sink:
            while True:
                try:
                    producer.produce(task.changelog.topic, key=record.key, value=record.value,
                                     timestamp=record.timestamp, headers=list(record.headers) or None,
                                     partition=task.partition, on_delivery=self._on_delivery)
                    break
                except BufferError:
                    producer.poll(0.05)
        task.sink.clear()
        task.next_input_offset = message.offset() + 1
        self.processed += 1
        self.crash_point("after_put")

    def commit(self, producer: Any, consumer: Any) -> None:
        """Kafka's at-least-once commit order: changelog acknowledged, input offsets, then the stores (KV-50)."""
        from confluent_kafka import TopicPartition as KafkaTopicPartition

        deadline = time.monotonic() + 30
        while producer.flush(1.0) and time.monotonic() < deadline:
            pass
        if len(producer) or self.delivery_errors:
            self.event("fatal", reason="changelog not acknowledged", errors=self.delivery_errors[:3],
                       unsent=len(producer))
            raise SystemExit(EXIT_FATAL)
        self.crash_point("after_producer_flush")
        offsets = [KafkaTopicPartition(self.config.input_topic, p, t.next_input_offset)
                   for p, t in self.tasks.items() if t.next_input_offset is not None]
        if offsets:
            consumer.commit(offsets=offsets, asynchronous=False)
        self.crash_point("after_consumer_commit")
        for task in self.tasks.values():
            if task.changelog_end is not None:
                task.store.commit({task.changelog: task.changelog_end})
        self.commits += 1
        self.crash_point("after_store_commit")
        self.write_status("running")

    def run(self) -> int:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer
        from confluent_kafka import TopicPartition as KafkaTopicPartition

        signal.signal(signal.SIGTERM, self._request_stop)
        signal.signal(signal.SIGINT, self._request_stop)
        c = self.config
        self.event("starting", store_type=self.store_type.value, partitions=c.partitions)
        try:
            for partition in c.partitions:
                self.tasks[partition] = self.open_task(partition)
        except UnknownColumnFamilyError as exc:
            self.event("exit", code=EXIT_REFUSED, reason=str(exc))
            self._close_stores()
            return EXIT_REFUSED
        except ProcessorConfigError as exc:
            print(f"kstate.app: {exc}", file=sys.stderr)
            self.event("exit", code=EXIT_USAGE, reason=str(exc))
            self._close_stores()
            return EXIT_USAGE
        consumer = Consumer({"bootstrap.servers": c.bootstrap, "group.id": c.application_id,
                             "enable.auto.commit": False, "auto.offset.reset": "earliest",
                             "fetch.queue.backoff.ms": 0, "fetch.wait.max.ms": 10,
                             "session.timeout.ms": 2000, "heartbeat.interval.ms": 500})
        producer = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "enable.idempotence": True,
                             "linger.ms": 2, "message.timeout.ms": 30000})
        inputs = [KafkaTopicPartition(c.input_topic, p) for p in c.partitions]
        committed = consumer.committed(inputs, timeout=15)
        for tp in committed:
            self.tasks[tp.partition].next_input_offset = tp.offset if tp.offset >= 0 else None
        consumer.assign([KafkaTopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_BEGINNING)
                         for tp in committed])
        self.write_status("running")
        self.event("running", input_next={str(tp.partition): tp.offset for tp in committed})
        since_commit = 0
        last_commit = time.monotonic()
        try:
            while not self.stopping:
                for message in consumer.consume(num_messages=500, timeout=0.05):
                    error = message.error()
                    if error is not None:
                        if error.fatal():
                            self.event("fatal", reason=str(error))
                            return EXIT_FATAL
                        continue
                    self.process(message, producer)
                    since_commit += 1
                producer.poll(0)
                now = time.monotonic()
                if since_commit >= c.commit_every_records or (
                        since_commit and (now - last_commit) * 1000 >= c.commit_interval_ms):
                    self.commit(producer, consumer)
                    since_commit = 0
                    last_commit = now
            self.commit(producer, consumer)
        finally:
            consumer.close()
        self._close_stores()
        self.write_status("stopped")
        self.event("stopped", commits=self.commits, processed=self.processed)
        return 0

    def _close_stores(self) -> None:
        for task in self.tasks.values():
            task.logged.close()

    def _request_stop(self, _signum: int, _frame: Any) -> None:
        self.stopping = True


def describe() -> dict[str, Any]:
    """What ``--describe`` prints (INST-2): the built store types, :data:`CRASH_POINTS`, :data:`EVENTS`."""
    from kstate import __version__

    return {"instance_protocol": INSTANCE_PROTOCOL, "implementation": IMPLEMENTATION, "version": __version__,
            "store_types": [t.value for t, info in STORE_TYPES.items() if info.built],
            "crash_points": list(CRASH_POINTS), "events": list(EVENTS)}


def main(argv: list[str] | None = None) -> int:
    """``python -m kstate.app CONFIG.json`` or ``--describe`` (INST-1, INST-2); a bad config exits 64 (INST-6)."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--describe"]:
        print(json.dumps(describe()))
        return 0
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: python -m kstate.app CONFIG.json | --describe", file=sys.stderr)
        return EXIT_USAGE
    try:
        config = InstanceConfig.read(args[0])
    except InstanceConfigError as exc:
        print(f"kstate.app: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return Host(config).run()
