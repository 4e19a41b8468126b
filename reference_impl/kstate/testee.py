"""The reference implementation as an out-of-process testee: JSON lines on stdin/stdout (spec/testee-protocol.md).

Run it with ``python -m kstate.testee`` or ``kstate testee``; the conformance suite drives it with
``kstate conformance --impl "cmd:python -m kstate.testee"``. Every registered operation (spec/ops.md),
the ``store.*`` operations with their handles included, is answered (TP-4); anything else is
``unsupported`` (TP-5).
"""

from __future__ import annotations

import contextlib
import sys
import traceback
from typing import IO, Any

from kstate.testee_wire import WireError, dumps_line, loads_line, read_line

PROTOCOL_VERSION = 1
IMPLEMENTATION = "kstate-reference"


def _bad_request(request_id: Any, kind: str, message: str) -> dict[str, Any]:
    """A typed ``internal_error`` for a line that is not a request the testee can process (TP-7, TP-11)."""
    return {"id": request_id, "internal_error": {"type": kind, "message": message}}


def _request_id(message: Any) -> int | None:
    """The request's id when it is one the protocol allows (a non-negative integer), else None (TP-2)."""
    request_id = message.get("id") if isinstance(message, dict) else None
    if isinstance(request_id, int) and not isinstance(request_id, bool) and request_id >= 0:
        return request_id
    return None


def _answer(message: Any, operations: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The response to one decoded request, and whether to stop after sending it."""
    from kstate.ops import call

    request_id = _request_id(message)
    if not isinstance(message, dict) or "op" not in message or "id" not in message:
        return _bad_request(request_id, "NotARequest", "not a request: expected an object with id, op and input"), False
    if request_id is None:
        return _bad_request(None, "BadId", f"the request id {message['id']!r} is not a non-negative integer"), False
    name, payload = message["op"], message.get("input", {})
    if not isinstance(name, str):
        return _bad_request(request_id, "BadOp", f"the op must be a string, not {type(name).__name__}"), False
    if name == "hello":
        version = payload.get("protocol") if isinstance(payload, dict) else None
        if version != PROTOCOL_VERSION or isinstance(version, bool):
            return {"id": request_id, "error": {"type": "ProtocolVersion",
                                                "message": f"this testee speaks protocol {PROTOCOL_VERSION}, "
                                                           f"not {version!r}"}}, False
        from kstate import __version__

        return {"id": request_id, "output": {"protocol": PROTOCOL_VERSION, "implementation": IMPLEMENTATION,
                                             "version": __version__, "capabilities": sorted(operations)}}, False
    if name == "shutdown":
        return {"id": request_id, "output": {}}, True
    if name not in operations:
        return {"id": request_id, "unsupported": True, "reason": f"no operation {name[:200]!r}"}, False
    if not isinstance(payload, dict):
        return _bad_request(request_id, "BadInput", "input must be a JSON object"), False
    try:
        output = call(name, payload)
    except Exception as exc:  # a bug of the reference: reported, never disguised as a refusal (TP-7)
        return {"id": request_id, "internal_error": {"type": type(exc).__name__, "message": str(exc),
                                                     "traceback": traceback.format_exc()}}, False
    if set(output) == {"error"}:
        return {"id": request_id, "error": output["error"]}, False
    return {"id": request_id, "output": output}, False


def serve(stdin: IO[bytes], stdout: IO[bytes]) -> int:
    """Answer requests from ``stdin`` on ``stdout`` until ``shutdown`` or end of input (TP-1..TP-12).

    Every line gets one answer and the testee keeps serving, whatever the line holds (TP-7, TP-11).
    """
    from kstate.ops import load_all

    operations = dict(load_all())
    while True:
        stop = False
        try:
            raw = read_line(stdin)
            if raw is None:
                return 0
            if not raw.strip():
                continue
            message = loads_line(raw)
        except WireError as exc:
            response: dict[str, Any] = _bad_request(None, exc.kind, str(exc))
        else:
            # Stray prints of a handler must not corrupt the protocol stream (TP-2).
            with contextlib.redirect_stdout(sys.stderr):
                response, stop = _answer(message, operations)
        try:
            line = dumps_line(response)
        except WireError as exc:
            line = dumps_line(_bad_request(response.get("id"), "OutputNotJson", f"the output is not JSON: {exc}"))
        stdout.write(line)
        stdout.flush()
        if stop:
            return 0


def main(argv: list[str] | None = None) -> int:
    del argv
    return serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    sys.exit(main())
