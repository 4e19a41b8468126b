"""Changelog topics on a real broker: create with Kafka Streams' config, write and read records exactly.

Reading never trusts ListOffsets: it reads to the end by fetching until partition EOF (Tansu's
ListOffsets latest is wrong after multi-record batches). Every call is bounded in time; when it fails,
the broker's liveness is checked so that a dead broker is reported as such, naming provider and address.
"""

from __future__ import annotations

import itertools
import operator
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from kstate.codecs import changelog as cl
from kstate.codecs.store_types import StoreType
from kstate.errors import KStateError
from kstate.kafka.broker import Broker, BrokerUnavailable, describe

CLIENT_DEFAULTS: dict[str, Any] = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500}
#: Consumer settings that make reading to the end fast on loopback (runtime notes §1). ``read_committed`` (also
#: librdkafka's default, said here because restore depends on it): a changelog written by exactly-once
#: transactions is read without its aborted records, and its end is the last stable offset (RST-9).
FAST_FETCH: dict[str, Any] = {
    "enable.auto.commit": False, "enable.partition.eof": True, "fetch.queue.backoff.ms": 0,
    "fetch.wait.max.ms": 10, "queued.min.messages": 1_000_000, "auto.offset.reset": "earliest",
    "isolation.level": "read_committed",
}
#: How often a waiting reader or writer checks that the broker is still alive.
LIVENESS_INTERVAL_S = 1.0
#: librdkafka errors that mean "no broker to talk to".
_DEAD_BROKER_ERRORS = ("_TRANSPORT", "_ALL_BROKERS_DOWN", "_MSG_TIMED_OUT", "_TIMED_OUT")

RawRecord = tuple[bytes | None, bytes | None, int, list[tuple[str, bytes | None]]]


class ChangelogIOError(KStateError):
    """A changelog topic could not be created, written or read; names the broker and topic."""


def _failure(broker: Broker, what: str, detail: object) -> KStateError:
    """A dead broker is reported as :class:`BrokerUnavailable`; anything else as :class:`ChangelogIOError`."""
    try:
        broker.check_alive()
    except BrokerUnavailable as dead:
        return BrokerUnavailable(f"{what}: {dead}")
    return ChangelogIOError(f"{describe(broker)}: {what}: {detail}")


def create_topic(broker: Broker, topic: str, partitions: int = 1, config: Mapping[str, str] | None = None,
                 timeout: float = 15.0) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1,
                                            config=dict(config or {}))], request_timeout=timeout)
    try:
        futures[topic].result(timeout)
    except Exception as exc:
        raise _failure(broker, f"cannot create {topic}", exc) from exc
    # A KRaft controller acknowledges the creation before the broker has applied the new metadata: a
    # DescribeConfigs or a produce sent at once can still get UNKNOWN_TOPIC_OR_PARTITION. Wait (bounded) until
    # the broker's metadata has every partition with a leader.
    deadline = time.monotonic() + timeout
    while True:
        found = admin.list_topics(topic, timeout=timeout).topics.get(topic)
        if (found is not None and found.error is None and len(found.partitions) == partitions
                and all(p.leader >= 0 for p in found.partitions.values())):
            return
        if time.monotonic() >= deadline:
            raise _failure(broker, f"{topic} created but not in the broker's metadata within {timeout:.0f} s", found)
        time.sleep(0.05)


def create_changelog_topic(broker: Broker, application_id: str, store_name: str, store_type: StoreType,
                           partitions: int, *, retention_ms: int | None = None,
                           history_retention_ms: int | None = None, timeout: float = 15.0) -> str:
    """Create ``<applicationId>-<store>-changelog`` with the configuration Kafka Streams gives ``store_type``
    (CL-14 to CL-17); returns the topic name."""
    topic = cl.changelog_topic_name(application_id, store_name)
    config = cl.changelog_topic_config(store_type, retention_ms=retention_ms, history_retention_ms=history_retention_ms)
    create_topic(broker, topic, partitions, config, timeout)
    return topic


def describe_topic_config(broker: Broker, topic: str, timeout: float = 15.0) -> dict[str, str]:
    """The topic's configuration entries as the broker reports them (Tansu reports only those set)."""
    from confluent_kafka.admin import AdminClient, ConfigResource  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    resource = ConfigResource("topic", topic)
    try:
        entries = admin.describe_configs([resource], request_timeout=timeout)[resource].result(timeout)
    except Exception as exc:
        raise _failure(broker, f"cannot describe {topic}", exc) from exc
    return {name: entry.value for name, entry in entries.items() if entry.value is not None}


