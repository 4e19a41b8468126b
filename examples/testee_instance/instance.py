#!/usr/bin/env python3
"""A second application instance, independent of the reference: it speaks the instance protocol
(spec/instance-protocol.md) and does all its store work through a testee process (spec/testee-protocol.md).

    python3 examples/testee_instance/instance.py [--testee CMD] CONFIG.json
    python3 examples/testee_instance/instance.py [--testee CMD] --describe

It imports nothing from ``kstate``: only the standard library and ``confluent_kafka``. The testee (default
``python3 -m kstate.cli testee``, or ``--testee CMD``, or the environment variable ``KSTATE_TESTEE``) is the
"store library"; this file is the application around it, the part a port to another language rewrites:

- one task ``0_<p>`` per owned input partition, its store opened in the state directory (INST-10);
- restore from the changelog, from the store's committed offset on, batch by batch (INST-14);
- every input record in offset order: ``store.set_context`` then the family's processor (INST-11, INST-12,
  INST-22..INST-25), stored values encoded and decoded with the testee's codec operations;
- the change-logging layer's records drained with ``store.changelog`` and produced by this process (INST-13);
- at-least-once commit: producer flushed, input offsets committed, then ``store.commit`` (INST-15);
- SIGTERM: a final commit, ``store.close``, exit 0 (INST-17).

Every built store type and every crash point is supported: ``--describe`` says so (INST-2).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

IMPLEMENTATION = "kstate-example-testee-instance"
#: The store types this instance runs: each one's family (which processor, INST-12, INST-22..24) and value layout.
STORE_TYPES = {
    "kv": ("key_value", "plain"),
    "timestamped_kv": ("key_value", "timestamped"),
    "timestamped_kv_with_headers": ("key_value", "timestamped_with_headers"),
    "versioned_kv": ("versioned", "plain"),
    "versioned_kv_with_headers": ("versioned", "aggregation_with_headers"),
    "window": ("window", "plain"),
    "timestamped_window": ("window", "timestamped"),
    "timestamped_window_with_headers": ("window", "timestamped_with_headers"),
    "session": ("session", "plain"),
    "session_with_headers": ("session", "aggregation_with_headers"),
}
#: The processor options each family takes (INST-26); a session processor needs its gap.
PROCESSOR_OPTIONS = {"key_value": (), "versioned": (), "window": ("grace_ms",),
                     "session": ("inactivity_gap_ms", "grace_ms")}
EVENTS = ("starting", "opened", "restored", "running", "refused", "unclean_shutdown", "wiped", "crash", "fatal",
          "exit", "stopped")
DEFAULT_TESTEE = "python3 -m kstate.cli testee"
#: The crash points of INST-7, all implemented: where :meth:`Instance.crash_point` is called.
CRASH_POINTS = ("after_put", "after_producer_flush", "after_consumer_commit", "after_store_commit",
                "after_restore_batch")
EXIT_FATAL, EXIT_REFUSED, EXIT_USAGE = 2, 3, 64

#: The config fields this instance reads, with their JSON types; a field without a default is required (INST-5).
CONFIG_FIELDS: dict[str, tuple[type, Any]] = {
    "instance_id": (str, None), "bootstrap": (str, None), "application_id": (str, None),
    "input_topic": (str, None), "partitions": (list, None), "store_name": (str, None),
    "store_type": (str, None), "state_dir": (str, None), "status_dir": (str, None),
    "commit_every_records": (int, 200), "commit_interval_ms": (int, 200),
    "on_unclean_shutdown": (str, "keep"), "on_refused": (str, "fail"), "manage_offsets": (bool, True),
    "restore_batch_size": (int, 1000), "store_options": (dict, {}), "processor_options": (dict, {}),
    "crash_at": (str, ""),
}


class ConfigError(Exception):
    """A config field missing or of the wrong type (INST-6)."""


class StoreRefused(Exception):
    """A store this instance will not open (UPG-1) with ``on_refused = fail``: exit 3 (INST-16)."""


class Refused(Exception):
    """The testee answered ``error`` (a refusal, TP-6); ``error`` is its error object."""

    def __init__(self, op: str, error: dict[str, Any]) -> None:
        super().__init__(f"{op}: {error.get('type', '?')}: {error.get('message', '')}")
        self.error = error


def read_config(path: str) -> dict[str, Any]:
    """The config file's known fields, defaults filled in; unknown fields are ignored (INST-5)."""
    with open(path, encoding="utf-8") as file:
        data = json.load(file)
    if not isinstance(data, dict):
        raise ConfigError("the config is not a JSON object")
    config: dict[str, Any] = {}
    for name, (kind, default) in CONFIG_FIELDS.items():
        if data.get(name) is None:  # absent, or null where the field has a default (crash_at)
            if default is None:
                raise ConfigError(f"config field {name!r}: required")
            config[name] = default
            continue
        value = data[name]
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
            raise ConfigError(f"config field {name!r}: expected {kind.__name__}, got {value!r:.80}")
        config[name] = value
    if config["store_type"] not in STORE_TYPES:
        raise ConfigError(f"config field 'store_type': {config['store_type']!r} is not one of {', '.join(STORE_TYPES)}")
    point, _, count = config["crash_at"].partition(":")
    if point and (point not in CRASH_POINTS or not (count or "1").isdigit()):
        raise ConfigError(f"config field 'crash_at': {config['crash_at']!r} is not <point>[:<n>] of {CRASH_POINTS}")
    family = STORE_TYPES[config["store_type"]][0]
    for option, value in config["processor_options"].items():
        if option not in PROCESSOR_OPTIONS[family] or not isinstance(value, int) or value < 0:
            raise ConfigError(f"processor option {option!r}: not a non-negative option of the {family} processor")
    if family == "session" and "inactivity_gap_ms" not in config["processor_options"]:
        raise ConfigError("processor option 'inactivity_gap_ms': required")
    return config


