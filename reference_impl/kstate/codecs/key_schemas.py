"""Key schemas of the segmented stores as objects: one protocol, one instance per layout (WIN-1..3, SESS-1..3).

A schema writes (key, two times) as a store key and reads it back, names the time that picks a key's
segment and builds the bounds of a range scan (Kafka's ``lowerRange``, ``upperRange``,
``lowerRangeFixedSize``, ``upperRangeFixedSize``). The window and session families differ in their
suffix (``[start][seqnum]``, ``[end][start]``); the three layouts differ in where the key and the
one-byte prefix go: plain ``[key][suffix]``, key-first ``[01][key][suffix]``, time-first
``[00][suffix head][key][suffix tail]``. Every method is pure.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from kstate.codecs import primitives
from kstate.codecs.primitives import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, encode_int32, encode_int64
from kstate.codecs.store_types import UnknownFamilyError
from kstate.errors import CodecError, DecodeError, EncodeError

TIMESTAMP_SIZE = 8
PREFIX_SIZE = 1
TIME_FIRST_PREFIX = 0x00
KEY_FIRST_PREFIX = 0x01
TIME_FIRST_BYTE = bytes([TIME_FIRST_PREFIX])
KEY_FIRST_BYTE = bytes([KEY_FIRST_PREFIX])
#: ``max(retention / 2, 60000)`` is the default segment interval of both families (WIN-16, SESS-11).
MIN_SEGMENT_INTERVAL_DEFAULT = 60_000

@dataclass(frozen=True)
class SegmentReading:
    """One way a segment's plain ``default`` keys can read (spec/layout.md "Detecting a store's type", LAY-5):
    ``name`` the store type it stands for, ``noun`` how a report names it, ``layout`` how its keys look, and
    ``plausible(key, low, high)`` whether a key reads so with its segment time in ``[low, high)`` (None: unbounded)."""

    name: str
    noun: str
    layout: str
    plausible: Callable[[bytes, int, int | None], bool]


StoreKeyT = TypeVar("StoreKeyT")
StoreKeyT_co = TypeVar("StoreKeyT_co", covariant=True)


class KeySchema(Protocol[StoreKeyT_co]):
    """One store-key layout of a segmented store; ``name`` is its operation prefix (WIN-1..3, SESS-1..3)."""

    family: str
    name: str
    noun: str
    kafka_class: str
    layout_rule: str
    prefix: int | None
    suffix_size: int
    min_key_length: int
    empty_when_to_before_from: bool

    def to_store_key(self, key: bytes | None, time: int, other: int, /) -> bytes: ...

    def decode(self, data: bytes) -> StoreKeyT_co: ...

    def segment_timestamp(self, data: bytes) -> int: ...

    def segment_id(self, data: bytes, segment_interval: int) -> int: ...

    def lower_range(self, key: bytes | None, time_from: int) -> bytes | None: ...

    def upper_range(self, key: bytes | None, time_to: int) -> bytes | None: ...

    def lower_range_fixed_size(self, key: bytes | None, time_from: int) -> bytes: ...

    def upper_range_fixed_size(self, key: bytes | None, time_to: int) -> bytes: ...

    def max_suffix(self, time_to: int) -> bytes: ...

    def from_non_prefix_key(self, data: bytes) -> bytes: ...

    def segment_search_range(self, time_from: int, time_to: int) -> tuple[int, int]: ...

    def default_segment_interval(self, retention: int) -> int: ...

    def segment_readings(self) -> tuple[SegmentReading, ...]: ...

    def shown(self, data: bytes) -> tuple[bytes, dict[str, Any]]: ...


class KeySchemaBase(ABC, Generic[StoreKeyT]):
    """What a family (suffix, decoded form, fixed-size bounds) and a layout (key placement) each fill in."""

    # The family's: operation family, error format, how errors name a key, the suffix, the store's error format.
    family: str
    fmt: str
    noun: str
    suffix_size: int
    #: Suffix bytes the time-first layout writes before the key (the times it orders by).
    time_first_head: int
    store_fmt: str
    # The layout's: operation prefix, spec rule, prefix byte.
    name: str
    layout_rule: str
    prefix: int | None = None

    def __init__(self) -> None:
        # Each concrete schema class is named after the Kafka class it ports.
        self.kafka_class = type(self).__name__
        self.min_key_length = self.suffix_size + (0 if self.prefix is None else PREFIX_SIZE)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    @abstractmethod
    def to_store_key(self, key: bytes | None, time: int, other: int, /) -> bytes:
        """The store key of ``key`` and the family's two times."""

    @abstractmethod
    def decode(self, data: bytes) -> StoreKeyT:
        """Key bytes and times of a store key; input shorter than the fixed part raises DecodeError."""

    @abstractmethod
    def segment_timestamp(self, data: bytes) -> int:
        """The time whose segment holds the store key."""

    @abstractmethod
    def lower_range(self, key: bytes | None, time_from: int) -> bytes | None:
        """``lowerRange``; None stands for Kafka's null (no bound)."""

    @abstractmethod
    def upper_range(self, key: bytes | None, time_to: int) -> bytes | None:
        """``upperRange``; None stands for Kafka's null (no bound)."""

    @abstractmethod
    def lower_range_fixed_size(self, key: bytes | None, time_from: int) -> bytes:
        """``lowerRangeFixedSize``: the first store key a scan of ``key`` from ``time_from`` can meet."""

    @abstractmethod
    def upper_range_fixed_size(self, key: bytes | None, time_to: int) -> bytes:
        """``upperRangeFixedSize``: the last store key a scan of ``key`` up to ``time_to`` can meet."""

    @abstractmethod
    def from_non_prefix_key(self, data: bytes) -> bytes:
        """A plain store key rewritten in this layout."""

    @abstractmethod
    def split(self, data: bytes) -> tuple[bytes, bytes]:
        """The key bytes and the suffix bytes of a store key, after the length check."""

    @abstractmethod
    def assemble(self, key: bytes, suffix: bytes) -> bytes:
        """The store key of key bytes and suffix bytes."""

    def segment_id(self, data: bytes, segment_interval: int) -> int:
        """The segment of a store key: its segment timestamp / interval with Java truncation (WIN-15, SESS-11)."""
        if segment_interval < 1:
            raise EncodeError(self.store_fmt, "segment interval cannot be zero or negative")
        return primitives.segment_id(self.segment_timestamp(data), segment_interval)

    def check_length(self, data: bytes) -> None:
        """Refuse input shorter than the layout's fixed part, at offset 0 (WIN-4, SESS-4)."""
        if len(data) < self.min_key_length:
            raise DecodeError(
                self.fmt, f"a {self.name} {self.noun} needs at least {self.min_key_length} bytes, got {len(data)}", 0)

    def require_long(self, name: str, value: int) -> None:
        check_long(self.fmt, name, value, EncodeError)

    @abstractmethod
    def max_suffix(self, time_to: int) -> bytes:
        """The suffix of ``upperRangeFixedSize``: the greatest suffix a scan up to ``time_to`` can meet."""

    @abstractmethod
    def segment_search_range(self, time_from: int, time_to: int) -> tuple[int, int]:
        """``segmentsToSearch``: the times whose segments a fetch of ``[time_from, time_to]`` reads."""

    def default_segment_interval(self, retention: int) -> int:
        """The family's default segment interval for ``retention``: ``max(retention / 2, 60000)`` (WIN-16, SESS-11)."""
        return segment_interval_for_retention(self.fmt, self.store_fmt, retention)

    @abstractmethod
    def segment_readings(self) -> tuple[SegmentReading, ...]:
        """The ways the family's keys read in a segment's ``default`` family, its plain layout's first (LAY-5)."""

    #: ``AbstractRocksDBSegmentedBytesStore.fetch`` answers nothing when ``to < actualFrom`` for the window schema
    #: only (its ``instanceof WindowKeySchema`` check).
    empty_when_to_before_from: bool = False

    def plain_lower_range(self, key: bytes | None, time_from: int) -> bytes | None:
        self.require_long("from", time_from)
        return None if key is None else ordered_lower_range(key, bytes(self.suffix_size))

    def plain_upper_range(self, key: bytes | None, time_to: int) -> bytes | None:
        self.require_long("to", time_to)
        return None if key is None else ordered_upper_range(key, self.max_suffix(time_to))


