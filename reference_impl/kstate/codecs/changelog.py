"""Changelog records per store type and the restore conversions back (spec/changelog.md, CL-*).

Pure functions: given what a bytes store was asked to write and the current record context, the
changelog record Kafka Streams sends (key, value, timestamp, headers); given a changelog record, the
value a store writes on restore. Also the changelog topic's name and configuration.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from kstate.codecs import key_schemas, window_keys
from kstate.codecs.header_values import (
    HeaderInput,
    decode_aggregation_with_headers,
    decode_headers,
    raw_headers_of,
    raw_rows_to_headers_values,
    raw_value_of,
    timestamp_of_headers_value,
)
from kstate.codecs.position import Position, PositionInput, decode_position, encode_position, merge_positions
from kstate.codecs.primitives import INT64_MAX, INT64_MIN, bytes_of
from kstate.codecs.record_headers import Header
from kstate.codecs.store_types import (
    AGGREGATION_HEADERS_LOGGED,
    HEADERS_LOGGED,
    KV_TYPES,
    PLAIN_LOGGED,
    STORE_TYPES,
    TIMESTAMPED_LOGGED,
    VALUE_ENCODERS,
    VERSIONED_TYPES,
    Family,
    RestoreConversion,
    Source,
    StoreType,
    ValueFormat,
    decode_stored_value,
    types_where,
)
from kstate.codecs.timestamped import (
    raw_rows_to_timestamped_values,
    raw_value,
    timestamp_of,
)
from kstate.errors import DecodeError, EncodeError

FORMAT = "changelog-record"
TOPIC_FORMAT = "changelog-topic"

#: ``ChangelogRecordDeserializationHelper``: the consistency headers' keys and the v0 version value (CL-12).
VERSION_HEADER = "v"
POSITION_HEADER = "c"
VERSION_0 = b"\x00"
#: ``windowstore.changelog.additional.retention.ms`` default, and the versioned store's fixed lag (CL-16, CL-17).
DEFAULT_ADDITIONAL_RETENTION_MS = 86_400_000
VERSIONED_ADDITIONAL_COMPACTION_LAG_MS = 86_400_000
CHANGELOG_SUFFIX = "-changelog"
MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")


#: The record's fields per changelog rule, and the restore conversions, from the table of store types (CL-1).
_PLAIN_LOGGED = types_where(lambda i: i.changelog == PLAIN_LOGGED)
_TIMESTAMPED_LOGGED = types_where(lambda i: i.changelog == TIMESTAMPED_LOGGED)
_HEADERS_LOGGED = types_where(lambda i: i.changelog == HEADERS_LOGGED)
_AGGREGATION_HEADERS_LOGGED = types_where(lambda i: i.changelog == AGGREGATION_HEADERS_LOGGED)
#: Store types whose restore converter is the identity (CL-9).
_IDENTITY = types_where(lambda i: i.restore is RestoreConversion.IDENTITY)
_TIMESTAMPED = types_where(lambda i: i.restore is RestoreConversion.TIMESTAMPED)
_TIMESTAMPED_WITH_HEADERS = types_where(lambda i: i.restore is RestoreConversion.TIMESTAMPED_WITH_HEADERS)
_AGGREGATION_WITH_HEADERS = types_where(lambda i: i.restore is RestoreConversion.AGGREGATION_WITH_HEADERS)
#: Store types whose context headers go with a tombstone (CL-8).
_TOMBSTONE_HEADERS = types_where(lambda i: i.changelog is not None and i.changelog.headers is Source.VALUE)


@dataclass(frozen=True)
class RecordContext:
    """The record being processed when a store writes: its timestamp and headers."""

    timestamp: int
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(frozen=True)
class ChangelogRecord:
    """One record sent to the changelog topic; no headers is the empty tuple (CL-2)."""

    key: bytes
    value: bytes | None
    timestamp: int
    headers: tuple[tuple[str, bytes | None], ...] = field(default=())


def _headers(headers: HeaderInput) -> tuple[tuple[str, bytes | None], ...]:
    if headers is None:
        return ()
    out: list[tuple[str, bytes | None]] = []
    for item in headers:
        key, value = (item.key, item.value) if isinstance(item, Header) else item
        out.append((key, None if value is None else bytes_of(FORMAT, "header value", value)))
    return tuple(out)


def consistency_headers(position: PositionInput) -> tuple[tuple[str, bytes | None], ...]:
    """The IQ consistency headers, in order: ``v`` = ``00`` then ``c`` = padded ``PositionSerde`` bytes (CL-12)."""
    return ((VERSION_HEADER, VERSION_0), (POSITION_HEADER, encode_position(position)))


def _finish(key: bytes, value: bytes | None, timestamp: int, headers: HeaderInput, position: PositionInput | None) -> ChangelogRecord:
    if not isinstance(timestamp, int) or not INT64_MIN <= timestamp <= INT64_MAX:
        raise EncodeError(FORMAT, f"timestamp {timestamp!r} is not a Java long")
    if timestamp < 0:
        # ProducerRecord's constructor throws IllegalArgumentException("Invalid timestamp").
        raise EncodeError(FORMAT, f"Invalid timestamp: {timestamp}. Timestamp should always be non-negative or null.")
    record_headers = _headers(headers)
    if position is not None:
        record_headers += consistency_headers(position)
    # bytes_of, never bytes(): an int would allocate that many bytes, a str has no encoding (KV-26).
    return ChangelogRecord(bytes_of(FORMAT, "key", key), None if value is None else bytes_of(FORMAT, "value", value),
                           timestamp, record_headers)


def _logged_value(store_type: StoreType, stored: bytes | None, context: RecordContext) -> tuple[bytes | None, int, HeaderInput]:
    """What a change-logging layer sends for one stored value: raw value, timestamp, headers (CL-3 to CL-8)."""
    stored = None if stored is None else bytes_of(FORMAT, "value", stored)
    if store_type in _PLAIN_LOGGED:
        return stored, context.timestamp, None
    if store_type in _TIMESTAMPED_LOGGED:
        if stored is None:
            return None, context.timestamp, None
        return raw_value(stored), timestamp_of(stored), None
    if store_type in _HEADERS_LOGGED:
        if stored is None:
            return None, context.timestamp, context.headers
        raw_headers = raw_headers_of(stored)
        return raw_value_of(stored), timestamp_of_headers_value(stored), decode_headers(raw_headers)
    if store_type in _AGGREGATION_HEADERS_LOGGED:
        if stored is None:
            return None, context.timestamp, context.headers
        decoded = decode_aggregation_with_headers(stored)
        if decoded is None:  # only a None input decodes to None, handled above
            raise DecodeError(FORMAT, "aggregation with headers did not decode")
        return decoded.aggregation, context.timestamp, decoded.headers
    raise EncodeError(FORMAT, f"no changelog rule for store type {store_type.value}")


# --- keys -----------------------------------------------------------------------------------------


def segmented_changelog_key(key: bytes, time: int, other: int, *, family: Family) -> bytes:
    """The plain store key of ``family``'s key schema, as its change-logging layer sends it: ``[key][suffix]`` of
    the schema's two times (CL-6, CL-7, WIN-1, SESS-1); a family without a key schema raises
    :class:`~kstate.codecs.store_types.UnknownFamilyError`."""
    return key_schemas.plain_schema(family).to_store_key(bytes_of(FORMAT, "key", key), time, other)


def window_changelog_key(key: bytes, window_start: int, seqnum: int) -> bytes:
    """``WindowKeySchema.toStoreKeyBinary``: ``[key][windowStart int64][seqnum int32]`` (CL-6, WIN-1)."""
    return segmented_changelog_key(key, window_start, seqnum, family=Family.WINDOW)


#: The change-logging window layer's own counter, ``(seqnum + 1) & 0x7FFFFFFF`` per put with duplicates (CL-6).
next_seqnum = window_keys.next_seqnum


# --- records per write ----------------------------------------------------------------------------


def kv_put_record(store_type: StoreType, key: bytes, stored: bytes | None, context: RecordContext,
                  position: PositionInput | None = None) -> ChangelogRecord:
    """``put``/``putAll`` entry on a key-value store; a None value is a tombstone (CL-3, CL-4, CL-8)."""
    _require(store_type, KV_TYPES)
    value, timestamp, headers = _logged_value(store_type, stored, context)
    return _finish(key, value, timestamp, headers, position)


def kv_put_if_absent_record(store_type: StoreType, key: bytes, stored: bytes | None, previous: bytes | None,
                            context: RecordContext, position: PositionInput | None = None) -> ChangelogRecord | None:
    """``putIfAbsent``: logged only when the previous value was null, even when the new one is null (CL-3)."""
    _require(store_type, KV_TYPES)
    if previous is not None:
        return None
    return kv_put_record(store_type, key, stored, context, position)


def kv_delete_record(store_type: StoreType, key: bytes, context: RecordContext,
                     position: PositionInput | None = None) -> ChangelogRecord:
    """``delete``: always a tombstone with the context timestamp, even for an absent key (CL-3, CL-4, CL-8)."""
    _require(store_type, KV_TYPES)
    headers = context.headers if store_type in _TOMBSTONE_HEADERS else None
    return _finish(key, None, context.timestamp, headers, position)


def versioned_record(key: bytes, value: bytes | None, timestamp: int,
                     position: PositionInput | None = None, headers: HeaderInput = None) -> ChangelogRecord:
    """``put(k, v, ts)`` and ``delete(k, ts)`` on a versioned store: raw bytes at the version timestamp, always (CL-5);
    the header-aware variant also sends ``headers`` (VS-26, tentative)."""
    return _finish(key, value, timestamp, headers, position)


def versioned_write_record(store_type: StoreType, key: bytes, stored: bytes | None, timestamp: int,
                           context: RecordContext | None = None,
                           position: PositionInput | None = None) -> ChangelogRecord:
    """``put(k, v, ts)`` (``stored`` in the type's layout) or ``delete(k, ts)`` (``stored`` None) on a versioned store:
    the raw value at the version timestamp (CL-5); a type logging headers sends the version's, a tombstone the
    context's (VS-26). The table's changelog fields decide; a type without a versioned rule is refused."""
    _require(store_type, VERSIONED_TYPES)
    info = STORE_TYPES[store_type]
    fields = info.changelog
    if fields is None or fields.timestamp is not Source.VERSION:
        raise EncodeError(FORMAT, f"no versioned changelog rule for store type {store_type.value}")
    if stored is None:
        if fields.headers is Source.NONE:
            return _finish(key, None, timestamp, None, position)
        if fields.headers is not Source.VALUE:
            raise EncodeError(FORMAT, f"no tombstone headers rule for store type {store_type.value}")
        if context is None:
            raise EncodeError(FORMAT, f"a record context is required for a {store_type.value} tombstone (VS-26)")
        return _finish(key, None, timestamp, context.headers, position)
    if fields.headers is Source.NONE and info.value_format is ValueFormat.PLAIN:
        return _finish(key, stored, timestamp, None, position)  # the stored bytes are the raw value: nothing to split
    parts = decode_stored_value(store_type, stored)
    if fields.headers is Source.NONE:
        return _finish(key, parts.value, timestamp, None, position)
    if fields.headers is not Source.VALUE or parts.headers is None:
        raise EncodeError(FORMAT, f"no headers rule for store type {store_type.value}")
    return _finish(key, parts.value, timestamp, parts.headers, position)


def segmented_put_record(store_type: StoreType, key: bytes, time: int, other: int, stored: bytes | None,
                         context: RecordContext, position: PositionInput | None = None, *,
                         family: Family | None = None) -> ChangelogRecord:
    """A write on a segmented store: the family's plain store key of ``(key, time, other)`` (a window's start and
    the layer's seqnum, a session's start and end), the value as for KV stores, None a session ``remove`` (CL-6,
    CL-7). The family is the table's for ``store_type``; ``family``, when given, must be it. A type of no
    segmented family, or without a changelog rule, is refused."""
    info = STORE_TYPES.get(store_type)
    if info is None or info.changelog is None or (family is not None and info.family is not family) \
            or info.family.value not in key_schemas.segmented_families():
        raise EncodeError(FORMAT, f"operation not defined for store type {store_type.value}")
    value, timestamp, headers = _logged_value(store_type, stored, context)
    return _finish(segmented_changelog_key(key, time, other, family=info.family), value, timestamp, headers,
                   position)


def window_put_record(store_type: StoreType, key: bytes, window_start: int, seqnum: int, stored: bytes | None,
                      context: RecordContext, position: PositionInput | None = None) -> ChangelogRecord:
    """``put(k, v, windowStart)``: the store key with the layer's seqnum; the value as for KV stores (CL-6)."""
    return segmented_put_record(store_type, key, window_start, seqnum, stored, context, position, family=Family.WINDOW)


