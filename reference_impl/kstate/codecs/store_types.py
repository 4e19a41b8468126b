"""The one table of store types: every store type of the spec and what is particular to it (KV-1, CL-*, LAY-*).

:class:`StoreType` names each type once; :data:`STORE_TYPES` maps it to a frozen :class:`StoreTypeInfo`: its
family, the layout of its stored values, what its change-logging layer sends, how restore rebuilds a stored
value from a changelog record, its column families and in-place upgrades, its changelog topic's
configuration, and whether the reference has a store for it yet. The codecs, the stores, the ops and the
harness read this table instead of branching on a type, so a new store family starts as a new entry here.
Pure data: no I/O, nothing imported from above the codecs.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from kstate.codecs.header_values import (
    HeaderInput,
    convert_from_plain_to_header_format,
    convert_to_header_format,
    decode_aggregation_with_headers,
    decode_value_timestamp_headers,
    encode_aggregation_with_headers,
    encode_value_timestamp_headers,
)
from kstate.codecs.timestamped import (
    convert_to_timestamped_format,
    decode_value_and_timestamp,
    encode_value_and_timestamp,
)
from kstate.errors import DecodeError, EncodeError

FORMAT = "store-type"

# Column family names (LAY-5 to LAY-8).
DEFAULT_CF = "default"
TIMESTAMPED_CF = "keyValueWithTimestamp"
TIMESTAMPED_HEADERS_CF = "keyValueWithTimestampAndHeaders"
SESSION_HEADERS_CF = "sessionKeyValueWithHeaders"
WINDOW_HEADERS_CF = "windowKeyValueWithHeaders"
OFFSETS_CF = "offsets"
KNOWN_COLUMN_FAMILIES = (DEFAULT_CF, TIMESTAMPED_CF, TIMESTAMPED_HEADERS_CF, SESSION_HEADERS_CF, WINDOW_HEADERS_CF, OFFSETS_CF)

#: The store layer's former spelling of the headers key-value type: still accepted when parsing, never emitted.
LEGACY_ALIASES: Mapping[str, str] = MappingProxyType({"timestamped_kv_headers": "timestamped_kv_with_headers"})


class UnknownStoreTypeError(EncodeError):
    """A store type name that is neither a :class:`StoreType` value nor a legacy alias; ``name`` is the name."""

    def __init__(self, name: object) -> None:
        self.name = name
        super().__init__(FORMAT, f"unknown store type {name!r}")


class UnknownFamilyError(EncodeError):
    """A dispatch over the families met one it has no branch for (a family added to the table but not there);
    ``family`` is the family, ``where`` the dispatch that lacks it."""

    def __init__(self, family: object, where: str) -> None:
        self.family = family
        self.where = where
        shown = getattr(family, "value", family)
        super().__init__(FORMAT, f"{where}: no branch for the store family {shown!r}")


class StoreType(str, enum.Enum):
    """Every store type of the spec, one spelling each (KV-1, CL-1, LAY-5)."""

    KEY_VALUE = "kv"
    TIMESTAMPED_KV = "timestamped_kv"
    TIMESTAMPED_KV_WITH_HEADERS = "timestamped_kv_with_headers"
    VERSIONED_KV = "versioned_kv"
    VERSIONED_KV_WITH_HEADERS = "versioned_kv_with_headers"
    WINDOW = "window"
    TIMESTAMPED_WINDOW = "timestamped_window"
    TIMESTAMPED_WINDOW_WITH_HEADERS = "timestamped_window_with_headers"
    SESSION = "session"
    SESSION_WITH_HEADERS = "session_with_headers"
    #: Only a column-family layout (LAY-*); its changelog is not specified.
    TIME_ORDERED_WINDOW_WITH_HEADERS = "time_ordered_window_with_headers"

    @classmethod
    def _missing_(cls, value: object) -> StoreType | None:
        alias = LEGACY_ALIASES.get(value) if isinstance(value, str) else None
        return None if alias is None else cls(alias)

    @classmethod
    def parse(cls, name: str) -> StoreType:
        """The type ``name`` (or its legacy alias) names; :class:`UnknownStoreTypeError` for anything else."""
        try:
            return cls(name)
        except ValueError as exc:
            raise UnknownStoreTypeError(name) from exc


class Family(str, enum.Enum):
    """How a store keeps its data: one database of keys, versions, or segments of windows or sessions."""

    KEY_VALUE = "key_value"
    VERSIONED = "versioned"
    WINDOW = "window"
    SESSION = "session"


class ValueFormat(str, enum.Enum):
    """The layout of a stored value, as encoded into the store and decoded from it."""

    #: The value bytes as given (KV-1).
    PLAIN = "plain"
    #: ``[timestamp int64][value]`` (TS-1).
    TIMESTAMPED = "timestamped"
    #: ``[varint hsize][headers][timestamp int64][value]`` (HV-1).
    TIMESTAMPED_WITH_HEADERS = "timestamped_with_headers"
    #: ``[varint hsize][headers][aggregation]`` (HV-5).
    AGGREGATION_WITH_HEADERS = "aggregation_with_headers"


class Source(str, enum.Enum):
    """Where a changelog record's timestamp or headers come from (CL-3 to CL-8)."""

    NONE = "none"
    #: The record context of the write.
    CONTEXT = "context"
    #: The stored value itself; a tombstone falls back to the context.
    VALUE = "value"
    #: The version timestamp the write names (versioned stores).
    VERSION = "version"


