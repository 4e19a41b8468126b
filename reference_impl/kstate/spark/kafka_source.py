"""A pyspark Python Data Source reading Kafka topics with confluent-kafka: ``spark.read.format("kstate-kafka")``.

One Spark partition per Kafka partition, each read from its start (``offsets``) to the end of the partition by
fetching until partition EOF, never by ListOffsets (Tansu's ListOffsets latest is wrong); with ``splits`` N > 1,
each Kafka partition is cut into N offset ranges read by N Spark tasks (its end is the high watermark of a
first fetch), so that a few Kafka partitions can keep many cores busy. Each task yields one Arrow record batch
per fetched batch, built column by column from the messages (no per-row tuples). Options: ``bootstrap``
(required), ``topic`` (required; comma-separated for several), ``partitions`` (comma-separated subset),
``offsets`` (``p:start,...``), ``ends`` (``p:end,...``: read up to that offset, exclusive, not to the end),
``splits`` (ranges per partition, default 1), ``timeout`` (seconds without progress before failing, default 60);
``kafka.<property>`` passes a librdkafka property (security, SASL, TLS, ...) to every client the source creates. With ``latest_per_key=true`` each task keeps only the record with the
highest offset per key of its range (RST-1: the latest record by offset wins within a changelog partition), a
tombstone too, and adds a ``records`` column counting that key's records in the range (a map-side combine: what
is counted stays exact, the sum of ``records``). With ``header_bytes=true`` a ``header_bytes`` column holds each
record's headers serialized as header-aware stores embed them (HV-1, HV-2), encoded by the codec where the
headers are read.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import operator
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from kstate.errors import InvalidArgumentError

#: Options with this prefix are librdkafka properties for the source's clients (``kafka.security.protocol``).
CLIENT_OPTION_PREFIX = "kafka."

SCHEMA = ("topic string, partition int, offset long, timestamp long, timestampType int, key binary, value binary, "
          "headers array<struct<key:string,value:binary>>")


#: The column ``latest_per_key`` adds: how many records of the range had the row's key (the row is their latest).
COUNT_COLUMN = "records"
COUNTED_SCHEMA = f"{SCHEMA}, {COUNT_COLUMN} long"
#: The column ``header_bytes`` adds: the record's header bytes (HV-1).
HEADER_BYTES_COLUMN = "header_bytes"


def source_schema(counted: bool = False, header_bytes: bool = False) -> str:
    """The source's columns: :data:`SCHEMA`, then ``header_bytes`` and ``records`` where asked for."""
    return (SCHEMA + (f", {HEADER_BYTES_COLUMN} binary" if header_bytes else "")
            + (f", {COUNT_COLUMN} long" if counted else ""))

#: Rows per Arrow batch a reduced range is yielded in.
REDUCED_BATCH_ROWS = 10_000
#: Rows a reducing task holds before it reduces them (to one row per key seen so far).
COMPACT_ROWS = 1_000_000

#: ``end`` of a range that reads to the end of the partition (partition EOF).
TO_THE_END = -1


class KafkaInputPartition(InputPartition):  # type: ignore[misc, unused-ignore]  # pyspark may be absent where mypy runs
    """One Kafka partition, or one offset range of it: read from ``start`` to ``end`` (exclusive) or its end."""

    def __init__(self, topic: str, partition: int, start: int, end: int = TO_THE_END) -> None:
        super().__init__((topic, partition, start, end))
        self.topic = topic
        self.partition = partition
        self.start = start
        self.end = end


def offset_ranges(start: int, end: int, splits: int) -> list[tuple[int, int]]:
    """``[start, end)`` cut into at most ``splits`` contiguous ranges of near-equal size; the last one reads to
    the end of the partition (records written since ``end`` was measured are read too)."""
    count = max(end - start, 0)
    pieces = max(1, min(splits, count))
    bounds = [start + count * i // pieces for i in range(pieces)]
    return [(low, high) for low, high in zip(bounds, [*bounds[1:], TO_THE_END], strict=True)]


def high_watermark(bootstrap: str, topic: str, partition: int, config: Mapping[str, Any],
                   timeout: float = 15.0) -> int:
    """The partition's end offset as the high watermark of a fetch from its beginning (never ListOffsets, which
    Tansu answers wrongly); 0 for an empty partition. The fetch is kept to about one record."""
    import time

    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    from kstate.kafka.changelog_topics import CLIENT_DEFAULTS, FAST_FETCH, ChangelogIOError

    consumer = Consumer({**CLIENT_DEFAULTS, **FAST_FETCH, "group.id": f"kstate-probe-{topic}", **config,
                         "enable.partition.eof": True, "queued.min.messages": 1,
                         "max.partition.fetch.bytes": 1024, "bootstrap.servers": bootstrap})
    try:
        consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = consumer.poll(0.1)
            if message is None:
                continue
            error = message.error()
            if error is not None and error.code() != KafkaError._PARTITION_EOF:
                raise ChangelogIOError(f"broker at {bootstrap}: probing the end of {topic}-{partition}: {error}")
            _low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), cached=True)
            return max(int(high), 0)
        raise ChangelogIOError(f"broker at {bootstrap}: no fetch answer for {topic}-{partition} in {timeout:.0f} s")
    finally:
        consumer.close()