def _require(store_type: StoreType, allowed: frozenset[StoreType]) -> None:
    if store_type not in allowed:
        raise EncodeError(FORMAT, f"operation not defined for store type {store_type.value}")


# --- restore --------------------------------------------------------------------------------------


#: ``(record value, record timestamp, record headers) -> stored value``: a restore converter (CL-9 to CL-11).
RecordConverter = Callable[[bytes | None, int, HeaderInput], "bytes | None"]


#: Restore writes the record's parts in the store's value layout: the identity for a plain layout (CL-9 to CL-11).
_RECORD_CONVERTERS: dict[StoreType, RecordConverter] = {
    t: VALUE_ENCODERS[i.value_format] for t, i in STORE_TYPES.items() if i.restore is not None and i.value_format is not None
}


def record_converter(store_type: StoreType) -> RecordConverter:
    """``StateManagerUtil.converterForStore`` as a function of a record's parts (CL-9 to CL-11).

    Header-aware stores embed *all* record headers, the consistency headers ``v``/``c`` included.
    """
    convert = _RECORD_CONVERTERS.get(store_type)
    if convert is None:
        raise EncodeError(FORMAT, f"no restore rule for store type {store_type.value}")
    return convert


def restore_reads_headers(store_type: StoreType) -> bool:
    """Whether ``store_type``'s restore converter embeds the record headers (CL-10, CL-11)."""
    return store_type in _TIMESTAMPED_WITH_HEADERS or store_type in _AGGREGATION_WITH_HEADERS


