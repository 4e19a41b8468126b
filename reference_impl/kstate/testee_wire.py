"""One line of the testee protocol, read and written by both sides (spec/testee-protocol.md, TP-1, TP-11, TP-12).

A line is bounded (:data:`MAX_LINE_BYTES`), nested at most :data:`MAX_NESTING_DEPTH` deep, strict JSON (no
``NaN`` or ``Infinity``), UTF-8; a string that is not valid Unicode (a Java ``String`` holding an unpaired
surrogate) travels as ``{"encoding": "utf-16be", "hex": ...}`` so that any JSON library can carry it (TP-12).
Nothing here knows an operation: the translation applies to every value of every message.
"""

from __future__ import annotations

import json
from typing import IO, Any

from kstate.errors import KStateError

#: The longest line either side accepts, newline excluded (TP-11).
MAX_LINE_BYTES = 16 * 1024 * 1024
#: The deepest nesting of arrays and objects either side accepts; the top-level object is depth 1 (TP-11).
MAX_NESTING_DEPTH = 64
#: The declared encoding of a string that is not valid Unicode (TP-12).
TEXT_ENCODING = "utf-16be"
_ENCODED_TEXT_MEMBERS = frozenset({"encoding", "hex"})


class WireError(KStateError):
    """A line that is not a well-formed protocol message; ``kind`` is the error's type on the wire."""

    def __init__(self, kind: str, message: str) -> None:
        self.kind = kind
        super().__init__(message)


def read_line(stream: IO[bytes], limit: int = MAX_LINE_BYTES) -> bytes | None:
    """The next line (without its newline), None at end of input; a longer line is consumed and refused.

    Memory stays bounded by ``limit``: the rest of an overlong line is read and dropped in pieces.
    """
    line = stream.readline(limit + 1)
    if not line:
        return None
    if line.endswith(b"\n"):
        return line[:-1]
    if len(line) <= limit:
        return line  # the last line, without a newline
    while True:
        rest = stream.readline(1 << 20)
        if not rest or rest.endswith(b"\n"):
            break
    raise WireError("LineTooLong", f"a line longer than {limit} bytes (TP-11)")


def _refuse_constant(name: str) -> Any:
    raise WireError("NotJson", f"{name} is not JSON (TP-1)")


def _nesting_problem(value: Any) -> str | None:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > MAX_NESTING_DEPTH:
                return f"nested deeper than {MAX_NESTING_DEPTH} levels (TP-11)"
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return None


def loads_line(line: bytes, max_bytes: int = MAX_LINE_BYTES) -> Any:
    """The message of one line, with encoded texts decoded; :class:`WireError` for anything TP-1/TP-11 refuse."""
    if len(line) > max_bytes:
        raise WireError("LineTooLong", f"a line longer than {max_bytes} bytes (TP-11)")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WireError("NotJson", f"the line is not UTF-8: {exc} (TP-1)") from None
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise WireError("NestingTooDeep", f"nested deeper than {MAX_NESTING_DEPTH} levels (TP-11)") from None
    except ValueError as exc:
        raise WireError("NotJson", f"the line is not JSON: {exc}") from None
    problem = _nesting_problem(value)
    if problem:
        raise WireError("NestingTooDeep", problem)
    return decode_texts(value)


def dumps_line(message: Any) -> bytes:
    """One line for ``message`` (newline included), texts that are not Unicode encoded (TP-12)."""
    try:
        text = json.dumps(encode_texts(message), separators=(",", ":"), allow_nan=False, ensure_ascii=True)
    except (TypeError, ValueError) as exc:
        raise WireError("NotJson", f"the message is not JSON: {exc}") from None
    return text.encode("ascii") + b"\n"


def is_unicode(text: str) -> bool:
    """True unless ``text`` holds a surrogate code point (a lone one, or half of a pair kept as two)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def encode_text(text: str) -> dict[str, str]:
    """The TP-12 form of a string that is not valid Unicode: its UTF-16 code units, big-endian, in hex."""
    return {"encoding": TEXT_ENCODING, "hex": text.encode("utf-16-be", "surrogatepass").hex()}


def encode_texts(value: Any) -> Any:
    """``value`` with every string that is not valid Unicode replaced by its TP-12 form."""
    if isinstance(value, str):
        return value if is_unicode(value) else encode_text(value)
    if isinstance(value, dict):
        for key in value:
            if isinstance(key, str) and not is_unicode(key):
                raise WireError("NotJson", f"a member name that is not Unicode: {key!r} (TP-12)")
        return {key: encode_texts(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode_texts(item) for item in value]
    return value


def _decoded_text(value: dict[str, Any]) -> str | None:
    if set(value) != _ENCODED_TEXT_MEMBERS or value["encoding"] != TEXT_ENCODING:
        return None
    units = value["hex"]
    if not isinstance(units, str):
        raise WireError("BadText", "an encoded text's hex is not a string (TP-12)")
    try:
        raw = bytes.fromhex(units)
    except ValueError:
        raise WireError("BadText", f"an encoded text's hex is not hex: {units[:40]!r} (TP-12)") from None
    if len(raw) % 2 or len(units) % 2:
        raise WireError("BadText", "an encoded text's hex is not whole UTF-16 code units (TP-12)")
    return raw.decode("utf-16-be", "surrogatepass")


def decode_texts(value: Any) -> Any:
    """``value`` with every TP-12 encoded text turned back into a string (lone surrogates and all)."""
    if isinstance(value, dict):
        text = _decoded_text(value)
        if text is not None:
            return text
        return {key: decode_texts(item) for key, item in value.items()}
    if isinstance(value, list):
        return [decode_texts(item) for item in value]
    return value