#: ``(value, timestamp, headers) -> stored bytes``: how a value is put into a store's layout.
ValueEncoder = Callable[[bytes | None, int, HeaderInput], "bytes | None"]


def _plain(value: bytes | None, _timestamp: int, _headers: HeaderInput) -> bytes | None:
    return value


def _timestamped(value: bytes | None, timestamp: int, _headers: HeaderInput) -> bytes | None:
    return encode_value_and_timestamp(value, timestamp)


def _aggregation_with_headers(value: bytes | None, _timestamp: int, headers: HeaderInput) -> bytes | None:
    return encode_aggregation_with_headers(value, headers)


#: The encoder of each value format (a null value stays null).
VALUE_ENCODERS: Mapping[ValueFormat, ValueEncoder] = MappingProxyType({
    ValueFormat.PLAIN: _plain,
    ValueFormat.TIMESTAMPED: _timestamped,
    ValueFormat.TIMESTAMPED_WITH_HEADERS: encode_value_timestamp_headers,
    ValueFormat.AGGREGATION_WITH_HEADERS: _aggregation_with_headers,
})


@dataclass(frozen=True)
class StoredValue:
    """A stored value split by its layout: the raw value, and the timestamp and headers where the layout keeps them."""

    value: bytes
    #: None: the layout keeps no timestamp (PLAIN, AGGREGATION_WITH_HEADERS).
    timestamp: int | None = None
    #: None: the layout keeps no headers (PLAIN, TIMESTAMPED); else in order, duplicates and null values kept.
    headers: tuple[tuple[str, bytes | None], ...] | None = None


def _decode_plain(stored: bytes) -> StoredValue:
    return StoredValue(stored)


def _decode_timestamped(stored: bytes) -> StoredValue:
    decoded = decode_value_and_timestamp(stored)
    if decoded is None:  # only a None input decodes to None
        raise DecodeError(FORMAT, "a timestamped value did not decode")
    return StoredValue(decoded[0], decoded[1])


def _decode_timestamped_with_headers(stored: bytes) -> StoredValue:
    decoded = decode_value_timestamp_headers(stored)
    if decoded is None:
        raise DecodeError(FORMAT, "a value with timestamp and headers did not decode")
    return StoredValue(decoded.value, decoded.timestamp, tuple(decoded.headers))


def _decode_aggregation_with_headers(stored: bytes) -> StoredValue:
    decoded = decode_aggregation_with_headers(stored)
    if decoded is None:
        raise DecodeError(FORMAT, "an aggregation with headers did not decode")
    return StoredValue(decoded.aggregation, None, tuple(decoded.headers))