#: A changelog record as restore reads it: ``(key, value, timestamp, headers)``.
RestoreRow = tuple[bytes, "bytes | None", int, HeaderInput]


def restore_entries(store_type: StoreType, rows: Iterable[RestoreRow]) -> list[tuple[bytes, bytes | None]]:
    """``(key, stored value)`` for each row, as :func:`restore_value` converts one record (CL-9 to CL-11).

    One call per restore batch: the per-record work of the hot store types stays in one loop.
    """
    if store_type in _IDENTITY:
        return [(key, value) for key, value, _timestamp, _headers in rows]
    if store_type in _TIMESTAMPED:
        return raw_rows_to_timestamped_values(rows)
    if store_type in _TIMESTAMPED_WITH_HEADERS:
        return raw_rows_to_headers_values(rows)
    convert = record_converter(store_type)
    return [(key, convert(value, timestamp, headers)) for key, value, timestamp, headers in rows]


def restore_value(store_type: StoreType, record: ChangelogRecord) -> bytes | None:
    """The value a store writes for a changelog record (``StateManagerUtil.converterForStore``) (CL-9 to CL-11)."""
    return record_converter(store_type)(record.value, record.timestamp, record.headers)


def apply_consistency(position: PositionInput, headers: Iterable[tuple[str, bytes | None]], enabled: bool = True) -> Position:
    """``applyChecksAndUpdatePosition``: merge the ``c`` position of a v0 record into ``position`` (CL-13).

    Disabled, no ``v`` header, or a version other than 0: unchanged. A null or empty ``v`` value, or a
    v0 record without a usable ``c``, is refused as Kafka refuses it.
    """
    current = merge_positions(position, {})
    if not enabled:
        return current
    pairs = list(headers)
    version = _last_header(pairs, VERSION_HEADER)
    if version is None:
        return current
    version_value = version[1]
    if not version_value:
        raise DecodeError(FORMAT, "consistency version header has no first byte", 0)
    if version_value[0] != 0:
        return current  # Kafka logs a warning and ignores the record's position
    vector = _last_header(pairs, POSITION_HEADER)
    if vector is None or vector[1] is None:
        raise DecodeError(FORMAT, "consistency is enabled but the changelog record has no position header")
    return merge_positions(current, decode_position(vector[1])[0])


