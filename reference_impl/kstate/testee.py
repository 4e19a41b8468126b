"""The reference implementation as an out-of-process testee: JSON lines on stdin/stdout (spec/testee-protocol.md).

Run it with ``python -m kstate.testee`` or ``kstate testee``; the conformance suite drives it with
``kstate conformance --impl "cmd:python -m kstate.testee"``. Every registered operation (spec/ops.md),
the ``store.*`` operations with their handles included, is answered (TP-4); anything else is
``unsupported`` (TP-5).
"""

from __future__ import annotations

import contextlib
import json
import sys
import traceback
from typing import IO, Any

PROTOCOL_VERSION = 1
IMPLEMENTATION = "kstate-reference"


def _answer(message: Any, operations: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The response to one decoded request, and whether to stop after sending it."""
    from kstate.ops import call

    if not isinstance(message, dict) or "op" not in message or "id" not in message:
        return {"id": message.get("id") if isinstance(message, dict) else None,
                "internal_error": {"message": "not a request: expected an object with id, op and input"}}, False
    request_id, name, payload = message["id"], message["op"], message.get("input", {})
    if name == "hello":
        version = payload.get("protocol") if isinstance(payload, dict) else None
        if version != PROTOCOL_VERSION:
            return {"id": request_id, "error": {"type": "ProtocolVersion",
                                                "message": f"this testee speaks protocol {PROTOCOL_VERSION}, "
                                                           f"not {version!r}"}}, False
        from kstate import __version__

        return {"id": request_id, "output": {"protocol": PROTOCOL_VERSION, "implementation": IMPLEMENTATION,
                                             "version": __version__, "capabilities": sorted(operations)}}, False
    if name == "shutdown":
        return {"id": request_id, "output": {}}, True
    if name not in operations:
        return {"id": request_id, "unsupported": True, "reason": f"no operation {name!r}"}, False
    if not isinstance(payload, dict):
        return {"id": request_id, "internal_error": {"message": "input must be a JSON object"}}, False
    try:
        output = call(name, payload)
    except Exception as exc:  # a bug of the reference: reported, never disguised as a refusal (TP-7)
        return {"id": request_id, "internal_error": {"type": type(exc).__name__, "message": str(exc),
                                                     "traceback": traceback.format_exc()}}, False
    if set(output) == {"error"}:
        return {"id": request_id, "error": output["error"]}, False
    return {"id": request_id, "output": output}, False


def serve(stdin: IO[bytes], stdout: IO[bytes]) -> int:
    """Answer requests from ``stdin`` on ``stdout`` until ``shutdown`` or end of input (TP-1..TP-8)."""
    from kstate.ops import load_all

    operations = dict(load_all())
    for raw in stdin:
        if not raw.strip():
            continue
        try:
            message = json.loads(raw)
        except ValueError as exc:
            response: dict[str, Any] = {"id": None, "internal_error": {"message": f"request is not JSON: {exc}"}}
            stop = False
        else:
            # Stray prints of a handler must not corrupt the protocol stream (TP-2).
            with contextlib.redirect_stdout(sys.stderr):
                response, stop = _answer(message, operations)
        try:
            line = json.dumps(response, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as exc:
            line = json.dumps({"id": response.get("id"),
                               "internal_error": {"message": f"the output is not JSON: {exc}"}})
        stdout.write(line.encode("utf-8") + b"\n")
        stdout.flush()
        if stop:
            return 0
    return 0


def main(argv: list[str] | None = None) -> int:
    del argv
    return serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    sys.exit(main())