#: The decoder of each value format: a non-null stored value split into its parts (TSKV-1, HV-6, HV-11).
VALUE_DECODERS: Mapping[ValueFormat, Callable[[bytes], StoredValue]] = MappingProxyType({
    ValueFormat.PLAIN: _decode_plain,
    ValueFormat.TIMESTAMPED: _decode_timestamped,
    ValueFormat.TIMESTAMPED_WITH_HEADERS: _decode_timestamped_with_headers,
    ValueFormat.AGGREGATION_WITH_HEADERS: _decode_aggregation_with_headers,
})


@dataclass(frozen=True)
class ChangelogFields:
    """What a change-logging layer sends for a write: the record value is the stored value's raw value (CL-3 to CL-8)."""

    timestamp: Source
    headers: Source


class RestoreConversion(str, enum.Enum):
    """``StateManagerUtil.converterForStore``: how a changelog record becomes a stored value (CL-9 to CL-11, RST-2)."""

    IDENTITY = "identity"
    #: ``[record timestamp][value]``.
    TIMESTAMPED = "timestamped"
    #: ``[hsize][all record headers][record timestamp][value]``.
    TIMESTAMPED_WITH_HEADERS = "timestamped_with_headers"
    #: ``[hsize][all record headers][aggregation]``.
    AGGREGATION_WITH_HEADERS = "aggregation_with_headers"


@dataclass(frozen=True)
class Upgrade:
    """An in-place upgrade: data found in ``source_cf`` is read through ``conversion`` (LAY-6, LAY-8, KV-31)."""

    source_cf: str
    conversion: str


@dataclass(frozen=True)
class ColumnFamilies:
    """The column-family plan's inputs: the data family and the legacy families it upgrades from (LAY-5 to LAY-8)."""

    data_cf: str
    upgrades: tuple[Upgrade, ...] = ()


@dataclass(frozen=True)
class TopicConfig:
    """The changelog topic's library overrides (CL-16, CL-17)."""

    cleanup_policy: str
    #: ``retention.ms`` = the store's retention + the additional retention (window and session stores).
    windowed_retention: bool = False
    #: ``min.compaction.lag.ms`` = history retention + a fixed lag (versioned stores).
    versioned_compaction_lag: bool = False
    #: A builder keeping duplicates without its own log config sets ``cleanup.policy=delete``.
    delete_when_retaining_duplicates: bool = False


@dataclass(frozen=True)
class StoreTypeInfo:
    """What is particular to one store type; None where the spec does not define it for the type."""

    store_type: StoreType
    family: Family
    value_format: ValueFormat | None
    changelog: ChangelogFields | None
    restore: RestoreConversion | None
    column_families: ColumnFamilies | None
    topic: TopicConfig | None
    #: Whether the reference implementation has a store of this type.
    built: bool = False

    @property
    def stores_headers(self) -> bool:
        """Whether the stored value keeps record headers (HV-6, HV-11, VS-25)."""
        return self.value_format in (ValueFormat.TIMESTAMPED_WITH_HEADERS, ValueFormat.AGGREGATION_WITH_HEADERS)

    @property
    def single_database(self) -> bool:
        """One RocksDB at ``rocksdb/<store>`` (key-value, versioned), not one per segment (LAY-2, LAY-3)."""
        return self.family in (Family.KEY_VALUE, Family.VERSIONED)


PLAIN_LOGGED = ChangelogFields(Source.CONTEXT, Source.NONE)
TIMESTAMPED_LOGGED = ChangelogFields(Source.VALUE, Source.NONE)
HEADERS_LOGGED = ChangelogFields(Source.VALUE, Source.VALUE)
AGGREGATION_HEADERS_LOGGED = ChangelogFields(Source.CONTEXT, Source.VALUE)
VERSIONED_LOGGED = ChangelogFields(Source.VERSION, Source.NONE)
VERSIONED_HEADERS_LOGGED = ChangelogFields(Source.VERSION, Source.VALUE)

