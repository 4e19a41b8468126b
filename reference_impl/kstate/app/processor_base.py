"""What every family's processor shares (:mod:`kstate.app.processors` finds each family's own in
``kstate.app.<family>_processor``): the options' checks, the stored values, the windowed aggregate.

The aggregate of the windowed processors is ``b"<count>:<last value>"``: the number of records aggregated and the
value of the last one, so that a test can tell a lost record from a late one (INST-25). Records with a null value
are skipped by them before anything is read or written: Kafka's processors skip only a null key and hand a null
value to the aggregator, and this application's aggregation ignores it (a choice of the application, not a rule
of the stores).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol

from kstate.codecs.store_types import STORE_TYPES, VALUE_DECODERS, Family, StoredValue, StoreType, encode_stored_value
from kstate.errors import KStateError

Headers = tuple[tuple[str, bytes | None], ...]
#: ``ConsumerRecord.NO_TIMESTAMP``: a processor's observed stream time before its first record.
NO_TIMESTAMP = -1


class ProcessorConfigError(KStateError, ValueError):
    """A processor option that is unknown, missing or out of range; ``option`` names it."""

    def __init__(self, option: str, message: str) -> None:
        self.option = option
        super().__init__(f"processor option {option!r}: {message}")


# --- stored values ---------------------------------------------------------------------------------------------


def decode_stored(store_type: StoreType, data: bytes) -> StoredValue:
    """``data`` in ``store_type``'s value layout, taken apart."""
    value_format = STORE_TYPES[StoreType(store_type)].value_format
    if value_format is None:
        raise ProcessorConfigError("store_type", f"{StoreType(store_type).value} has no value layout")
    return VALUE_DECODERS[value_format](data)


def encode_stored(store_type: StoreType, value: bytes, timestamp: int, headers: Headers) -> bytes:
    out = encode_stored_value(store_type, value, timestamp, list(headers))
    assert out is not None
    return out


# --- the aggregate ---------------------------------------------------------------------------------------------


def aggregate(count: int, last_value: bytes) -> bytes:
    """The windowed processors' aggregate: ``b"<count>:<last value>"``."""
    return b"%d:" % count + last_value


def parse_aggregate(data: bytes) -> tuple[int, bytes]:
    """``(count, last value)`` of an aggregate."""
    count, _, last = data.partition(b":")
    return int(count), last


# --- processors --------------------------------------------------------------------------------------------------


class Processor(Protocol):
    """Applies one input record to a task's store (the change-logging layer, so every write is logged)."""

    def process(self, key: bytes, value: bytes | None, timestamp: int, headers: Headers) -> None: ...


def option(options: Mapping[str, int], name: str, default: int | None = None) -> int:
    """The non-negative int option ``name`` (``default`` when absent; required when that is None too)."""
    value = options.get(name, default)
    if value is None:
        raise ProcessorConfigError(name, "required")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ProcessorConfigError(name, f"expected a non-negative int, got {value!r:.80}")
    return value


def _check_known(options: Mapping[str, Any], known: tuple[str, ...]) -> None:
    for name in options:
        if name not in known:
            raise ProcessorConfigError(name, f"not an option of this processor (accepted: {', '.join(known) or 'none'})")


class ProcessorBase(ABC):
    """A processor's store (the change-logging layer) and store type; its own options checked by name.

    A family's processor names its ``FAMILY`` and the store and processor options ``kstate demo`` runs it with
    (:mod:`kstate.app.demo`; ``kstate audit`` must be told the same store options, which the directory does not
    record)."""

    FAMILY: ClassVar[Family]
    OPTIONS: ClassVar[tuple[str, ...]] = ()
    DEMO_STORE_OPTIONS: ClassVar[Mapping[str, Any]] = {}
    DEMO_PROCESSOR_OPTIONS: ClassVar[Mapping[str, int]] = {}

    def __init__(self, store: Any, store_type: StoreType, store_options: Mapping[str, Any],
                 options: Mapping[str, int]) -> None:
        _check_known(options, self.OPTIONS)
        self.store = store
        self.store_type = store_type

    @abstractmethod
    def process(self, key: bytes, value: bytes | None, timestamp: int, headers: Headers) -> None:
        """Apply one input record to the store (:class:`Processor`)."""


class WindowedAggregation(ProcessorBase):
    """What the windowed aggregations keep: the processor's own observed stream time (not the store's, and not
    persisted: -1 again after a restart, as in Kafka) and the count of records dropped for a closed window."""

    def __init__(self, store: Any, store_type: StoreType, store_options: Mapping[str, Any],
                 options: Mapping[str, int]) -> None:
        super().__init__(store, store_type, store_options, options)
        self.observed_stream_time = NO_TIMESTAMP
        self.dropped = 0

    def process(self, key: bytes, value: bytes | None, timestamp: int, headers: Headers) -> None:
        """A null value is skipped before anything is read or written (see the module); any other record advances
        the observed stream time, then is aggregated."""
        if value is None:
            return
        self.observed_stream_time = max(self.observed_stream_time, timestamp)
        self.aggregate_record(key, value, timestamp, headers)

    @abstractmethod
    def aggregate_record(self, key: bytes, value: bytes, timestamp: int, headers: Headers) -> None:
        """Add the record to its window's or session's aggregate, the observed stream time already advanced by it;
        a record for a closed one is counted in ``dropped``, not written."""
