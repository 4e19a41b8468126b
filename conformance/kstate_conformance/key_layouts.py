"""The window and session store-key layouts as the spec draws them (WIN-1..3, SESS-1..3), for the properties.

Written from the rule text, independent of the reference. The window and session property modules run
each per-schema property once per layout of :data:`LAYOUTS`; an operation is ``<family>.<layout name>.<op>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest


@dataclass(frozen=True)
class KeyLayout:
    """One layout: its operation prefix, its prefix byte, and whether the times come before the key."""

    name: str
    prefix: bytes
    time_first: bool

    def store_key(self, key: bytes, head: bytes, tail: bytes = b"") -> bytes:
        """``[prefix][key][head][tail]``; time-first writes its head before the key: ``[00][head][key][tail]``."""
        if self.time_first:
            return self.prefix + head + key + tail
        return self.prefix + key + head + tail


PLAIN = KeyLayout("key_schema", b"", time_first=False)
TIME_FIRST = KeyLayout("time_first", b"\x00", time_first=True)
KEY_FIRST = KeyLayout("key_first", b"\x01", time_first=False)
LAYOUTS = (PLAIN, TIME_FIRST, KEY_FIRST)
PREFIXED = (TIME_FIRST, KEY_FIRST)
#: The layouts whose upper bound truncates the key with ``OrderedBytes.upperRange`` (WIN-11, SESS-8).
KEY_ORDERED = (PLAIN, KEY_FIRST)


def each_layout(layouts: tuple[KeyLayout, ...] = LAYOUTS) -> Any:
    """Parametrize a property over ``layouts``, each test id the layout's name."""
    return pytest.mark.parametrize("layout", layouts, ids=[layout.name for layout in layouts])


def long_bytes(value: int) -> bytes:
    return value.to_bytes(8, "big", signed=True)


def int_bytes(value: int) -> bytes:
    return value.to_bytes(4, "big", signed=True)


def ranges(codec: Any, family: str, layout: KeyLayout, key: bytes | None, time: int) -> dict[str, Any]:
    """The four range bounds the implementation gives for (key, time)."""
    out: dict[str, Any] = codec.call(
        f"{family}.{layout.name}.ranges", {"key": None if key is None else key.hex(), "time": time})
    return out


def bound(out: dict[str, Any], name: str) -> bytes:
    return bytes.fromhex(out[name]["bytes"])


def is_error(out: Any) -> bool:
    return isinstance(out, dict) and "error" in out