CONVERT_TO_TIMESTAMPED_FORMAT = "convert_to_timestamped_format"
CONVERT_TO_HEADER_FORMAT = "convert_to_header_format"
CONVERT_FROM_PLAIN_TO_HEADER_FORMAT = "convert_from_plain_to_header_format"

#: The value conversions of the in-place upgrades, by the column-family plan's ``conversion`` name (KV-31, KV-37).
LEGACY_CONVERSIONS: Mapping[str, Callable[[bytes | None], bytes | None]] = MappingProxyType({
    CONVERT_TO_TIMESTAMPED_FORMAT: convert_to_timestamped_format,
    CONVERT_TO_HEADER_FORMAT: convert_to_header_format,
    CONVERT_FROM_PLAIN_TO_HEADER_FORMAT: convert_from_plain_to_header_format,
})

_PLAIN_CFS = ColumnFamilies(DEFAULT_CF)
_TIMESTAMPED_CFS = ColumnFamilies(TIMESTAMPED_CF, (Upgrade(DEFAULT_CF, CONVERT_TO_TIMESTAMPED_FORMAT),))
_HEADERS_CFS = ColumnFamilies(TIMESTAMPED_HEADERS_CF, (Upgrade(TIMESTAMPED_CF, CONVERT_TO_HEADER_FORMAT),
                                                       Upgrade(DEFAULT_CF, CONVERT_FROM_PLAIN_TO_HEADER_FORMAT)))
_KV_TOPIC = TopicConfig("compact")
_VERSIONED_TOPIC = TopicConfig("compact", versioned_compaction_lag=True)
_WINDOWED_TOPIC = TopicConfig("compact,delete", windowed_retention=True)
_T = StoreType


def _entries(*infos: StoreTypeInfo) -> Mapping[StoreType, StoreTypeInfo]:
    table = {i.store_type: i for i in infos}
    missing = set(StoreType) - set(table)
    if missing:  # every member has exactly one entry
        raise AssertionError(f"store types without an entry: {sorted(t.value for t in missing)}")
    return MappingProxyType(table)


#: The table: one entry per :class:`StoreType`.
STORE_TYPES: Mapping[StoreType, StoreTypeInfo] = _entries(
    StoreTypeInfo(_T.KEY_VALUE, Family.KEY_VALUE, ValueFormat.PLAIN, PLAIN_LOGGED, RestoreConversion.IDENTITY,
                  _PLAIN_CFS, _KV_TOPIC, built=True),
    StoreTypeInfo(_T.TIMESTAMPED_KV, Family.KEY_VALUE, ValueFormat.TIMESTAMPED, TIMESTAMPED_LOGGED,
                  RestoreConversion.TIMESTAMPED, _TIMESTAMPED_CFS, _KV_TOPIC, built=True),
    StoreTypeInfo(_T.TIMESTAMPED_KV_WITH_HEADERS, Family.KEY_VALUE, ValueFormat.TIMESTAMPED_WITH_HEADERS,
                  HEADERS_LOGGED, RestoreConversion.TIMESTAMPED_WITH_HEADERS, _HEADERS_CFS, _KV_TOPIC, built=True),
    StoreTypeInfo(_T.VERSIONED_KV, Family.VERSIONED, ValueFormat.PLAIN, VERSIONED_LOGGED, RestoreConversion.IDENTITY,
                  _PLAIN_CFS, _VERSIONED_TOPIC, built=True),
    # KIP-1271, not merged in Kafka: every choice is tentative (spec/versioned-store.md VS-25 to VS-29).
    StoreTypeInfo(_T.VERSIONED_KV_WITH_HEADERS, Family.VERSIONED, ValueFormat.AGGREGATION_WITH_HEADERS,
                  VERSIONED_HEADERS_LOGGED, RestoreConversion.AGGREGATION_WITH_HEADERS, _PLAIN_CFS, _VERSIONED_TOPIC,
                  built=True),
    StoreTypeInfo(_T.WINDOW, Family.WINDOW, ValueFormat.PLAIN, PLAIN_LOGGED, RestoreConversion.IDENTITY, _PLAIN_CFS,
                  TopicConfig("compact,delete", windowed_retention=True, delete_when_retaining_duplicates=True),
                  built=True),
    StoreTypeInfo(_T.TIMESTAMPED_WINDOW, Family.WINDOW, ValueFormat.TIMESTAMPED, TIMESTAMPED_LOGGED,
                  RestoreConversion.TIMESTAMPED, _TIMESTAMPED_CFS, _WINDOWED_TOPIC, built=True),
    StoreTypeInfo(_T.TIMESTAMPED_WINDOW_WITH_HEADERS, Family.WINDOW, ValueFormat.TIMESTAMPED_WITH_HEADERS,
                  HEADERS_LOGGED, RestoreConversion.TIMESTAMPED_WITH_HEADERS, _HEADERS_CFS, _WINDOWED_TOPIC, built=True),
    StoreTypeInfo(_T.SESSION, Family.SESSION, ValueFormat.PLAIN, PLAIN_LOGGED, RestoreConversion.IDENTITY, _PLAIN_CFS,
                  _WINDOWED_TOPIC, built=True),
    StoreTypeInfo(_T.SESSION_WITH_HEADERS, Family.SESSION, ValueFormat.AGGREGATION_WITH_HEADERS,
                  AGGREGATION_HEADERS_LOGGED, RestoreConversion.AGGREGATION_WITH_HEADERS,
                  ColumnFamilies(SESSION_HEADERS_CF, (Upgrade(DEFAULT_CF, CONVERT_TO_HEADER_FORMAT),)), _WINDOWED_TOPIC,
                  built=True),
    StoreTypeInfo(_T.TIME_ORDERED_WINDOW_WITH_HEADERS, Family.WINDOW, None, None, None,
                  ColumnFamilies(WINDOW_HEADERS_CF, (Upgrade(DEFAULT_CF, CONVERT_TO_HEADER_FORMAT),)), None),
)