class KafkaTopicReader(DataSourceReader):  # type: ignore[misc, unused-ignore]  # pyspark may be absent where mypy runs
    def __init__(self, options: dict[str, str]) -> None:
        try:
            self.bootstrap = options["bootstrap"]
            self.topics = [t for t in options["topic"].split(",") if t]
        except KeyError as exc:
            raise ValueError(f"the kstate-kafka source needs the option {exc.args[0]!r}") from None
        wanted = options.get("partitions")
        self.wanted = None if not wanted else {int(p) for p in wanted.split(",")}
        self.starts = _offsets_option(options, "offsets")
        self.ends = _offsets_option(options, "ends")
        self.splits = int(options.get("splits", "1"))
        if self.splits < 1:
            raise ValueError(f"the kstate-kafka option splits must be at least 1, not {self.splits}")
        self.timeout = float(options.get("timeout", "60"))
        self.latest_per_key = latest_per_key_option(options)
        self.header_bytes = boolean_option(options, "header_bytes")
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
                if self.wanted is not None and partition not in self.wanted:
                    continue
                start = self.starts.get(partition, 0)
                end = self.ends.get(partition, TO_THE_END)
                if self.splits == 1:
                    out.append(KafkaInputPartition(topic, partition, start, end))
                    continue
                last = end if end != TO_THE_END else high_watermark(self.bootstrap, topic, partition,
                                                                    self.client_config, self.timeout)
                ranges = offset_ranges(start, last, self.splits)
                if end != TO_THE_END:
                    ranges[-1] = (ranges[-1][0], end)
                out.extend(KafkaInputPartition(topic, partition, low, high) for low, high in ranges)
        return out

    def read(self, partition: InputPartition) -> Iterator[Any]:
        from kstate.kafka.changelog_topics import iter_batches

        assert isinstance(partition, KafkaInputPartition)

        topic, number = partition.topic, partition.partition
        batches = range_batches(iter_batches(self.bootstrap, topic, number, partition.start, timeout=self.timeout,
                                             what=f"spark source, broker at {self.bootstrap}",
                                             config=self.client_config), partition.end)
        with collector_paused():
            if self.latest_per_key:
                yield from latest_per_key_batches(topic, number, batches, header_bytes=self.header_bytes)
                return
            for batch in batches:
                yield arrow_batch(topic, number, batch, header_bytes=self.header_bytes)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a range is read: the reader makes millions of short-lived
    objects without cycles (messages, timestamp tuples, column lists), whose collection passes cost about as much
    as the reading itself; on again after (it was on)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _offsets_option(options: Mapping[str, str], name: str) -> dict[int, int]:
    """An option of ``partition:offset`` pairs, comma-separated; a malformed one is refused by name."""
    try:
        return {int(p): int(o) for p, o in (item.split(":") for item in options.get(name, "").split(",") if item)}
    except ValueError:
        raise InvalidArgumentError(f"the kstate-kafka option {name}",
                                   f"must be partition:offset pairs, not {options[name]!r}") from None


def boolean_option(options: Mapping[str, str], name: str) -> bool:
    """A boolean option: ``true`` or ``false`` (default), anything else refused by name."""
    setting = options.get(name, "false").strip().lower()
    if setting not in ("true", "false"):
        raise InvalidArgumentError(f"the kstate-kafka option {name}", f"must be true or false, not {setting!r}")
    return setting == "true"


def latest_per_key_option(options: Mapping[str, str]) -> bool:
    """The ``latest_per_key`` option (:func:`boolean_option`)."""
    return boolean_option(options, "latest_per_key")


def range_batches(batches: Iterable[list[Any]], end: int) -> Iterator[list[Any]]:
    """The fetched batches of messages cut at ``end`` (exclusive; :data:`TO_THE_END` reads them all)."""
    for batch in batches:
        if end != TO_THE_END and batch[-1].offset() >= end:
            batch = [m for m in batch if m.offset() < end]
            if batch:
                yield batch
            return
        yield batch


def latest_per_key_batches(topic: str, partition: int, batches: Iterable[list[Any]],
                           rows_per_batch: int = REDUCED_BATCH_ROWS, compact_rows: int = COMPACT_ROWS,
                           header_bytes: bool = False) -> Iterator[Any]:
    """The map-side combine of one offset range (RST-1): per key, the message with the highest offset (the last
    one read: a range is read in offset order), a tombstone too, with the ``records`` column counting the key's
    messages; Arrow batches of ``arrow_schema(True, header_bytes)``. Each fetched batch becomes Arrow at once; the
    rows held are reduced by Arrow's hash aggregation whenever they pass ``compact_rows``, so memory follows the
    distinct keys."""
    held: list[Any] = []
    held_rows = 0
    for batch in batches:
        held.append(arrow_batch(topic, partition, batch, [1] * len(batch), header_bytes))
        held_rows += len(batch)
        if held_rows >= compact_rows:
            held = _latest_per_key(held).to_batches()
            held_rows = sum(b.num_rows for b in held)
    if held:
        yield from _latest_per_key(held).to_batches(max_chunksize=rows_per_batch)