class PlainLayout(KeySchemaBase[StoreKeyT]):
    """``[key][suffix]``, the key decoded from the end (WIN-1, SESS-1)."""

    name = "key_schema"

    def split(self, data: bytes) -> tuple[bytes, bytes]:
        self.check_length(data)
        key_end = len(data) - self.suffix_size
        return data[:key_end], data[key_end:]

    def assemble(self, key: bytes, suffix: bytes) -> bytes:
        return key + suffix

    def lower_range(self, key: bytes | None, time_from: int) -> bytes | None:
        return self.plain_lower_range(key, time_from)

    def upper_range(self, key: bytes | None, time_to: int) -> bytes | None:
        return self.plain_upper_range(key, time_to)

    def from_non_prefix_key(self, data: bytes) -> bytes:
        raise EncodeError(self.fmt, "the plain schema has no prefixed form")


class KeyFirstLayout(KeySchemaBase[StoreKeyT]):
    """``[01][key][suffix]``: the plain layout behind the key-first prefix (WIN-3, SESS-3)."""

    name = "key_first"
    prefix: int | None = KEY_FIRST_PREFIX

    def split(self, data: bytes) -> tuple[bytes, bytes]:
        self.check_length(data)
        key_end = len(data) - self.suffix_size
        return data[PREFIX_SIZE:key_end], data[key_end:]

    def assemble(self, key: bytes, suffix: bytes) -> bytes:
        return KEY_FIRST_BYTE + key + suffix

    def lower_range(self, key: bytes | None, time_from: int) -> bytes | None:
        # A null plain bound still needs the prefix: the scan starts at 0x01.
        plain = self.plain_lower_range(key, time_from)
        return KEY_FIRST_BYTE if plain is None else KEY_FIRST_BYTE + plain

    def upper_range(self, key: bytes | None, time_to: int) -> bytes | None:
        # A null plain bound still needs the prefix: the scan stops before 0x02.
        plain = self.plain_upper_range(key, time_to)
        return bytes([KEY_FIRST_PREFIX + 1]) if plain is None else KEY_FIRST_BYTE + plain

    def from_non_prefix_key(self, data: bytes) -> bytes:
        """Prepend 0x01; Kafka accepts any bytes (WIN-12, SESS-9)."""
        return KEY_FIRST_BYTE + data