def info(store_type: StoreType) -> StoreTypeInfo:
    """The table entry of ``store_type``; :class:`UnknownStoreTypeError` for a type the table lacks."""
    try:
        return STORE_TYPES[store_type]
    except KeyError as exc:
        raise UnknownStoreTypeError(getattr(store_type, "value", store_type)) from exc


def family_of(store_type: StoreType) -> Family:
    """The family of ``store_type`` from the table; :class:`UnknownStoreTypeError` for a type the table lacks."""
    return info(store_type).family


def encode_stored_value(store_type: StoreType, value: bytes | None, timestamp: int,
                        headers: HeaderInput = None) -> bytes | None:
    """``value`` in ``store_type``'s value layout; :class:`EncodeError` for a type without a specified layout."""
    value_format = STORE_TYPES[store_type].value_format
    if value_format is None:
        raise EncodeError(FORMAT, f"no value layout for store type {store_type.value}")
    return VALUE_ENCODERS[value_format](value, timestamp, headers)


def decode_stored_value(store_type: StoreType, stored: bytes) -> StoredValue:
    """A non-null value in ``store_type``'s layout split into its parts; :class:`DecodeError` for a type without a
    specified layout or bytes that do not decode."""
    value_format = STORE_TYPES[store_type].value_format
    if value_format is None:
        raise DecodeError(FORMAT, f"no value layout for store type {store_type.value}")
    return VALUE_DECODERS[value_format](bytes(stored))


def types_where(predicate: Callable[[StoreTypeInfo], bool]) -> frozenset[StoreType]:
    """The store types whose entry satisfies ``predicate``."""
    return frozenset(t for t, i in STORE_TYPES.items() if predicate(i))


