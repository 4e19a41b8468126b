"""Out-of-process implementations: the runner side of the JSON-lines testee protocol (spec/testee-protocol.md).

:class:`SubprocessAdapter` launches a testee command, performs the ``hello`` handshake (TP-3) and sends
one request per operation (TP-4). A testee that crashes, hangs past the per-request timeout, or answers
with a malformed message raises a :class:`TesteeError` naming the testee, the operation and what was
wrong; the process is killed, calls fail fast for the rest of that test, and a fresh process is started
for the next test (:meth:`SubprocessAdapter.begin_test`). Nothing here can block past its deadline.
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import select
import signal
import subprocess
import tempfile
import time
import weakref
from collections.abc import Mapping
from typing import IO, Any

from kstate.errors import KStateError
from kstate.testee_wire import WireError, dumps_line, loads_line
from kstate_conformance.adapter import ImplementationAdapter, JsonDict, Unsupported

PROTOCOL_VERSION = 1
DEFAULT_TIMEOUT = 10.0
DEFAULT_START_TIMEOUT = 30.0
#: After this many tests in a row lost to timeouts or failed starts, later tests fail at once: the run
#: stays bounded even when a testee hangs on everything.
GIVE_UP_AFTER = 5
#: A response line longer than this is a protocol error, not a reason to exhaust memory (TP-11).
MAX_LINE_BYTES = 64 * 1024 * 1024
RESPONSE_KINDS = ("output", "unsupported", "error", "internal_error")
CONTROL_OPS = ("hello", "shutdown")


class TesteeError(Exception):
    """An out-of-process implementation misbehaved while answering ``op``."""

    kind = "failed"
    __test__ = False  # a name starting with "Test" is not a pytest test class

    def __init__(self, testee: str, op: str, problem: str, stderr_tail: str = "") -> None:
        self.testee = testee
        self.op = op
        self.problem = problem
        self.stderr_tail = stderr_tail
        message = f"testee {testee!r}, operation {op!r}: {problem}"
        if stderr_tail:
            message += f"\n--- last lines the testee wrote to stderr ---\n{stderr_tail}"
        super().__init__(message)


class TesteeCrashed(TesteeError):
    """The testee process exited (or closed its stdout) before answering."""

    kind = "crashed"


class TesteeTimedOut(TesteeError):
    """No answer within the per-request timeout; the testee was killed."""

    kind = "timed out"


class TesteeProtocolError(TesteeError):
    """The testee answered something that is not a well-formed response (TP-2, TP-4)."""

    kind = "malformed answer"


class TesteeInternalError(TesteeError):
    """The testee reported a failure of its own (``internal_error``, TP-7): a bug, not a refusal."""

    kind = "internal error"


class TesteeUnavailable(TesteeError):
    """The testee failed earlier in this test, or could not be started."""

    kind = "unavailable"


_LIVE: weakref.WeakSet[SubprocessAdapter] = weakref.WeakSet()


@atexit.register
def _close_live_testees() -> None:
    for adapter in list(_LIVE):
        adapter.close()


class _Process:
    """One running testee: its pipes (non-blocking), a read buffer and a stderr file."""

    def __init__(self, command: str, env: Mapping[str, str] | None, cwd: str | None) -> None:
        # Closed in dispose(): the file outlives this constructor.
        self.stderr_file: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115
        self.popen = subprocess.Popen(
            command, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr_file,
            start_new_session=True, env=None if env is None else dict(env), cwd=cwd,
        )
        assert self.popen.stdin is not None and self.popen.stdout is not None
        self.stdin_fd = self.popen.stdin.fileno()
        self.stdout_fd = self.popen.stdout.fileno()
        os.set_blocking(self.stdin_fd, False)
        os.set_blocking(self.stdout_fd, False)
        self.buffer = bytearray()

    def stderr_tail(self, max_bytes: int = 4000) -> str:
        try:
            self.stderr_file.seek(0, os.SEEK_END)
            size = self.stderr_file.tell()
            self.stderr_file.seek(max(0, size - max_bytes))
            return self.stderr_file.read().decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""

    def exit_code(self, wait: float) -> int | None:
        try:
            return self.popen.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        if self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.popen.kill()
        self.exit_code(5)
        for stream in (self.popen.stdin, self.popen.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    def dispose(self) -> None:
        self.kill()
        self.stderr_file.close()


class SubprocessAdapter(ImplementationAdapter):
    """A :class:`~kstate_conformance.adapter.ImplementationAdapter` speaking the testee protocol to a child process."""

    def __init__(
        self,
        command: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        validate: bool = False,
        label: str | None = None,
    ) -> None:
        self.command = command
        self.label = label or f"cmd:{command}"
        self.timeout = timeout
        self.start_timeout = start_timeout
        self.env = env
        self.cwd = cwd
        self.validate = validate
        self._validator: Any = None
        self._process: _Process | None = None
        self._broken: TesteeError | None = None
        self._ids = itertools.count(1)
        self.handshake: JsonDict = {}
        self.capabilities: frozenset[str] = frozenset()
        self.starts = 0
        self._costly_failures = 0
        self._start()
        self.name = str(self.handshake.get("implementation") or self.label)
        _LIVE.add(self)

    # --- the adapter protocol ---------------------------------------------------------------------------

    def supports(self, op: str) -> bool:
        return op in self.capabilities

    def call(self, op: str, payload: JsonDict) -> JsonDict:
        """Send ``op``; ``{"error": ...}`` for a refusal, :class:`Unsupported`, or a :class:`TesteeError`."""
        if op not in self.capabilities:
            raise Unsupported(op)
        response = self.exchange(op, payload)
        if "unsupported" in response:
            raise Unsupported(op)
        if "error" in response:
            return {"error": response["error"]}
        if "internal_error" in response:
            detail = response["internal_error"]
            message = detail.get("message", detail) if isinstance(detail, dict) else detail
            raise TesteeInternalError(self.label, op, f"the testee reported an internal error: {message}",
                                      self._stderr_tail())
        output: JsonDict = response["output"]
        return output

    # --- lifecycle ----------------------------------------------------------------------------------------

    def begin_test(self, test_id: str = "") -> None:
        """A new test starts: a testee that failed in the previous test is replaced by a fresh one."""
        if self._broken is not None or self._process is None:
            if self._costly_failures >= GIVE_UP_AFTER:
                raise TesteeUnavailable(self.label, "hello", f"not restarted: the testee timed out or failed to "
                                        f"start in {self._costly_failures} tests in a row")
            self._broken = None
            self._start()

    def restart(self) -> None:
        """Stop the current process (if any) and start a fresh one."""
        self._discard()
        self._broken = None
        self._start()

    def stop(self, send_shutdown: bool = True, wait: float = 5) -> int | None:
        """Stop the testee by ``shutdown`` (checking its answer) or by closing its input (TP-8).

        Returns the exit status, or None if it was still running after ``wait`` seconds (then it is killed).
        The next :meth:`begin_test` starts a fresh process.
        """
        process = self._process
        if process is None:
            raise TesteeUnavailable(self.label, "shutdown", "the testee is not running")
        if send_shutdown:
            answer = self.exchange_raw({"id": next(self._ids), "op": "shutdown", "input": {}}, op="shutdown")
            if answer.get("output") != {}:
                raise TesteeProtocolError(self.label, "shutdown", f"answered {answer!r}, not an empty output")
        if process.popen.stdin is not None:
            process.popen.stdin.close()
        code = process.exit_code(wait)
        self._process = None
        process.dispose()
        return code

    def close(self) -> None:
        """Ask the testee to shut down (TP-8); kill it if it does not exit promptly."""
        process = self._process
        if process is None:
            return
        self._process = None
        try:
            if process.popen.poll() is None:
                self._send(process, {"id": next(self._ids), "op": "shutdown", "input": {}}, "shutdown",
                           time.monotonic() + 2, 2)
                process.exit_code(2)
        except TesteeError:
            pass
        process.dispose()
        _LIVE.discard(self)

    # --- raw protocol access (used by the protocol's own conformance tests) ------------------------------

    def exchange(self, op: str, payload: JsonDict, *, timeout: float | None = None) -> JsonDict:
        """Send one request and return the validated response object."""
        request_id = next(self._ids)
        return self.exchange_raw({"id": request_id, "op": op, "input": payload}, op=op, timeout=timeout)

    def exchange_raw(self, request: JsonDict, *, op: str | None = None, timeout: float | None = None) -> JsonDict:
        """Send ``request`` as it is; return the response after checking its shape and id."""
        op = op or str(request.get("op"))
        process = self._running(op)
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        try:
            self._send(process, request, op, deadline, limit)
            line = self._receive_line(process, op, deadline, limit)
            response = self._check_response(line, request.get("id"), op)
        except TesteeError as exc:
            self._fail(exc)
            raise
        if op != "hello":
            self._costly_failures = 0
        return response

    def exchange_line(self, line: bytes, *, expected_id: Any = None, op: str = "raw line",
                      timeout: float | None = None) -> JsonDict:
        """Send ``line`` (a hostile line of TP-11, newline added) and return the answer, which must carry
        ``expected_id``."""
        process = self._running(op)
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        try:
            self._write(process, line.rstrip(b"\n") + b"\n", op, deadline, limit)
            answer = self._receive_line(process, op, deadline, limit)
            return self._check_response(answer, expected_id, op)
        except TesteeError as exc:
            self._fail(exc)
            raise

    # --- internals ------------------------------------------------------------------------------------------

    def _running(self, op: str) -> _Process:
        """The testee's process, ready for a request; refused when it already failed in this test or is not running."""
        if self._broken is not None:
            raise TesteeUnavailable(self.label, op, f"not sent: the testee already failed in this test "
                                    f"({self._broken.kind}: {self._broken.problem})")
        if self._process is None:
            raise TesteeUnavailable(self.label, op, "the testee is not running")
        return self._process

    def _start(self) -> None:
        self._discard()
        self.starts += 1
        try:
            process = _Process(self.command, self.env, self.cwd)
        except OSError as exc:
            raise TesteeUnavailable(self.label, "hello", f"cannot start the command: {exc}") from exc
        self._process = process
        self._ids = itertools.count(1)
        request = {"id": 0, "op": "hello", "input": {"protocol": PROTOCOL_VERSION, "suite": "kstate-kit"}}
        try:
            response = self.exchange_raw(request, op="hello", timeout=self.start_timeout)
        except TesteeError as exc:
            raise TesteeUnavailable(self.label, "hello", f"the handshake failed: {exc.kind}: {exc.problem}",
                                    exc.stderr_tail) from exc
        problem = _handshake_problem(response)
        if problem:
            error = TesteeProtocolError(self.label, "hello", problem, self._stderr_tail())
            self._fail(error)
            raise error
        self.handshake = response["output"]
        self.capabilities = frozenset(self.handshake["capabilities"])

    def _discard(self) -> None:
        if self._process is not None:
            self._process.dispose()
            self._process = None

    def _fail(self, error: TesteeError) -> None:
        # Kill now, so the next test starts from a clean process; calls in this test fail fast.
        costly = isinstance(error, TesteeTimedOut) or error.op == "hello"
        if costly and self._broken is None:
            self._costly_failures += 1
        self._broken = error
        if self._process is not None:
            self._process.kill()

    def _stderr_tail(self) -> str:
        return self._process.stderr_tail() if self._process else ""

    def _crash_error(self, process: _Process, op: str, when: str) -> TesteeCrashed:
        code = process.exit_code(1)
        status = "is still running" if code is None else f"exited with code {code}"
        if code is not None and code < 0:
            status = f"was killed by signal {-code}"
        return TesteeCrashed(self.label, op, f"the testee {status} {when}", process.stderr_tail())

    def _send(self, process: _Process, request: JsonDict, op: str, deadline: float, limit: float) -> None:
        try:
            data = dumps_line(request)  # texts that are not Unicode travel encoded (TP-12)
        except WireError as exc:
            # A suite bug (a non-JSON payload), not the testee's: say so plainly.
            raise TypeError(f"operation {op}: the suite built a payload that is not JSON: {exc}") from exc
        self._write(process, data, op, deadline, limit)

    def _write(self, process: _Process, data: bytes, op: str, deadline: float, limit: float) -> None:
        view = memoryview(data)
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TesteeTimedOut(self.label, op, "the testee did not read its request within "
                                     f"{limit:g} s", process.stderr_tail())
            try:
                _, writable, _ = select.select([], [process.stdin_fd], [], remaining)
                if not writable:
                    continue
                written = os.write(process.stdin_fd, view[:65536])
            except (BrokenPipeError, ConnectionResetError, OSError):
                raise self._crash_error(process, op, "before reading its request") from None
            view = view[written:]

    def _receive_line(self, process: _Process, op: str, deadline: float, limit: float) -> bytes:
        buffer = process.buffer
        scanned = 0  # bytes of the buffer known to hold no newline: each byte is searched once
        while True:
            newline = buffer.find(b"\n", scanned)
            scanned = len(buffer)
            if newline >= 0:
                line = bytes(buffer[:newline])
                del buffer[: newline + 1]
                return line
            if len(buffer) > MAX_LINE_BYTES:
                raise TesteeProtocolError(self.label, op, f"an answer line longer than {MAX_LINE_BYTES} bytes",
                                          process.stderr_tail())
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TesteeTimedOut(self.label, op, f"no answer within {limit:g} s; "
                                     "the testee was killed", process.stderr_tail())
            readable, _, _ = select.select([process.stdout_fd], [], [], remaining)
            if not readable:
                continue
            try:
                chunk = os.read(process.stdout_fd, 1 << 20)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                when = "before answering" if not buffer else f"in the middle of an answer ({bytes(buffer[:200])!r})"
                raise self._crash_error(process, op, when)
            buffer += chunk

    def _check_response(self, line: bytes, request_id: Any, op: str) -> JsonDict:
        shown = line[:300].decode("utf-8", "replace")
        try:
            response = loads_line(line, MAX_LINE_BYTES)
        except WireError as exc:
            raise TesteeProtocolError(self.label, op, f"answered a line the protocol refuses ({exc.kind}: {exc}): "
                                      f"{shown!r}", self._stderr_tail()) from None
        problem = response_problem(response, request_id)
        if problem:
            raise TesteeProtocolError(self.label, op, f"{problem}: {shown!r}", self._stderr_tail())
        if self.validate:
            self._validate(response, op)
        checked: JsonDict = response
        return checked

    def _validate(self, response: JsonDict, op: str) -> None:
        if self._validator is None:
            self._validator = protocol_validator("response")
        errors = sorted(self._validator.iter_errors(response), key=lambda e: list(e.path))
        if errors:
            raise TesteeProtocolError(self.label, op, f"the answer does not match the protocol schema: "
                                      f"{errors[0].message}", self._stderr_tail())


