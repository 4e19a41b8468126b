"""Value facades over the bytes stores: Kafka's ``KeyValueStore``, ``TimestampedKeyValueStore`` and
``TimestampedKeyValueStoreWithHeaders`` with byte keys and decoded values (spec/kv-stores.md KV-60..KV-62).

``TimestampedKeyValueStore`` reads and writes ``(value, timestamp)`` pairs (Kafka's ``ValueAndTimestamp``);
``TimestampedKeyValueStoreWithHeaders`` reads :class:`ValueTimestampHeaders` whose header bytes are
parsed only when ``.headers`` is read (HV-10), and writes ``(value, timestamp, headers)``. A None
value, as in Kafka's ``make(null, ...)``, is a delete. The wrapped store is any
:class:`~kstate.stores.api.KeyValueBytesStore` of the matching layout (``inner``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import Generic, TypeVar

from kstate.codecs.header_values import (
    HeaderInput,
    ValueTimestampHeaders,
    decode_value_timestamp_headers,
    encode_value_timestamp_headers,
    raw_value_of,
)
from kstate.codecs.timestamped import decode_value_and_timestamp, encode_value_and_timestamp, raw_value
from kstate.stores.api import KeyValueBytesStore, KeyValueIterator
from kstate.stores.wrapping import WrappedStore

V = TypeVar("V")
ValueAndTimestamp = tuple[bytes, int]


class TypedIterator(Generic[V]):
    """A ``KeyValueIterator`` yielding ``(key, decoded value)``; values are decoded as they are read."""

    def __init__(self, inner: KeyValueIterator, decode: Callable[[bytes], V]) -> None:
        self._inner = inner
        self._decode = decode

    def __iter__(self) -> TypedIterator[V]:
        return self

    def __next__(self) -> tuple[bytes, V]:
        key, value = next(self._inner)
        return key, self._decode(value)

    def peek_next_key(self) -> bytes | None:
        return self._inner.peek_next_key()

    def close(self) -> None:
        self._inner.close()

    def __enter__(self) -> TypedIterator[V]:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class _Facade(WrappedStore[KeyValueBytesStore], Generic[V]):
    """The reads and iterators shared by the facades (the life-cycle is the wrapped store's); ``_decode`` turns
    stored bytes into ``V``."""

    def _decode(self, data: bytes) -> V:
        raise NotImplementedError

    def _decode_optional(self, data: bytes | None) -> V | None:
        return None if data is None else self._decode(data)

    def get(self, key: bytes) -> V | None:
        """The decoded value or None (KV-5)."""
        return self._decode_optional(self.inner.get(key))

    def delete(self, key: bytes) -> V | None:
        """Remove the key; returns the decoded old value (KV-8)."""
        return self._decode_optional(self.inner.delete(key))

    def range(self, from_key: bytes | None, to_key: bytes | None) -> TypedIterator[V]:
        return TypedIterator(self.inner.range(from_key, to_key), self._decode)

    def reverse_range(self, from_key: bytes | None, to_key: bytes | None) -> TypedIterator[V]:
        return TypedIterator(self.inner.reverse_range(from_key, to_key), self._decode)

    def all(self) -> TypedIterator[V]:
        return TypedIterator(self.inner.all(), self._decode)

    def reverse_all(self) -> TypedIterator[V]:
        return TypedIterator(self.inner.reverse_all(), self._decode)

    def prefix_scan(self, prefix: bytes) -> TypedIterator[V]:
        return TypedIterator(self.inner.prefix_scan(prefix), self._decode)

    def approximate_num_entries(self) -> int:
        return self.inner.approximate_num_entries()


class KeyValueStore(_Facade[bytes]):
    """Kafka's ``KeyValueStore<Bytes, byte[]>``: values are the stored bytes (KV-60)."""

    def _decode(self, data: bytes) -> bytes:
        return data

    def put(self, key: bytes, value: bytes | None) -> None:
        self.inner.put(key, value)

    def put_if_absent(self, key: bytes, value: bytes | None) -> bytes | None:
        return self.inner.put_if_absent(key, value)

    def put_all(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        self.inner.put_all(entries)


class TimestampedKeyValueStore(_Facade[ValueAndTimestamp]):
    """Kafka's ``TimestampedKeyValueStore``: values as ``(value, timestamp)`` over ``[ts][value]`` (KV-61, TSKV-1)."""

    def _decode(self, data: bytes) -> ValueAndTimestamp:
        decoded = decode_value_and_timestamp(data)
        assert decoded is not None
        return decoded

    def put(self, key: bytes, value: bytes | None, timestamp: int) -> None:
        """``put(key, ValueAndTimestamp.make(value, timestamp))``: a None value deletes (TSKV-2)."""
        self.inner.put(key, encode_value_and_timestamp(value, timestamp))

    def put_if_absent(self, key: bytes, value: bytes | None, timestamp: int) -> ValueAndTimestamp | None:
        return self._decode_optional(self.inner.put_if_absent(key, encode_value_and_timestamp(value, timestamp)))

    def put_all(self, entries: Sequence[tuple[bytes, ValueAndTimestamp | None]]) -> None:
        self.inner.put_all(
            [(key, None if vt is None else encode_value_and_timestamp(vt[0], vt[1])) for key, vt in entries]
        )

    def values(self) -> Iterator[bytes]:
        """A value-only full scan: the raw value of every entry, the timestamp skipped unread."""
        iterator = self.inner.all()
        try:
            for _key, data in iterator:
                yield data[8:] if len(data) >= 8 else raw_value(data)  # raw_value refuses the short ones
        finally:
            iterator.close()


class TimestampedKeyValueStoreWithHeaders(_Facade[ValueTimestampHeaders]):
    """KIP-1271 ``TimestampedKeyValueStoreWithHeaders``: values as :class:`ValueTimestampHeaders`, headers
    parsed only when read (KV-62, HV-10)."""

    def _decode(self, data: bytes) -> ValueTimestampHeaders:
        decoded = decode_value_timestamp_headers(data)
        assert decoded is not None
        return decoded

    def put(self, key: bytes, value: bytes | None, timestamp: int, headers: HeaderInput = None) -> None:
        """``put(key, ValueTimestampHeaders.make(value, timestamp, headers))``: a None value deletes (HV-7)."""
        self.inner.put(key, encode_value_timestamp_headers(value, timestamp, headers))

    def put_if_absent(
        self, key: bytes, value: bytes | None, timestamp: int, headers: HeaderInput = None
    ) -> ValueTimestampHeaders | None:
        encoded = encode_value_timestamp_headers(value, timestamp, headers)
        return self._decode_optional(self.inner.put_if_absent(key, encoded))

    def put_all(self, entries: Sequence[tuple[bytes, ValueTimestampHeaders | None]]) -> None:
        self.inner.put_all([(key, None if vth is None else vth.to_bytes()) for key, vth in entries])

    def values(self) -> Iterator[bytes]:
        """A value-only full scan: header bytes and timestamp are skipped unparsed (HV-10)."""
        iterator = self.inner.all()
        try:
            starts = _VALUE_START
            for _key, data in iterator:
                # Inlined fast path of _value_of_headers_value; 0 sends the rare cases to the full decoder.
                try:
                    start = starts[data[0]]
                except IndexError:  # an empty value: the full decoder refuses it
                    start = 0
                if start and start <= len(data):
                    yield data[start:]
                else:
                    yield _value_of_headers_value(data)
        finally:
            iterator.close()


#: By the first byte of a headers value: where the raw value starts when that byte is a whole zig-zag
#: varint of a non-negative headersSize (varint byte + header bytes + 8 timestamp bytes), else 0.
_VALUE_START = tuple((first >> 1) + 9 if first < 0x80 and not first & 1 else 0 for first in range(256))


def _value_of_headers_value(data: bytes) -> bytes:
    """``raw_value_of`` with a fast path for a one-byte, non-negative ``headersSize`` (headers under 64 bytes)."""
    first = data[0] if data else 0x80
    if first < 0x80 and not first & 1:
        start = (first >> 1) + 9  # the varint byte, the header bytes, the 8 timestamp bytes
        if start <= len(data):
            return data[start:]
    value = raw_value_of(data)
    assert value is not None
    return value