#: The key-value store types (the change-logging key-value records apply to them).
KV_TYPES = types_where(lambda i: i.family is Family.KEY_VALUE)
WINDOW_TYPES = types_where(lambda i: i.family is Family.WINDOW and i.changelog is not None)
SESSION_TYPES = types_where(lambda i: i.family is Family.SESSION and i.changelog is not None)
VERSIONED_TYPES = types_where(lambda i: i.family is Family.VERSIONED and i.changelog is not None)
#: The store types the reference implementation can open.
BUILT_TYPES = tuple(t for t in StoreType if STORE_TYPES[t].built)
#: The built types of the key-value family: what the key-value stores, tests, mutants and oracle iterate over.
BUILT_KV_TYPES = tuple(t for t in BUILT_TYPES if STORE_TYPES[t].family is Family.KEY_VALUE)



def _segment_type_markers() -> tuple[tuple[str, StoreType], ...]:
    """The data column family of each segmented type that no other segmented type uses, later types first."""
    segmented = [(t, i.column_families.data_cf) for t, i in STORE_TYPES.items()
                 if not i.single_database and i.column_families is not None]
    counts = {cf: sum(1 for _, c in segmented if c == cf) for _, cf in segmented}
    markers = tuple((cf, t) for t, cf in reversed(segmented) if counts[cf] == 1)
    for rank, (_, store_type) in enumerate(markers):  # a type outranks the legacy families it upgrades from
        families = STORE_TYPES[store_type].column_families
        sources = {u.source_cf for u in families.upgrades} if families is not None else set()
        if any(cf in sources for cf, _ in markers[:rank]):
            raise AssertionError(f"the segment markers rank {store_type.value} below a family it upgrades from")
    return markers


#: What a segment directory's column families tell (LAY-5): a family that only one segmented type keeps as its data
#: family names that type, in the order detection asks (a type before the legacy families it upgrades from).
SEGMENT_TYPE_MARKERS: tuple[tuple[str, StoreType], ...] = _segment_type_markers()
#: The column families only segmented types keep: one of them in a ``rocksdb/<store>`` database is no key-value
#: store's (LAY-5).
SEGMENT_ONLY_CFS: frozenset[str] = frozenset(
    i.column_families.data_cf for i in STORE_TYPES.values() if not i.single_database and i.column_families is not None
) - frozenset(i.column_families.data_cf for i in STORE_TYPES.values() if i.single_database and i.column_families is not None)


class RowsReading(str, enum.Enum):
    """What a store's rows on disk tell of its family, for the check at open (LAY-14)."""

    #: Any bytes are a row of the family: nothing tells.
    ANY_BYTES = "any_bytes"
    #: Every row must read as a versioned row (VER-1..VER-9).
    VERSIONED_ROWS = "versioned_rows"
    #: The segments' plain keys read as the family's key schema and no other (LAY-3, LAY-5).
    SEGMENT_KEYS = "segment_keys"


#: Per family, what its rows on disk tell (LAY-14); a family without an entry is refused by the check.
ROWS_READINGS: Mapping[Family, RowsReading] = MappingProxyType({
    Family.KEY_VALUE: RowsReading.ANY_BYTES,
    Family.VERSIONED: RowsReading.VERSIONED_ROWS,
    Family.WINDOW: RowsReading.SEGMENT_KEYS,
    Family.SESSION: RowsReading.SEGMENT_KEYS,
})

__all__ = [
    "BUILT_KV_TYPES",
    "BUILT_TYPES",
    "KV_TYPES",
    "LEGACY_ALIASES",
    "LEGACY_CONVERSIONS",
    "ROWS_READINGS",
    "SEGMENT_ONLY_CFS",
    "SEGMENT_TYPE_MARKERS",
    "SESSION_TYPES",
    "STORE_TYPES",
    "VALUE_DECODERS",
    "VALUE_ENCODERS",
    "VERSIONED_TYPES",
    "WINDOW_TYPES",
    "ChangelogFields",
    "ColumnFamilies",
    "Family",
    "RestoreConversion",
    "RowsReading",
    "Source",
    "StoreType",
    "StoreTypeInfo",
    "StoredValue",
    "TopicConfig",
    "UnknownFamilyError",
    "UnknownStoreTypeError",
    "Upgrade",
    "ValueEncoder",
    "ValueFormat",
    "decode_stored_value",
    "encode_stored_value",
    "family_of",
    "info",
    "types_where",
]
