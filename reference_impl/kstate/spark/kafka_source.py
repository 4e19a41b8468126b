"""A pyspark Python Data Source reading Kafka topics with confluent-kafka: ``spark.read.format("kstate-kafka")``.

One Spark partition per Kafka partition (or per ``start``-offset range given as ``offsets``); each reads
from its start to the end of the partition by fetching until partition EOF, never by ListOffsets (Tansu's
ListOffsets latest is wrong). Options: ``bootstrap`` (required), ``topic`` (required; comma-separated for
several), ``partitions`` (comma-separated subset), ``offsets`` (``p:start,...``), ``timeout`` (seconds
without progress before failing, default 60); ``kafka.<property>`` passes a librdkafka property (security,
SASL, TLS, ...) to every client the source creates.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

#: Options with this prefix are librdkafka properties for the source's clients (``kafka.security.protocol``).
CLIENT_OPTION_PREFIX = "kafka."

SCHEMA = ("topic string, partition int, offset long, timestamp long, timestampType int, key binary, value binary, "
          "headers array<struct<key:string,value:binary>>")


class KafkaInputPartition(InputPartition):  # type: ignore[misc, unused-ignore]  # pyspark may be absent where mypy runs
    """One Kafka partition, read from ``start`` to its end."""

    def __init__(self, topic: str, partition: int, start: int) -> None:
        super().__init__((topic, partition, start))
        self.topic = topic
        self.partition = partition
        self.start = start


class KafkaTopicReader(DataSourceReader):  # type: ignore[misc, unused-ignore]  # pyspark may be absent where mypy runs
    def __init__(self, options: dict[str, str]) -> None:
        try:
            self.bootstrap = options["bootstrap"]
            self.topics = [t for t in options["topic"].split(",") if t]
        except KeyError as exc:
            raise ValueError(f"the kstate-kafka source needs the option {exc.args[0]!r}") from None
        wanted = options.get("partitions")
        self.wanted = None if not wanted else {int(p) for p in wanted.split(",")}
        self.starts = {int(p): int(o) for p, o in (item.split(":") for item in options.get("offsets", "").split(",") if item)}
        self.timeout = float(options.get("timeout", "60"))
        self.client_config = {k[len(CLIENT_OPTION_PREFIX):]: v for k, v in options.items()
                              if k.startswith(CLIENT_OPTION_PREFIX)}

    def partitions(self) -> list[KafkaInputPartition]:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({**self.client_config, "bootstrap.servers": self.bootstrap})
        metadata = admin.list_topics(timeout=15)
        out = []
        for topic in self.topics:
            described = metadata.topics.get(topic)
            if described is None or described.error is not None:
                raise ValueError(f"topic {topic!r} not found at {self.bootstrap}")
            for partition in sorted(described.partitions):
                if self.wanted is None or partition in self.wanted:
                    out.append(KafkaInputPartition(topic, partition, self.starts.get(partition, 0)))
        return out

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        from kstate.kafka.changelog_topics import iter_batches

        assert isinstance(partition, KafkaInputPartition)

        topic, number = partition.topic, partition.partition
        for batch in iter_batches(self.bootstrap, topic, number, partition.start, timeout=self.timeout,
                                  what=f"spark source, broker at {self.bootstrap}", config=self.client_config):
            for message in batch:
                timestamp_type, timestamp = message.timestamp()
                headers = message.headers()
                yield (topic, number, message.offset(), timestamp, timestamp_type, message.key(), message.value(),
                       [(k, v) for k, v in headers] if headers else [])


class KafkaTopicDataSource(DataSource):  # type: ignore[misc, unused-ignore]  # pyspark may be absent where mypy runs
    """``spark.read.format("kstate-kafka").option("bootstrap", ...).option("topic", ...).load()``."""

    @classmethod
    def name(cls) -> str:
        return "kstate-kafka"

    def schema(self) -> str:
        return SCHEMA

    def reader(self, schema: Any) -> KafkaTopicReader:
        return KafkaTopicReader(dict(self.options))


def read_topic(spark: Any, bootstrap: str, topic: str, **options: str) -> Any:
    """The topic as a DataFrame with columns topic, partition, offset, timestamp, timestampType, key, value, headers."""
    reader = spark.read.format("kstate-kafka").option("bootstrap", bootstrap).option("topic", topic)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()