class Testee:
    """A testee process and its JSON-lines protocol: one request, one answer (TP-1, TP-2)."""

    def __init__(self, command: str) -> None:
        # Its own session: a SIGTERM sent to this instance's group does not stop the testee before the stores close;
        # killed with this process (Linux), so that a crash of the instance is a crash of its stores too.
        self.process = subprocess.Popen(shlex.split(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        start_new_session=True, preexec_fn=die_with_parent)
        self.next_id = 0
        self.call("hello", protocol=1, suite="kstate-example-testee-instance")

    def call(self, op: str, **payload: Any) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.next_id += 1
        self.process.stdin.write(json.dumps({"id": self.next_id, "op": op, "input": payload}).encode() + b"\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the testee exited during {op}")
        answer = json.loads(line)
        if "error" in answer:
            raise Refused(op, answer["error"])
        if "output" not in answer:
            raise RuntimeError(f"{op}: the testee answered {answer}")
        output: dict[str, Any] = answer["output"]
        return output

    def stop(self) -> None:
        try:
            self.call("shutdown")
        finally:
            self.process.wait(timeout=10)


class Instance:
    """The instance's main loop; see the module docstring."""

    def __init__(self, config: dict[str, Any], testee_command: str) -> None:
        self.config = config
        self.testee_command = testee_command
        self.changelog_topic = f"{config['application_id']}-{config['store_name']}-changelog"
        os.makedirs(config["status_dir"], exist_ok=True)
        base = os.path.join(config["status_dir"], config["instance_id"])
        self.status_path = base + ".status.json"
        self.events = open(base + ".events.jsonl", "a", buffering=1, encoding="utf-8")  # noqa: SIM115
        self.handles: dict[int, str] = {}
        self.input_next: dict[int, int | None] = {}
        self.changelog_end: dict[int, int | None] = {}
        self.delivery_errors: list[str] = []
        self.stopping = False
        self.commits = self.processed = self.dropped = self.crash_count = 0
        #: Per task, the windowed processors' observed stream time (not persisted: -1 again after a restart).
        self.stream_time: dict[int, int] = {}

    # --- reporting (INST-20, INST-21) ---------------------------------------------------------------------

    def event(self, kind: str, **data: Any) -> None:
        self.events.write(json.dumps({"event": kind, "instance": self.config["instance_id"], "pid": os.getpid(),
                                      "time": time.time(), **data}) + "\n")

    def write_status(self, state: str) -> None:
        status = {"instance": self.config["instance_id"], "pid": os.getpid(), "state": state,
                  "commits": self.commits, "processed": self.processed, "store_type": self.config["store_type"],
                  "input_next": {str(p): o for p, o in self.input_next.items()},
                  "changelog_end": {str(p): o for p, o in self.changelog_end.items()}}
        with open(self.status_path + ".tmp", "w", encoding="utf-8") as file:
            json.dump(status, file)
        os.replace(self.status_path + ".tmp", self.status_path)

    # --- opening and restoring (INST-10, INST-14, INST-16) ----------------------------------------------

    def open_store(self, partition: int, **extra: Any) -> dict[str, Any]:
        c = self.config
        return self.testee.call(
            "store.open", store_type=c["store_type"], backend="rocksdb", name=c["store_name"],
            state_dir=c["state_dir"], application_id=c["application_id"], task_id=f"0_{partition}",
            options=c["store_options"], **({} if c["manage_offsets"] else {"pre_4_3_reader": True}), **extra)

    def wipe_store(self, partition: int) -> None:
        c = self.config
        self.testee.call("store.wipe", name=c["store_name"], state_dir=c["state_dir"],
                         application_id=c["application_id"], task_id=f"0_{partition}")
        self.event("wiped", partition=partition)

    def open_task(self, partition: int) -> None:
        """Open the task's store; a refusal is told apart by reopening with ``ignore_invalid_state``: an open
        that then succeeds was refused for an unclean shutdown (KV-52), one still refused is a refused store (UPG-1)."""
        try:
            opened = self.open_store(partition)
        except Refused as refused:
            try:
                opened = self.open_store(partition, ignore_invalid_state=True)
            except Refused:
                self.event("refused", partition=partition, error=str(refused), column_families=[])
                if self.config["on_refused"] != "wipe":
                    raise StoreRefused(str(refused)) from refused
                self.wipe_store(partition)
                opened = self.open_store(partition)
            else:
                policy = self.config["on_unclean_shutdown"]
                self.event("unclean_shutdown", partition=partition, error=str(refused), policy=policy)
                if policy == "wipe":
                    self.testee.call("store.close", handle=opened["handle"])
                    self.wipe_store(partition)
                    opened = self.open_store(partition)
        handle = self.handles[partition] = opened["handle"]
        committed = self.testee.call("store.committed_offset", handle=handle, topic=self.changelog_topic,
                                     partition=partition)["offset"]
        self.event("opened", partition=partition, store_type=self.config["store_type"], mode=opened["mode"],
                   column_families=[], segment_modes={}, committed_changelog_offset=committed)
        records = batches = 0
        first = last = None
        for batch in self.read_changelog(partition, 0 if committed is None else committed + 1):
            self.testee.call("store.restore", handle=handle, batch_size=len(batch), records=[
                {"key": m.key().hex(), "value": None if m.value() is None else m.value().hex(),
                 "timestamp": m.timestamp()[1], "headers": headers_json(m.headers())} for m in batch])
            first = batch[0].offset() if first is None else first
            last = batch[-1].offset()
            self.crash_point("after_restore_batch")
            self.testee.call("store.commit", handle=handle, changelog_offsets=[[self.changelog_topic, partition, last]])
            records, batches = records + len(batch), batches + 1
        self.event("restored", partition=partition, records=records, batches=batches, first_offset=first,
                   last_offset=last)
        self.changelog_end[partition] = last if last is not None else committed

    def read_changelog(self, partition: int, start: int) -> Any:
        """Batches of the changelog partition from ``start`` to its end, read by fetch until partition EOF."""
        consumer = Consumer({"bootstrap.servers": self.config["bootstrap"], "group.id": f"{IMPLEMENTATION}-restore",
                             "enable.auto.commit": False, "enable.partition.eof": True, "fetch.wait.max.ms": 10})
        try:
            consumer.list_topics(self.changelog_topic, timeout=15)
            consumer.assign([TopicPartition(self.changelog_topic, partition, start if start > 0 else OFFSET_BEGINNING)])
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                batch = []
                for message in consumer.consume(num_messages=self.config["restore_batch_size"], timeout=0.1):
                    error = message.error()
                    if error is None:
                        batch.append(message)
                    elif error.code() == KafkaError._PARTITION_EOF:
                        if batch:
                            yield batch
                        return
                    elif error.fatal():
                        raise RuntimeError(f"restoring {self.changelog_topic}-{partition}: {error}")
                if batch:
                    deadline = time.monotonic() + 60
                    yield batch
            raise RuntimeError(f"restoring {self.changelog_topic}-{partition}: no progress for 60 s")
        finally:
            consumer.close()

    # --- processing (INST-11..INST-13, INST-15) ------------------------------------------------------------

    # --- the families' processors (INST-12, INST-22..INST-25) ---------------------------------------------

    def encode(self, value: bytes, timestamp: int, headers: list[list[Any]]) -> str:
        """``value`` (or an aggregate) in the store type's value layout, encoded by the testee's codecs."""
        layout = STORE_TYPES[self.config["store_type"]][1]
        if layout == "plain":
            return value.hex()
        if layout == "timestamped":
            encoded = self.testee.call("timestamped.serialize", value=value.hex(), timestamp=timestamp)
        elif layout == "timestamped_with_headers":
            encoded = self.testee.call("header_values.serialize", value=value.hex(), timestamp=timestamp,
                                       headers=headers)
        else:
            encoded = self.testee.call("header_values.serialize_aggregation", aggregation=value.hex(), headers=headers)
        return str(encoded["bytes"])

    def decode(self, stored: str) -> tuple[bytes, int | None]:
        """A stored value (hex) taken apart: the value or aggregate, and its timestamp where the layout has one."""
        layout = STORE_TYPES[self.config["store_type"]][1]
        if layout == "plain":
            return bytes.fromhex(stored), None
        if layout == "timestamped":
            result = self.testee.call("timestamped.deserialize", bytes=stored)["result"]
        elif layout == "timestamped_with_headers":
            result = self.testee.call("header_values.deserialize", bytes=stored)["deserialize"]["result"]
        else:
            result = self.testee.call("header_values.deserialize_aggregation", bytes=stored)["result"]
            return bytes.fromhex(result["aggregation"]), None
        return bytes.fromhex(result["value"]), result["timestamp"]

    def apply(self, partition: int, key: bytes, value: bytes | None, timestamp: int, headers: list[list[Any]]) -> None:
        """The family's processor applied to one record (the record context already set)."""
        handle, family = self.handles[partition], STORE_TYPES[self.config["store_type"]][0]
        if family == "key_value":  # table(): put in the type's layout; a null value deletes the key
            if value is None:
                self.testee.call("store.delete", handle=handle, key=key.hex())
            else:
                self.testee.call("store.put", handle=handle, key=key.hex(), value=self.encode(value, timestamp, headers))
        elif family == "versioned":  # table() over a versioned store: a null value is a tombstone version
            self.testee.call("versioned_store.put", handle=handle, key=key.hex(), timestamp=timestamp,
                             value=None if value is None else value.hex(), headers=headers)
        elif value is not None:  # the windowed aggregations skip null values (INST-25)
            self.stream_time[partition] = max(self.stream_time.get(partition, -1), timestamp)
            aggregate = self.aggregate_window if family == "window" else self.aggregate_session
            if not aggregate(handle, key, value, timestamp, headers, self.stream_time[partition]):
                self.dropped += 1

    def aggregate_window(self, handle: str, key: bytes, value: bytes, timestamp: int, headers: list[list[Any]],
                         stream_time: int) -> bool:
        """``KStreamWindowAggregate`` over tumbling windows (INST-23); False when the window is closed."""
        size, retention = self.config["store_options"]["window_size_ms"], self.config["store_options"]["retention_ms"]
        grace = self.config["processor_options"].get("grace_ms", retention - size)
        start = timestamp - timestamp % size
        if start + size <= stream_time - grace:
            return False
        old = self.testee.call("window_store.fetch", handle=handle, key=key.hex(), time=start)["value"]
        count, new_timestamp = 0, timestamp
        if old is not None:
            aggregate, old_timestamp = self.decode(old)
            count = int(aggregate.partition(b":")[0])
            new_timestamp = timestamp if old_timestamp is None else max(old_timestamp, timestamp)
        self.testee.call("window_store.put", handle=handle, key=key.hex(), window_start=start,
                         value=self.encode(b"%d:" % (count + 1) + value, new_timestamp, headers))
        return True

    def aggregate_session(self, handle: str, key: bytes, value: bytes, timestamp: int, headers: list[list[Any]],
                          stream_time: int) -> bool:
        """``KStreamSessionWindowAggregate`` (INST-24); False when the merged session is closed."""
        gap = self.config["processor_options"]["inactivity_gap_ms"]
        grace = self.config["processor_options"].get("grace_ms", max(self.config["store_options"]["retention_ms"] - gap, 0))
        merged = self.testee.call("session_store.find_sessions", handle=handle, key_from=key.hex(), key_to=None,
                                  earliest_end=timestamp - gap, latest_start=timestamp + gap)["entries"]
        start = end = timestamp
        count = 0
        for _, session_start, session_end, stored in merged:
            count += int(self.decode(stored)[0].partition(b":")[0])
            start, end = min(start, session_start), max(end, session_end)
        if end < stream_time - grace:
            return False
        if (start, end) != (timestamp, timestamp):
            for _, session_start, session_end, _ in merged:
                self.testee.call("session_store.remove", handle=handle, key=key.hex(), start=session_start,
                                 end=session_end)
        self.testee.call("session_store.put", handle=handle, key=key.hex(), start=start, end=end,
                         value=self.encode(b"%d:" % (count + 1) + value, timestamp, headers))
        return True

    def process(self, message: Any, producer: Producer) -> None:
        partition, handle = message.partition(), self.handles[message.partition()]
        timestamp, headers = message.timestamp()[1], headers_json(message.headers())
        self.testee.call("store.set_context", handle=handle, timestamp=timestamp, headers=headers,
                         offset=message.offset(), topic=message.topic(), partition=partition)
        self.apply(partition, message.key(), message.value(), timestamp, headers)
        for record in self.testee.call("store.changelog", handle=handle)["records"]:
            record_headers: list[tuple[str, str | bytes | None]] = [
                (k, None if v is None else bytes.fromhex(v)) for k, v in record["headers"]]
            while True:
                try:
                    producer.produce(self.changelog_topic, partition=partition, key=bytes.fromhex(record["key"]),
                                     value=None if record["value"] is None else bytes.fromhex(record["value"]),
                                     timestamp=record["timestamp"], headers=record_headers or None,
                                     on_delivery=self.on_delivery)
                    break
                except BufferError:
                    producer.poll(0.05)
        self.input_next[partition] = message.offset() + 1
        self.processed += 1
        self.crash_point("after_put")

    def on_delivery(self, error: Any, message: Any) -> None:
        if error is not None:
            self.delivery_errors.append(str(error))
            return
        end = self.changelog_end.get(message.partition())
        if end is None or message.offset() > end:
            self.changelog_end[message.partition()] = message.offset()

    def crash_point(self, point: str) -> None:
        """SIGKILL this process the n-th time ``point`` is reached, if ``crash_at`` says so (INST-7)."""
        name, _, count = self.config["crash_at"].partition(":")
        if point != name:
            return
        self.crash_count += 1
        if self.crash_count >= int(count or "1"):
            self.event("crash", point=point, count=self.crash_count)
            os.kill(os.getpid(), signal.SIGKILL)

    def commit(self, producer: Producer, consumer: Consumer) -> None:
        """Kafka's at-least-once order: changelog acknowledged, input offsets committed, then the stores (INST-15)."""
        deadline = time.monotonic() + 30
        while producer.flush(1.0) and time.monotonic() < deadline:
            pass
        if len(producer) or self.delivery_errors:
            raise RuntimeError(f"changelog not acknowledged: {self.delivery_errors[:3]}, {len(producer)} unsent")
        self.crash_point("after_producer_flush")
        offsets = [TopicPartition(self.config["input_topic"], p, o) for p, o in self.input_next.items() if o is not None]
        if offsets:
            consumer.commit(offsets=offsets, asynchronous=False)
        self.crash_point("after_consumer_commit")
        for partition, handle in self.handles.items():
            end = self.changelog_end.get(partition)
            if end is not None:
                self.testee.call("store.commit", handle=handle, changelog_offsets=[[self.changelog_topic, partition, end]])
        self.commits += 1
        self.crash_point("after_store_commit")
        self.write_status("running")

    def run(self) -> int:
        c = self.config
        signal.signal(signal.SIGTERM, self.request_stop)
        signal.signal(signal.SIGINT, self.request_stop)
        self.event("starting", store_type=c["store_type"], partitions=c["partitions"])
        self.testee = Testee(self.testee_command)
        code = 0
        try:
            try:
                self.run_tasks()
            except StoreRefused as refused:
                self.event("exit", code=EXIT_REFUSED, reason=str(refused))
                code = EXIT_REFUSED
            self.close_stores()
            self.testee.stop()
        except (Refused, RuntimeError, OSError, ValueError) as exc:
            # Fatal: the stores are not closed (nothing uncommitted is marked clean); the testee dies as in a crash.
            self.testee.process.kill()
            self.event("fatal", reason=str(exc))
            self.event("exit", code=EXIT_FATAL, reason=str(exc))
            return EXIT_FATAL
        if code:
            return code
        self.write_status("stopped")
        self.event("stopped", commits=self.commits, processed=self.processed)
        return 0

    def close_stores(self) -> None:
        for handle in self.handles.values():
            self.testee.call("store.close", handle=handle)
        self.handles.clear()

    def run_tasks(self) -> None:
        c = self.config
        for partition in c["partitions"]:
            self.open_task(partition)
        consumer = Consumer({"bootstrap.servers": c["bootstrap"], "group.id": c["application_id"],
                             "enable.auto.commit": False, "auto.offset.reset": "earliest",
                             "fetch.wait.max.ms": 10, "session.timeout.ms": 2000, "heartbeat.interval.ms": 500})
        producer = Producer({"bootstrap.servers": c["bootstrap"], "acks": "all", "enable.idempotence": True,
                             "linger.ms": 2, "message.timeout.ms": 30000})
        committed = consumer.committed([TopicPartition(c["input_topic"], p) for p in c["partitions"]], timeout=15)
        for tp in committed:
            self.input_next[tp.partition] = tp.offset if tp.offset >= 0 else None
        consumer.assign([TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_BEGINNING)
                         for tp in committed])
        self.write_status("running")
        self.event("running", input_next={str(p): o for p, o in self.input_next.items()})
        since_commit, last_commit = 0, time.monotonic()
        try:
            while not self.stopping:
                for message in consumer.consume(num_messages=500, timeout=0.05):
                    error = message.error()
                    if error is None:
                        self.process(message, producer)
                        since_commit += 1
                    elif error.fatal():
                        raise RuntimeError(str(error))
                producer.poll(0)
                if since_commit >= c["commit_every_records"] or (
                        since_commit and (time.monotonic() - last_commit) * 1000 >= c["commit_interval_ms"]):
                    self.commit(producer, consumer)
                    since_commit, last_commit = 0, time.monotonic()
            self.commit(producer, consumer)
        finally:
            consumer.close()

    def request_stop(self, _signum: int, _frame: Any) -> None:
        self.stopping = True