def _last_header(pairs: list[tuple[str, bytes | None]], key: str) -> tuple[str, bytes | None] | None:
    for pair in reversed(pairs):
        if pair[0] == key:
            return pair
    return None


# --- topic ----------------------------------------------------------------------------------------


def validate_topic_name(name: str) -> str:
    """``Topic.validate``: non-empty, not ``.``/``..``, at most 249 chars of ``[a-zA-Z0-9._-]`` (CL-14)."""
    if not name:
        raise EncodeError(TOPIC_FORMAT, "Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise EncodeError(TOPIC_FORMAT, "Topic name cannot be \".\" or \"..\"")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise EncodeError(TOPIC_FORMAT, f"topic name is longer than {MAX_TOPIC_NAME_LENGTH} characters")
    if not _LEGAL_TOPIC.fullmatch(name):
        raise EncodeError(TOPIC_FORMAT, f"topic name {name!r} contains a character outside [a-zA-Z0-9._-]")
    return name


def changelog_topic_name(application_id: str, store_name: str, named_topology: str | None = None) -> str:
    """``storeChangelogTopic``: ``<applicationId>-[<namedTopology>-]<store>-changelog``, validated (CL-14)."""
    middle = f"{named_topology}-" if named_topology is not None else ""
    return validate_topic_name(f"{application_id}-{middle}{store_name}{CHANGELOG_SUFFIX}")


