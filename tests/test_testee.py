"""The runner side of the testee protocol: misbehaving testees give clear per-test errors, never a hang."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kstate_conformance.adapter import Unsupported
from kstate_conformance.loading import load_implementation
from kstate_conformance.pytest_args import suite_args
from kstate_conformance.testee import (
    GIVE_UP_AFTER,
    SubprocessAdapter,
    TesteeCrashed,
    TesteeInternalError,
    TesteeProtocolError,
    TesteeTimedOut,
    TesteeUnavailable,
    protocol_validator,
)

rules = pytest.mark.rules

# A testee whose answer to each operation is chosen by the operation's name; argv[1] picks start-up faults.
FAKE_TESTEE = r'''
import json, os, sys, time
mode = sys.argv[1] if len(sys.argv) > 1 else ""
CAPS = ["varint.write_varint", "x.crash", "x.hang", "x.garbage", "x.wrong_id", "x.two_kinds", "x.internal",
        "x.unsupported", "x.refuse", "x.partial", "x.list_output", "x.slow", "x.deep", "x.nan", "x.float_id",
        "x.true_id", "x.not_utf8", "x.huge", "x.text", "x.echo"]
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line); op = msg["op"]; i = msg["id"]
    if op == "hello":
        if mode == "hang-hello": time.sleep(60)
        if mode == "die-hello": sys.stderr.write("cannot load my library\n"); sys.stderr.flush(); sys.exit(7)
        send({"id": i, "output": {"protocol": 2 if mode == "protocol-2" else 1, "implementation": "fake",
                                  "capabilities": CAPS}})
    elif op == "shutdown": send({"id": i, "output": {}}); break
    elif op == "x.crash": sys.stderr.write("fatal: boom\n"); sys.stderr.flush(); os._exit(3)
    elif op == "x.hang": time.sleep(60)
    elif op == "x.slow": time.sleep(0.3); send({"id": i, "output": {}})
    elif op == "x.garbage": sys.stdout.write("this is not json\n"); sys.stdout.flush()
    elif op == "x.wrong_id": send({"id": i + 1, "output": {}})
    elif op == "x.two_kinds": send({"id": i, "output": {}, "error": {}})
    elif op == "x.list_output": send({"id": i, "output": [1, 2]})
    elif op == "x.internal": send({"id": i, "internal_error": {"message": "NullPointerException in put"}})
    elif op == "x.unsupported": send({"id": i, "unsupported": True})
    elif op == "x.refuse": send({"id": i, "error": {"type": "DecodeError", "message": "no"}})
    elif op == "x.partial": sys.stdout.write('{"id": '); sys.stdout.flush(); os._exit(1)
    elif op == "x.deep": sys.stdout.write('{"id":%d,"output":{"a":' % i + "[" * 100000 + "]" * 100000 + "}}\n")
    elif op == "x.nan": sys.stdout.write('{"id":%d,"output":{"a":NaN}}\n' % i)
    elif op == "x.float_id": sys.stdout.write('{"id":%d.0,"output":{}}\n' % i)
    elif op == "x.true_id": sys.stdout.write('{"id":true,"output":{}}\n')
    elif op == "x.not_utf8": sys.stdout.buffer.write(b'{"id":%d,"output":{"a":"\xff"}}\n' % i)
    elif op == "x.huge": sys.stdout.write('{"id":%d,"output":{"a":"' % i + "a" * (65 << 20) + '"}}\n')
    elif op == "x.text": send({"id": i, "output": {"key": {"encoding": "utf-16be", "hex": "0061d800"}}})
    elif op == "x.echo": sys.stdout.write(json.dumps({"id": i, "output": {"line": line}}) + "\n")
    elif op == "varint.write_varint": send({"id": i, "output": {"bytes": "d804", "size": 2}})
    else: send({"id": i, "unsupported": True})
    sys.stdout.flush()  # the raw writes above too: stdout to a pipe is block-buffered without PYTHONUNBUFFERED
'''


@pytest.fixture(scope="module")
def fake(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("fake") / "fake_testee.py"
    path.write_text(FAKE_TESTEE, encoding="utf-8")
    return f"{sys.executable} {path}"


def adapter(command: str, timeout: float = 2.0, start_timeout: float = 5.0) -> SubprocessAdapter:
    return SubprocessAdapter(command, timeout=timeout, start_timeout=start_timeout)


@pytest.fixture
def testee(fake: str) -> Iterator[SubprocessAdapter]:
    """The fake testee with the default timeouts, closed after the test whatever it did."""
    testee = adapter(fake)
    try:
        yield testee
    finally:
        testee.close()


@rules("TP-2", "TP-4", "TP-5", "TP-6")
def test_outputs_refusals_and_unsupported_answers(testee: SubprocessAdapter) -> None:
    assert testee.name == "fake"
    assert testee.call("varint.write_varint", {"value": 300}) == {"bytes": "d804", "size": 2}
    assert testee.call("x.refuse", {}) == {"error": {"type": "DecodeError", "message": "no"}}
    with pytest.raises(Unsupported):
        testee.call("x.unsupported", {})
    with pytest.raises(Unsupported):
        testee.call("not.in_capabilities", {})  # never sent
    assert testee.supports("x.crash") and not testee.supports("hello")


@rules("TP-10")
def test_a_crash_names_the_testee_the_operation_and_its_stderr_and_the_next_test_gets_a_fresh_process(
        fake: str) -> None:
    testee = adapter(fake)
    try:
        with pytest.raises(TesteeCrashed) as crash:
            testee.call("x.crash", {})
        message = str(crash.value)
        assert "x.crash" in message and "exited with code 3" in message and "fatal: boom" in message
        assert fake in message
        start = time.monotonic()
        with pytest.raises(TesteeUnavailable, match="already failed in this test"):
            testee.call("varint.write_varint", {"value": 1})
        assert time.monotonic() - start < 0.5
        testee.begin_test("next")
        assert testee.starts == 2
        assert testee.call("varint.write_varint", {"value": 300})["size"] == 2
    finally:
        testee.close()


@rules("TP-10")
def test_a_hang_times_out_and_kills_the_testee(fake: str) -> None:
    testee = adapter(fake, timeout=0.5)
    try:
        start = time.monotonic()
        with pytest.raises(TesteeTimedOut, match=r"x\.hang.*no answer within 0\.5 s"):
            testee.call("x.hang", {})
        assert time.monotonic() - start < 3
        testee.begin_test("next")
        assert testee.call("x.slow", {}) == {}
    finally:
        testee.close()


@rules("TP-1", "TP-2")
@pytest.mark.parametrize(("op", "problem"), [
    ("x.garbage", "not JSON"),
    ("x.wrong_id", "answered id"),
    ("x.two_kinds", "exactly one of"),
    ("x.list_output", "not a JSON object"),
    ("x.deep", "NestingTooDeep"),
    ("x.nan", "NaN is not JSON"),
    ("x.float_id", "answered id 1.0 to request id 1"),
    ("x.true_id", "answered id True"),
    ("x.not_utf8", "not UTF-8"),
    ("x.huge", "longer than"),
])
def test_malformed_answers_are_protocol_errors(testee: SubprocessAdapter, op: str, problem: str) -> None:
    with pytest.raises(TesteeProtocolError, match=problem) as error:
        testee.call(op, {})
    assert op in str(error.value)
    testee.begin_test("next")
    assert testee.call("varint.write_varint", {"value": 300})["size"] == 2


@rules("TP-12")
def test_texts_that_are_not_unicode_travel_as_utf16_hex_both_ways(testee: SubprocessAdapter) -> None:
    assert testee.call("x.text", {}) == {"key": "a\ud800"}
    sent = json.loads(testee.call("x.echo", {"headers": [["a\ud800b", None], ["\U0001f600", "01"]]})["line"])
    # A lone surrogate goes as code units in hex; a valid text, pairs included, as a plain JSON string.
    assert sent["input"] == {"headers": [[{"encoding": "utf-16be", "hex": "0061d8000062"}, None],
                                         ["\U0001f600", "01"]]}


def test_an_answer_cut_short_by_an_exit_is_a_crash(testee: SubprocessAdapter) -> None:
    with pytest.raises(TesteeCrashed, match="in the middle of an answer"):
        testee.call("x.partial", {})


@rules("TP-7")
def test_an_internal_error_fails_the_call_but_keeps_the_testee(testee: SubprocessAdapter) -> None:
    with pytest.raises(TesteeInternalError, match="NullPointerException"):
        testee.call("x.internal", {})
    assert testee.call("varint.write_varint", {"value": 300})["size"] == 2
    assert testee.starts == 1


@rules("TP-3")
@pytest.mark.parametrize(("mode", "error", "problem"), [
    ("hang-hello", TesteeUnavailable, "timed out"),
    ("die-hello", TesteeUnavailable, "cannot load my library"),
    ("protocol-2", TesteeProtocolError, "speaks protocol 2"),
])
def test_a_failed_handshake_is_reported(fake: str, mode: str, error: type[Exception], problem: str) -> None:
    start = time.monotonic()
    with pytest.raises(error, match=problem):
        adapter(f"{fake} {mode}", start_timeout=1.0)
    assert time.monotonic() - start < 5


def test_a_command_that_does_not_exist_is_reported() -> None:
    with pytest.raises(TesteeUnavailable, match="exited with code 127"):
        adapter("/nonexistent/testee-binary")


def test_after_repeated_timeouts_the_runner_gives_up_quickly(fake: str) -> None:
    testee = adapter(fake, timeout=0.2)
    try:
        for test in range(GIVE_UP_AFTER):
            testee.begin_test(f"t{test}")
            with pytest.raises(TesteeTimedOut):
                testee.call("x.hang", {})
        start = time.monotonic()
        with pytest.raises(TesteeUnavailable, match="in a row"):
            testee.begin_test("one more")
        assert time.monotonic() - start < 0.5
    finally:
        testee.close()


@rules("TP-8")
def test_close_shuts_the_testee_down(fake: str) -> None:
    testee = adapter(fake)
    process = testee._process
    assert process is not None
    testee.close()
    assert process.popen.poll() == 0


def test_cmd_and_testee_prefixes_load_a_subprocess_adapter(fake: str) -> None:
    for prefix in ("cmd:", "testee:"):
        loaded = load_implementation(f"{prefix}{fake}", timeout=3)
        try:
            assert isinstance(loaded, SubprocessAdapter) and loaded.timeout == 3
        finally:
            loaded.close()


@rules("TP-1", "TP-2", "TP-3")
def test_the_schema_accepts_the_documented_session_and_the_reference_testee(repo_root: Path) -> None:
    from jsonschema import Draft202012Validator

    schema = json.loads((repo_root / "spec" / "testee-protocol.schema.json").read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    document = (repo_root / "spec" / "testee-protocol.md").read_text(encoding="utf-8")
    session = document.split("```", 2)[1].strip().splitlines()
    requests, responses = protocol_validator("request"), protocol_validator("response")
    for line in session:
        validator = requests if line.startswith(">") else responses
        message = json.loads(line[1:])
        assert not list(validator.iter_errors(message)), line
    assert not list(protocol_validator("hello_output").iter_errors(json.loads(session[1][1:])["output"]))
    for bad in ({"id": 1, "output": {}, "error": {}}, {"id": 1, "unsupported": False}, {"id": "1", "output": {}}):
        assert list(responses.iter_errors(bad)), bad


def test_a_hanging_testee_cannot_hang_a_suite_run(fake: str, tmp_path: Path) -> None:
    # A testee that claims an operation and then hangs on it: the run ends, the tests fail as timed out.
    hang_all = tmp_path / "hang_all.py"
    hang_all.write_text(
        "import json, sys, time\n"
        "for line in sys.stdin:\n"
        "    m = json.loads(line)\n"
        "    if m['op'] == 'hello':\n"
        "        print(json.dumps({'id': m['id'], 'output': {'protocol': 1, 'implementation': 'hang',\n"
        "              'capabilities': ['varint.write_varint', 'varint.read_varint', 'primitives.encode_int64',\n"
        "                               'primitives.read_int64']}}), flush=True)\n"
        "    else:\n"
        "        time.sleep(600)\n", encoding="utf-8")
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *suite_args(), "-k", "test_ops_protocol",
         "--kstate-impl", f"cmd:{sys.executable} {hang_all}", "--kstate-testee-timeout", "1",
         "--kstate-profile", "quick"],
        capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "timed out" in proc.stdout or "no answer within 1 s" in proc.stdout
    assert time.monotonic() - start < 60