def response_problem(response: Any, request_id: Any) -> str | None:
    """What makes ``response`` an invalid answer to request ``request_id`` (TP-2, TP-4), or None."""
    if not isinstance(response, dict):
        return "answered JSON that is not an object"
    if "id" not in response:
        return "answered an object without an id"
    if type(response["id"]) is not type(request_id) or response["id"] != request_id:
        return f"answered id {response['id']!r} to request id {request_id!r}"
    kinds = [k for k in RESPONSE_KINDS if k in response]
    if len(kinds) != 1:
        return f"an answer must carry exactly one of {', '.join(RESPONSE_KINDS)}, not {kinds or 'none'}"
    extra = sorted(set(response) - {"id", *RESPONSE_KINDS, "reason"})
    if extra:
        return f"an answer with unknown members {extra}"
    kind = kinds[0]
    if kind == "output" and not isinstance(response["output"], dict):
        return "an output that is not a JSON object"
    if kind == "unsupported" and response["unsupported"] is not True:
        return "'unsupported' must be true"
    if kind in ("error", "internal_error") and not isinstance(response[kind], dict):
        return f"'{kind}' must be a JSON object"
    if "reason" in response and (kind != "unsupported" or not isinstance(response["reason"], str)):
        return "'reason' belongs only to an unsupported answer, as a string"
    return None