def produce(broker: Broker, topic: str, records: Iterable[RawRecord], partition: int = 0,
            timeout: float = 30.0) -> int:
    """Write ``(key, value, timestamp, headers)`` records in order; returns how many were acknowledged."""
    from confluent_kafka import Producer

    errors: list[str] = []
    acked = 0

    def on_delivery(err: Any, _msg: Any) -> None:
        nonlocal acked
        if err is not None:
            errors.append(str(err))
        else:
            acked += 1

    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "message.timeout.ms": int(timeout * 1000)})
    for key, value, timestamp, headers in records:
        while True:
            try:
                producer.produce(topic, key=key, value=value, timestamp=timestamp, headers=list(headers) or None,
                                 partition=partition, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    remaining = flush_bounded(producer, broker, timeout)
    if errors or remaining:
        raise _failure(broker, f"{topic}: {remaining} unacknowledged", f"errors {errors[:3]}")
    return acked


def flush_bounded(producer: Any, broker: Broker, timeout: float) -> int:
    """``producer.flush`` in slices, checking the broker's liveness between them; returns what is left unsent."""
    deadline = time.monotonic() + timeout
    remaining = int(producer.flush(0))
    while remaining and time.monotonic() < deadline:
        remaining = int(producer.flush(min(LIVENESS_INTERVAL_S, max(deadline - time.monotonic(), 0.0))))
        if remaining:
            broker.check_alive()
    return remaining


def restore_rows(batch: list[Any], with_headers: bool) -> Iterator[cl.RestoreRow]:
    """``(key, value, timestamp, headers)`` of each confluent-kafka message in ``batch``, for ``restore_entries``.

    Headers are read only ``with_headers``: the client builds a message's header list on first access. The
    rows come from C iterators (no per-message bytecode), which matters at restore's rates.
    """
    if not batch:
        return iter(())
    message = type(batch[0])
    headers: Iterable[Any] = map(message.headers, batch) if with_headers else itertools.repeat(None)
    return zip(map(message.key, batch), map(message.value, batch),
               map(_SECOND, map(message.timestamp, batch)), headers, strict=False)  # repeat() is endless


_SECOND = operator.itemgetter(1)


def _await_partition(consumer: Any, topic: str, partition: int, timeout: float,
                     liveness: Callable[[], None] | None, what: str) -> None:
    """Wait until the broker's metadata knows ``topic`` and its ``partition``; if it never does within
    ``timeout`` (a topic just created elsewhere may lag), fail naming what is missing."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + timeout
    while True:
        try:
            metadata = consumer.list_topics(topic, timeout=max(0.1, min(deadline - time.monotonic(), 10.0)))
        except KafkaException as exc:
            if liveness is not None:
                liveness()
            raise ChangelogIOError(f"{what}: no metadata for {topic}: {exc}") from exc
        found = metadata.topics.get(topic)
        if found is not None and found.error is None and partition in found.partitions:
            return
        if time.monotonic() >= deadline:
            if liveness is not None:
                liveness()
            if found is None or found.error is not None or not found.partitions:
                raise ChangelogIOError(f"{what}: topic {topic} does not exist"
                                       + (f" ({found.error.str()})" if found is not None and found.error else ""))
            raise ChangelogIOError(f"{what}: topic {topic} has no partition {partition} "
                                   f"(it has {len(found.partitions)})")
        time.sleep(0.2)


def iter_batches(bootstrap: str, topic: str, partition: int, start_offset: int = 0, *, batch_size: int = 10_000,
                 timeout: float = 60.0, liveness: Callable[[], None] | None = None,
                 what: str = "", config: Mapping[str, Any] | None = None) -> Iterator[list[Any]]:
    """Batches of confluent-kafka messages from ``start_offset`` to the end of the partition, read by fetch
    until partition EOF (never ListOffsets). ``liveness`` is called about once a second while waiting and
    raises if the broker died; no progress for ``timeout`` seconds is an error naming ``what``. ``config``
    (librdkafka properties: security, SASL, TLS, ...) overrides the defaults."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    what = what or f"broker at {bootstrap}"
    # Reading to the end needs partition EOF events, whatever the caller's configuration says.
    consumer = Consumer({**CLIENT_DEFAULTS, **FAST_FETCH, "group.id": f"kstate-read-{topic}", **(config or {}),
                         "enable.partition.eof": True, "bootstrap.servers": bootstrap})
    try:
        # Metadata first: assigned before the partition's leader is known, librdkafka waits 500 ms before it
        # asks where BEGINNING is (its offset-query retry timer), a fixed delay on every read.
        _await_partition(consumer, topic, partition, timeout, liveness, what)
        consumer.assign([TopicPartition(topic, partition, start_offset if start_offset > 0 else OFFSET_BEGINNING)])
        last_progress = last_check = time.monotonic()
        while True:
            messages = consumer.consume(num_messages=batch_size, timeout=0.1)
            batch: list[Any] = []
            for message in messages:
                error = message.error()
                if error is None:
                    batch.append(message)
                    continue
                if error.code() == KafkaError._PARTITION_EOF:
                    if batch:
                        yield batch
                    return
                if liveness is not None:
                    liveness()
                if error.fatal() or error.name() not in _DEAD_BROKER_ERRORS:
                    raise ChangelogIOError(f"{what}: reading {topic}-{partition}: {error}")
            now = time.monotonic()
            if batch:
                last_progress = now
                yield batch
            elif now - last_progress > timeout:
                if liveness is not None:
                    liveness()
                raise ChangelogIOError(f"{what}: reading {topic}-{partition} made no progress for {timeout:.0f} s")
            if liveness is not None and now - last_check > LIVENESS_INTERVAL_S:
                last_check = now
                liveness()
    finally:
        consumer.close()


def consume_all(broker: Broker, topic: str, partition: int = 0, start_offset: int = 0,
                timeout: float = 30.0) -> list[dict[str, Any]]:
    """Every record from ``start_offset`` to the end of the partition, read by fetch until EOF."""
    records: list[dict[str, Any]] = []
    for batch in iter_batches(broker.bootstrap, topic, partition, start_offset, timeout=timeout,
                              liveness=broker.check_alive, what=describe(broker)):
        for message in batch:
            _, timestamp = message.timestamp()
            records.append({"offset": message.offset(), "key": message.key(), "value": message.value(),
                            "timestamp": timestamp, "headers": list(message.headers() or [])})
    return records
