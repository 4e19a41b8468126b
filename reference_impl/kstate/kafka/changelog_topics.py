"""Changelog topics on a real broker: create with Kafka Streams' config, write and read records exactly.

Reading never trusts ListOffsets: it reads to the end by fetching until partition EOF (Tansu's
ListOffsets latest is wrong after multi-record batches).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from kstate.errors import KStateError
from kstate.kafka.broker import Broker

CLIENT_DEFAULTS: dict[str, Any] = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500}


class ChangelogIOError(KStateError):
    """A changelog topic could not be created, written or read; names the broker and topic."""


def create_topic(broker: Broker, topic: str, partitions: int = 1, config: Mapping[str, str] | None = None,
                 timeout: float = 15.0) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1,
                                            config=dict(config or {}))], request_timeout=timeout)
    try:
        futures[topic].result(timeout)
    except Exception as exc:
        raise ChangelogIOError(f"{broker.provider} at {broker.bootstrap}: cannot create {topic}: {exc}") from exc


def produce(broker: Broker, topic: str, records: Iterable[tuple[bytes | None, bytes | None, int, list[tuple[str, bytes | None]]]],
            partition: int = 0, timeout: float = 30.0) -> int:
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
                         "linger.ms": 5})
    for key, value, timestamp, headers in records:
        producer.produce(topic, key=key, value=value, timestamp=timestamp, headers=list(headers) or None,
                         partition=partition, on_delivery=on_delivery)
        producer.poll(0)
    remaining = producer.flush(timeout)
    if errors or remaining:
        raise ChangelogIOError(f"{broker.provider} at {broker.bootstrap}: {topic}: {remaining} unacknowledged, "
                               f"errors {errors[:3]}")
    return acked


def consume_all(broker: Broker, topic: str, partition: int = 0, start_offset: int = 0,
                timeout: float = 30.0) -> list[dict[str, Any]]:
    """Every record from ``start_offset`` to the end of the partition, read by fetch until EOF."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer({**CLIENT_DEFAULTS, "bootstrap.servers": broker.bootstrap, "group.id": f"kstate-read-{topic}",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "fetch.queue.backoff.ms": 0, "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(topic, partition, start_offset if start_offset > 0 else OFFSET_BEGINNING)])
        records: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for message in consumer.consume(num_messages=10000, timeout=0.1):
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        return records
                    raise ChangelogIOError(f"{broker.provider} at {broker.bootstrap}: reading {topic}: {error}")
                _, timestamp = message.timestamp()
                records.append({"offset": message.offset(), "key": message.key(), "value": message.value(),
                                "timestamp": timestamp, "headers": list(message.headers() or [])})
        raise ChangelogIOError(f"{broker.provider} at {broker.bootstrap}: reading {topic} did not reach the end "
                               f"within {timeout:.0f} s")
    finally:
        consumer.close()
