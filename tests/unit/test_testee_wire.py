"""The reference testee under hostile lines (TP-11) and texts that are not Unicode (TP-12), in process."""

from __future__ import annotations

import io
import json

import pytest

from kstate.testee import serve
from kstate.testee_wire import MAX_LINE_BYTES, WireError, decode_texts, encode_texts, read_line

rules = pytest.mark.rules


class _Endless(io.RawIOBase):
    """A raw stream of ``size`` bytes of ``a`` then a newline and ``tail``, produced on demand (never held)."""

    def __init__(self, size: int, tail: bytes) -> None:
        self.left = size
        self.tail = b"\n" + tail
        self.largest_read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray) -> int:  # type: ignore[override]
        self.largest_read = max(self.largest_read, len(buffer))
        if self.left > 0:
            n = min(len(buffer), self.left)
            buffer[:n] = b"a" * n
            self.left -= n
            return n
        n = min(len(buffer), len(self.tail))
        buffer[:n] = self.tail[:n]
        self.tail = self.tail[n:]
        return n


def _answers(stdin: io.BufferedIOBase) -> list[dict[str, object]]:
    out = io.BytesIO()
    assert serve(stdin, out) == 0
    return [json.loads(line) for line in out.getvalue().splitlines()]


@rules("TP-11", "TP-7")
def test_every_hostile_line_gets_a_typed_answer_and_serving_goes_on() -> None:
    lines = [b'{"id":1,"op":["a"],"input":{}}', b'{"id":2,"op":{"a":1},"input":{}}',
             b'{"id":3,"op":"x.y","input":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
             b'{"id":NaN,"op":"x.y","input":{}}', b'{"id":Infinity,"op":"x.y","input":{}}',
             b'{"id":1.5,"op":"x.y","input":{}}', b'{"id":true,"op":"hello","input":{"protocol":1}}',
             b'{"id":4,"op":"hello","input":{"protocol":true}}',
             b'\xff', b'{"id":9,"op":"no.such_op","input":{}}']
    answers = _answers(io.BytesIO(b"\n".join(lines) + b"\n"))
    assert [a["id"] for a in answers] == [1, 2, None, None, None, None, None, 4, None, 9]
    kinds = [a.get("internal_error", a.get("error", {})).get("type") for a in answers[:-1]]  # type: ignore[attr-defined]
    assert kinds == ["BadOp", "BadOp", "NestingTooDeep", "NotJson", "NotJson", "BadId", "BadId",
                     "ProtocolVersion", "NotJson"]
    assert answers[-1] == {"id": 9, "unsupported": True, "reason": "no operation 'no.such_op'"}


@rules("TP-11")
def test_an_overlong_line_is_read_in_bounded_pieces_and_refused() -> None:
    raw = _Endless(MAX_LINE_BYTES + (8 << 20), b'{"id":5,"op":"no.such_op","input":{}}\n')
    answers = _answers(io.BufferedReader(raw, buffer_size=1 << 16))
    assert answers[0]["id"] is None and answers[0]["internal_error"]["type"] == "LineTooLong"  # type: ignore[index]
    assert answers[1]["id"] == 5 and answers[1]["unsupported"] is True


@rules("TP-11")
def test_read_line_keeps_a_last_line_without_newline_and_refuses_a_long_one() -> None:
    assert read_line(io.BytesIO(b"abc")) == b"abc"
    stream = io.BytesIO(b"x" * 11 + b"\nnext\n")
    with pytest.raises(WireError, match="longer than 10"):
        read_line(stream, limit=10)
    assert read_line(stream) == b"next"


@rules("TP-12", "HV-16")
def test_a_key_with_a_lone_surrogate_round_trips_as_utf16_hex_through_the_reference() -> None:
    request = {"id": 1, "op": "header_values.serialize_headers", "input": {"headers": [["a\ud800b", None]]}}
    line = json.dumps(encode_texts(request)).encode()
    assert b"\\ud800" not in line and b'"0061d8000062"' in line
    assert _answers(io.BytesIO(line + b"\n")) == [{"id": 1, "output": {"bytes": "0206613f6201"}}]
    assert decode_texts(encode_texts(["\ud83d", "é"])) == ["\ud83d", "é"]
    assert encode_texts("\U0001f600") == "\U0001f600"