def _handshake_problem(response: JsonDict) -> str | None:
    if "output" not in response:
        kind = next(k for k in RESPONSE_KINDS if k in response)
        return f"the testee answered the hello with {kind}: {response[kind]!r}"
    out = response["output"]
    if out.get("protocol") != PROTOCOL_VERSION or isinstance(out.get("protocol"), bool):
        return f"the testee speaks protocol {out.get('protocol')!r}, the runner speaks {PROTOCOL_VERSION}"
    if not isinstance(out.get("implementation"), str) or not out["implementation"]:
        return "the hello answer names no implementation"
    caps = out.get("capabilities")
    if not isinstance(caps, list) or not all(isinstance(c, str) for c in caps):
        return "the hello answer's capabilities are not a list of operation names"
    reserved = sorted(set(caps) & set(CONTROL_OPS))
    if reserved:
        return f"the capabilities list control messages {reserved}"
    return None


def protocol_validator(kind: str) -> Any:
    """A jsonschema validator for one ``$defs`` entry (``request``, ``response``, ``hello_output``) of the schema."""
    from jsonschema import Draft202012Validator

    from kstate_conformance.data import spec_dir

    schema = json.loads((spec_dir() / "testee-protocol.schema.json").read_text(encoding="utf-8"))
    schema.pop("oneOf", None)
    return Draft202012Validator({**schema, "$ref": f"#/$defs/{kind}"})


# --- starting a testee for --impl (loading.py and the kinds it loads) ----------------------------------------------------


class ImplementationError(KStateError):
    """An ``--impl`` that cannot be loaded, built or started: a setup error, not a conformance verdict."""


class ImplementationNotFound(ImplementationError, LookupError):
    """An ``--impl`` name that names no implementation."""


def start_testee(spec: str, command: str, timeout: float | None, start_timeout: float, validate: bool,
                 failure: str) -> ImplementationAdapter:
    """An out-of-process testee started and its handshake done; a failure is an :class:`ImplementationError`."""
    try:
        return SubprocessAdapter(command, timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
                                 start_timeout=start_timeout, validate=validate, label=spec)
    except TesteeError as exc:
        raise ImplementationError(f"{failure}: {exc}") from exc