def _saturating_add(a: int, b: int) -> int:
    # Math.addExact overflow is swallowed and replaced by Long.MAX_VALUE, in either direction.
    total = a + b
    return total if INT64_MIN <= total <= INT64_MAX else INT64_MAX


def changelog_topic_config(
    store_type: StoreType,
    *,
    retention_ms: int | None = None,
    history_retention_ms: int | None = None,
    retain_duplicates: bool = False,
    additional_retention_ms: int = DEFAULT_ADDITIONAL_RETENTION_MS,
    topic_defaults: Mapping[str, str] | None = None,
    log_config: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The changelog topic's properties: library overrides < ``topic.*`` defaults < the store's log config (CL-15 to CL-17).

    ``log_config`` is the map given to ``withLoggingEnabled``, merged into the builder's own (None: never called); a
    plain window store keeping duplicates carries ``cleanup.policy=delete`` unless the map sets the policy (CL-16).
    """
    topic = STORE_TYPES[store_type].topic
    if topic is None:
        raise EncodeError(TOPIC_FORMAT, f"no changelog topic rule for store type {store_type.value}")
    config: dict[str, str] = {"message.timestamp.type": "CreateTime"}
    # WindowStoreBuilder puts cleanup.policy=delete into the builder's map at construction; withLoggingEnabled(map)
    # merges ``log_config`` into that map (AbstractStoreBuilder.withLoggingEnabled: putAll), never replaces it.
    store_config: dict[str, str] = (
        {"cleanup.policy": "delete"} if retain_duplicates and topic.delete_when_retaining_duplicates else {}
    )
    store_config.update(log_config or {})
    config["cleanup.policy"] = topic.cleanup_policy
    config.update(topic_defaults or {})
    config.update(store_config)
    if topic.versioned_compaction_lag and "min.compaction.lag.ms" not in store_config:
        if history_retention_ms is None:
            raise EncodeError(TOPIC_FORMAT, "a versioned store needs its history retention")
        config["min.compaction.lag.ms"] = str(_saturating_add(history_retention_ms, VERSIONED_ADDITIONAL_COMPACTION_LAG_MS))
    if topic.windowed_retention and "retention.ms" not in store_config:
        if retention_ms is None:
            raise EncodeError(TOPIC_FORMAT, "a window or session store needs its retention period")
        config["retention.ms"] = str(_saturating_add(retention_ms, additional_retention_ms))
    return config


__all__ = [
    "ChangelogRecord",
    "RecordContext",
    "apply_consistency",
    "changelog_topic_config",
    "changelog_topic_name",
    "consistency_headers",
    "kv_delete_record",
    "kv_put_if_absent_record",
    "kv_put_record",
    "next_seqnum",
    "restore_value",
    "segmented_changelog_key",
    "segmented_put_record",
    "versioned_record",
    "versioned_write_record",
    "window_changelog_key",
    "window_put_record",
]
