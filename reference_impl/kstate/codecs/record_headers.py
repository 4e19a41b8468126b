"""Record headers with KIP-82 semantics (spec/record-headers.md, HDR-*).

An ordered list of ``(key, value)`` pairs: duplicate keys are allowed, a value may be ``None``,
keys are text. ``Headers`` is mutable until :meth:`Headers.set_read_only`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from kstate.errors import KStateError


class HeadersReadOnlyError(KStateError):
    """A write to headers after ``set_read_only`` (Kafka: ``IllegalStateException``), HDR-6."""


class NullHeaderKeyError(KStateError, ValueError):
    """A null header key (Kafka: NPE on add, ``IllegalArgumentException`` on lookups), HDR-2."""


@dataclass(frozen=True, slots=True)
class Header:
    """One record header; ``value`` None is a null header value, distinct from empty (HDR-3)."""

    key: str
    value: bytes | None

    def __post_init__(self) -> None:
        if self.key is None:
            raise NullHeaderKeyError("Null header keys are not permitted")


class Headers:
    """``RecordHeaders``: ordered, duplicates kept, insertion order preserved (HDR-1)."""

    __slots__ = ("_items", "_read_only")

    def __init__(self, items: Iterable[Header | tuple[str, bytes | None]] = ()) -> None:
        self._items: list[Header] = [h if isinstance(h, Header) else Header(h[0], h[1]) for h in items]
        self._read_only = False

    def add(self, key: str, value: bytes | None) -> Headers:
        """Append a header at the end (HDR-1); refused once read-only (HDR-6).

        As ``add(new RecordHeader(key, value))``, a null key is refused before the read-only check.
        """
        header = Header(key, value)
        self._check_writable()
        self._items.append(header)
        return self

    def remove(self, key: str) -> Headers:
        """Remove every header with ``key`` (HDR-4); the read-only check comes first (HDR-6)."""
        self._check_writable()
        self._check_key(key)
        self._items = [h for h in self._items if h.key != key]
        return self

    def last_header(self, key: str) -> Header | None:
        """The last header with ``key``, or None (HDR-4)."""
        self._check_key(key)
        for header in reversed(self._items):
            if header.key == key:
                return header
        return None

    def headers(self, key: str) -> list[Header]:
        """Every header with ``key``, in insertion order (HDR-4)."""
        self._check_key(key)
        return [h for h in self._items if h.key == key]

    def set_read_only(self) -> None:
        """Freeze the headers, as ``KafkaProducer.send`` does (HDR-6)."""
        self._read_only = True

    @property
    def read_only(self) -> bool:
        return self._read_only

    def to_list(self) -> list[tuple[str, bytes | None]]:
        """The headers as ``(key, value)`` pairs in order."""
        return [(h.key, h.value) for h in self._items]

    def __iter__(self) -> Iterator[Header]:
        return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        # RecordHeaders.equals: order and duplicates matter (HDR-5).
        return isinstance(other, Headers) and self._items == other._items

    def __hash__(self) -> int:
        return hash(tuple(self._items))

    def __repr__(self) -> str:
        return f"Headers({self.to_list()!r})"

    def _check_writable(self) -> None:
        if self._read_only:
            raise HeadersReadOnlyError("RecordHeaders has been closed.")

    @staticmethod
    def _check_key(key: str | None) -> None:
        if key is None:
            raise NullHeaderKeyError("key cannot be null.")