def _latest_per_key(batches: list[Any]) -> Any:
    """One table of the rows of ``batches`` (in offset order) that are the last of their key, their ``records``
    summed: the hash aggregation finds each key's last row number, ``take`` keeps those rows."""
    import pyarrow as pa

    table = pa.Table.from_batches(batches)
    numbered = table.select(["key", COUNT_COLUMN]).append_column("row", pa.array(range(table.num_rows), pa.int64()))
    last = numbered.group_by("key", use_threads=False).aggregate([("row", "max"), (COUNT_COLUMN, "sum")])
    latest = table.take(last.column("row_max"))
    return latest.set_column(latest.schema.get_field_index(COUNT_COLUMN), COUNT_COLUMN,
                             last.column(f"{COUNT_COLUMN}_sum")).combine_chunks()


_FIRST = operator.itemgetter(0)
_SECOND = operator.itemgetter(1)


@functools.cache
def arrow_schema(counted: bool = False, header_bytes: bool = False) -> Any:
    """The Arrow schema of :func:`source_schema`, the columns of every batch the source yields."""
    import pyarrow as pa

    header = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
    fields = [("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()), ("timestamp", pa.int64()),
              ("timestampType", pa.int32()), ("key", pa.binary()), ("value", pa.binary()),
              ("headers", pa.list_(header))]
    if header_bytes:
        fields.append((HEADER_BYTES_COLUMN, pa.binary()))
    return pa.schema([*fields, (COUNT_COLUMN, pa.int64())] if counted else fields)


def arrow_batch(topic: str, partition: int, messages: list[Any], records: list[int] | None = None,
                header_bytes: bool = False) -> Any:
    """One ``pyarrow.RecordBatch`` of :func:`arrow_schema` from confluent-kafka messages, column by column: the
    per-message accessors are mapped in C, headers are flattened into one key and one value column with offsets
    (a message without headers has an empty list, as before); ``records`` adds the ``records`` column,
    ``header_bytes`` the ``header_bytes`` column (HV-1)."""
    import pyarrow as pa

    schema = arrow_schema(records is not None, header_bytes)
    message = type(messages[0])
    count = len(messages)
    stamps = list(map(message.timestamp, messages))
    header_lists = list(map(message.headers, messages))
    lengths = [len(h) if h else 0 for h in header_lists]
    flat = [pair for h in header_lists if h for pair in h]
    offsets = [0]
    total = 0
    for length in lengths:
        total += length
        offsets.append(total)
    header_type = schema.field("headers").type
    headers = pa.ListArray.from_arrays(
        pa.array(offsets, pa.int32()),
        pa.StructArray.from_arrays([pa.array(list(map(_FIRST, flat)), pa.string()),
                                    pa.array(list(map(_SECOND, flat)), pa.binary())],
                                   fields=list(header_type.value_type)),
        type=header_type)
    columns = [
        pa.array([topic] * count, pa.string()), pa.array([partition] * count, pa.int32()),
        pa.array(list(map(message.offset, messages)), pa.int64()), pa.array(list(map(_SECOND, stamps)), pa.int64()),
        pa.array(list(map(_FIRST, stamps)), pa.int32()), pa.array(list(map(message.key, messages)), pa.binary()),
        pa.array(list(map(message.value, messages)), pa.binary()), headers]
    if header_bytes:
        from kstate.codecs.header_values import encode_headers

        columns.append(pa.array([encode_headers(h) if h else b"" for h in header_lists], pa.binary()))
    if records is not None:
        columns.append(pa.array(records, pa.int64()))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


class KafkaTopicDataSource(DataSource):  # type: ignore[misc, unused-ignore]  # pyspark may be absent where mypy runs
    """``spark.read.format("kstate-kafka").option("bootstrap", ...).option("topic", ...).load()``."""

    @classmethod
    def name(cls) -> str:
        return "kstate-kafka"

    def schema(self) -> str:
        return source_schema(latest_per_key_option(self.options), boolean_option(self.options, "header_bytes"))

    def reader(self, schema: Any) -> KafkaTopicReader:
        return KafkaTopicReader(dict(self.options))


def read_topic(spark: Any, bootstrap: str, topic: str, **options: str) -> Any:
    """The topic as a DataFrame with columns topic, partition, offset, timestamp, timestampType, key, value, headers
    (and ``header_bytes`` with ``header_bytes="true"``, ``records`` with ``latest_per_key="true"``)."""
    reader = spark.read.format("kstate-kafka").option("bootstrap", bootstrap).option("topic", topic)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()
