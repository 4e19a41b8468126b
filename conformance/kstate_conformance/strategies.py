"""Hypothesis strategies the property tests share: Java ints, timestamps, byte strings, header lists.

They draw plain Python values (ints, bytes, str); a test turns them into the neutral vocabulary's hex. Store types
are the suite's table's (``store_types``), not kept here: the family models import this module while that table is
built from them.
"""

from __future__ import annotations

from typing import TypeVar

from hypothesis import strategies as st

K = TypeVar("K")
V = TypeVar("V")

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

#: A Java int.
INT32 = st.integers(min_value=INT32_MIN, max_value=INT32_MAX)
#: A Java long.
INT64 = st.integers(min_value=INT64_MIN, max_value=INT64_MAX)
NON_NEGATIVE_INT32 = st.integers(min_value=0, max_value=INT32_MAX)
#: A record's timestamp: any non-negative long.
TIMESTAMPS = st.integers(min_value=0, max_value=INT64_MAX)
NEGATIVE_INT64 = st.integers(min_value=INT64_MIN, max_value=-1)


def nullable_binary(max_size: int) -> st.SearchStrategy[bytes | None]:
    """``None`` or up to ``max_size`` bytes."""
    return st.none() | st.binary(max_size=max_size)


def hex_binary(max_size: int) -> st.SearchStrategy[str]:
    """Up to ``max_size`` bytes, as the hex string the operations take."""
    return st.binary(max_size=max_size).map(bytes.hex)


def header_lists(keys: st.SearchStrategy[K], values: st.SearchStrategy[V], *, max_size: int,
                 min_size: int = 0) -> st.SearchStrategy[list[tuple[K, V]]]:
    """Lists of (key, value) header pairs, duplicates and order as drawn."""
    return st.lists(st.tuples(keys, values), min_size=min_size, max_size=max_size)