class TimeFirstLayout(KeySchemaBase[StoreKeyT]):
    """``[00][suffix head][key][suffix tail]``: the times a scan orders by before the key (WIN-2, SESS-2)."""

    name = "time_first"
    prefix: int | None = TIME_FIRST_PREFIX

    def split(self, data: bytes) -> tuple[bytes, bytes]:
        self.check_length(data)
        key_start = PREFIX_SIZE + self.time_first_head
        key_end = len(data) - (self.suffix_size - self.time_first_head)
        return data[key_start:key_end], data[PREFIX_SIZE:key_start] + data[key_end:]

    def assemble(self, key: bytes, suffix: bytes) -> bytes:
        return TIME_FIRST_BYTE + suffix[: self.time_first_head] + key + suffix[self.time_first_head :]

    def from_non_prefix_key(self, data: bytes) -> bytes:
        """Move the plain key's suffix head before its key; the input needs the whole suffix (WIN-12, SESS-9)."""
        if len(data) < self.suffix_size:
            raise DecodeError(
                self.fmt, f"a plain {self.noun} needs at least {self.suffix_size} bytes, got {len(data)}", 0)
        key_end = len(data) - self.suffix_size
        return self.assemble(data[:key_end], data[key_end:])




# --- OrderedBytes -----------------------------------------------------------------------------------


def ordered_upper_range(key: bytes, max_suffix: bytes) -> bytes:
    """``OrderedBytes.upperRange`` (WIN-11, SESS-8): the first key byte, then key bytes while >= max_suffix[0]."""
    first_suffix_byte = max_suffix[0]
    kept = 0
    while kept < len(key) and (kept < 1 or key[kept] >= first_suffix_byte):
        kept += 1
    return key[:kept] + max_suffix