def die_with_parent() -> None:
    """In the testee's child process: be killed when this instance dies (Linux ``PR_SET_PDEATHSIG``)."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG


def headers_json(headers: Any) -> list[list[Any]]:
    """confluent-kafka's ``[(key, bytes | None), ...]`` as the testee protocol's ``[[key, hex | null], ...]``."""
    return [[key, None if value is None else value.hex()] for key, value in headers or ()]


def describe() -> dict[str, Any]:
    """What ``--describe`` prints (INST-2)."""
    return {"instance_protocol": 1, "implementation": IMPLEMENTATION, "version": "1",
            "store_types": list(STORE_TYPES), "crash_points": list(CRASH_POINTS), "events": list(EVENTS)}


def main(argv: list[str]) -> int:
    testee = os.environ.get("KSTATE_TESTEE", DEFAULT_TESTEE)
    if len(argv) >= 2 and argv[0] == "--testee":
        testee, argv = argv[1], argv[2:]
    if argv == ["--describe"]:
        print(json.dumps(describe()))
        return 0
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: instance.py [--testee CMD] CONFIG.json | --describe", file=sys.stderr)
        return EXIT_USAGE
    try:
        config = read_config(argv[0])
    except (ConfigError, OSError, ValueError) as exc:
        print(f"instance.py: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return Instance(config, testee).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