def ordered_lower_range(key: bytes, min_suffix: bytes) -> bytes:
    """``OrderedBytes.lowerRange``: the whole key followed by the minimal suffix (WIN-10, SESS-7)."""
    return key + min_suffix


def segment_interval_for_retention(fmt: str, store_fmt: str, retention: int) -> int:
    """The default segment interval of window and session stores: ``max(retention / 2, 60000)`` (WIN-16, SESS-11)."""
    check_long(fmt, "retention", retention, EncodeError)
    if retention < 0:
        raise EncodeError(store_fmt, "retention period cannot be negative")
    return max(primitives.java_div(retention, 2), MIN_SEGMENT_INTERVAL_DEFAULT)


# --- argument checks --------------------------------------------------------------------------------


def validate_window_bounds(start: int, end: int, error: type[CodecError]) -> None:
    """``Window``'s constructor checks, for time and session windows alike: start >= 0 and end >= start (WIN-8,
    SESS-4)."""
    if start < 0:
        raise error("window", "window start cannot be negative")
    if end < start:
        raise error("window", "window end cannot be smaller than window start")


def check_long(fmt: str, name: str, value: int, error: type[CodecError]) -> None:
    """Refuse anything but a Java ``long`` as ``error`` naming ``name``."""
    if not isinstance(value, int) or isinstance(value, bool) or not INT64_MIN <= value <= INT64_MAX:
        raise error(fmt, f"{name} must be a Java long, got {value!r}")


def check_int(fmt: str, name: str, value: int, error: type[CodecError]) -> None:
    """Refuse anything but a Java ``int`` as ``error`` naming ``name``."""
    if not isinstance(value, int) or isinstance(value, bool) or not INT32_MIN <= value <= INT32_MAX:
        raise error(fmt, f"{name} must be a Java int, got {value!r}")


def encode_long(fmt: str, name: str, value: int) -> bytes:
    check_long(fmt, name, value, EncodeError)
    return encode_int64(value)


def encode_int(fmt: str, name: str, value: int) -> bytes:
    check_int(fmt, name, value, EncodeError)
    return encode_int32(value)


# --- the segmented families' schemas, found by module name ------------------------------------------------------


@functools.cache
def segmented_families() -> dict[str, tuple[KeySchema[object], ...]]:
    """Every segmented family's layouts (its ``SCHEMAS``, plain first), by family name (WIN-1..3, SESS-1..3).

    Each family's key module is ``kstate.codecs.<name>_keys`` and is imported by its name, so a new segmented
    family's key module needs no line here; a module whose schemas disagree on their family is refused. Read once:
    the modules do not change while a process runs (callers must not change the answer).
    """
    import importlib
    import pkgutil

    import kstate.codecs as package

    found: dict[str, tuple[KeySchema[object], ...]] = {}
    for module_info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if not module_info.name.endswith("_keys"):
            continue
        schemas: tuple[KeySchema[object], ...] = importlib.import_module(f"{package.__name__}.{module_info.name}").SCHEMAS
        families = {schema.family for schema in schemas}
        if len(families) != 1 or next(iter(families)) in found:
            raise RuntimeError(f"kstate.codecs.{module_info.name}: SCHEMAS must name one family of its own: {families}")
        found[next(iter(families))] = schemas
    return found


def segmented_schemas() -> dict[str, tuple[KeySchema[object], ...]]:
    """:func:`segmented_families`, a copy the caller may change."""
    return dict(segmented_families())


def plain_schema(family: str) -> KeySchema[object]:
    """The plain layout ``[key][suffix]`` of segmented family ``family`` (WIN-1, SESS-1).

    A family with no key module is refused with :class:`~kstate.codecs.store_types.UnknownFamilyError`."""
    schemas = segmented_families().get(getattr(family, "value", family))
    if schemas is None:
        raise UnknownFamilyError(family, "key_schemas.plain_schema")
    return schemas[0]
