"""The testee protocol itself (spec/testee-protocol.md): checked on an out-of-process implementation only.

Against an in-process adapter there is no protocol to check, and these tests are skipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kstate_conformance import rules
from kstate_conformance.store_types import KV
from kstate_conformance.testee import CONTROL_OPS, PROTOCOL_VERSION, SubprocessAdapter, protocol_validator

#: Operations with an input every conforming implementation refuses (OPS-3), to provoke an ``error`` answer.
REFUSALS = [
    ("primitives.read_int64", {"bytes": "00"}),
    ("varint.read_varint", {"bytes": "ff"}),
    ("timestamped.deserialize", {"bytes": "00"}),
    ("varint.read_varlong", {"bytes": "80"}),
]


@pytest.fixture
def testee(implementation: Any) -> SubprocessAdapter:
    inner = getattr(implementation, "inner", implementation)
    if not isinstance(inner, SubprocessAdapter):
        pytest.skip("the implementation under test is not an out-of-process testee")
    return inner


@pytest.fixture(scope="module")
def response_schema() -> Any:
    return protocol_validator("response")


def _valid(validator: Any, message: dict[str, Any]) -> dict[str, Any]:
    errors = [e.message for e in validator.iter_errors(message)]
    assert not errors, f"{message} does not match the protocol schema: {errors[:3]}"
    return message


@rules("TP-3")
def test_the_handshake_names_protocol_implementation_and_operations(testee: SubprocessAdapter) -> None:
    hello = testee.handshake
    _valid(protocol_validator("hello_output"), hello)
    assert hello["protocol"] == PROTOCOL_VERSION
    capabilities = hello["capabilities"]
    assert len(capabilities) == len(set(capabilities)), "capabilities list an operation twice"
    assert not set(capabilities) & set(CONTROL_OPS)
    assert all(testee.supports(name) for name in capabilities)


@rules("TP-3", "TP-2")
def test_a_hello_with_an_unknown_protocol_version_is_refused(testee: SubprocessAdapter, response_schema: Any) -> None:
    answer = testee.exchange_raw({"id": 77, "op": "hello", "input": {"protocol": 9999}})
    assert "error" in _valid(response_schema, answer), f"a hello for protocol 9999 was answered {answer}"
    # The testee keeps serving in step after the refusal.
    again = testee.exchange_raw({"id": 78, "op": "hello", "input": {"protocol": PROTOCOL_VERSION}})
    assert again["output"]["protocol"] == PROTOCOL_VERSION


@rules("TP-1", "TP-2", "TP-10")
@pytest.mark.parametrize("request_id", [0, 1, 12345, 2**53 - 1], ids=lambda i: f"id{i}")
def test_every_request_gets_one_answer_carrying_its_id(testee: SubprocessAdapter, response_schema: Any,
                                                       request_id: int) -> None:
    # exchange_raw itself fails on a wrong id, a second line, a non-JSON line or a late answer.
    answer = testee.exchange_raw({"id": request_id, "op": "no_such_family.no_such_op", "input": {"x": "é\n"}})
    assert _valid(response_schema, answer)["id"] == request_id


@rules("TP-5", "OPS-1")
def test_an_unknown_operation_is_answered_unsupported(testee: SubprocessAdapter, response_schema: Any) -> None:
    answer = testee.exchange("no_such_family.no_such_operation", {})
    assert _valid(response_schema, answer).get("unsupported") is True, answer


@rules("TP-4", "TP-6", "OPS-3")
def test_a_refusal_is_an_error_answer_and_an_output_is_an_object(testee: SubprocessAdapter,
                                                                  response_schema: Any) -> None:
    supported = [(op, payload) for op, payload in REFUSALS if testee.supports(op)]
    if not supported:
        pytest.skip("the testee implements none of the operations used to provoke a refusal")
    for op, payload in supported:
        answer = _valid(response_schema, testee.exchange(op, payload))
        refused = "error" in answer or "error" in answer.get("output", {})
        assert refused, f"{op} {payload} should be refused, the testee answered {answer}"
    if testee.supports("varint.write_varint"):
        answer = _valid(response_schema, testee.exchange("varint.write_varint", {"value": 300}))
        assert answer["output"] == {"bytes": "d804", "size": 2}


@rules("TP-7")
def test_a_malformed_input_does_not_stop_the_testee(testee: SubprocessAdapter, response_schema: Any) -> None:
    if not testee.handshake["capabilities"]:
        pytest.skip("the testee implements no operation")
    op = sorted(testee.handshake["capabilities"])[0]
    answer = _valid(response_schema, testee.exchange_raw({"id": 5, "op": op, "input": "not an object"}))
    assert "internal_error" in answer or "error" in answer, f"an input that is not an object was answered {answer}"
    follow = testee.exchange_raw({"id": 6, "op": "no_such_family.no_such_op", "input": {}})
    assert follow.get("unsupported") is True


@rules("TP-9", "TP-4")
def test_store_handles_live_across_requests(testee: SubprocessAdapter, tmp_path: Path) -> None:
    needed = ("store.capabilities", "store.open", "store.put", "store.get", "store.close")
    if not all(testee.supports(op) for op in needed):
        pytest.skip("the testee offers no key-value store operations")
    caps = testee.call("store.capabilities", {})
    if KV not in caps.get("store_types", []) or not caps.get("backends"):
        pytest.skip("the testee has no plain key-value store")
    opened = testee.call("store.open", {"store_type": KV, "backend": caps["backends"][0], "name": "tp",
                                        "state_dir": str(tmp_path), "application_id": "app", "task_id": "0_0"})
    handle = opened["handle"]
    assert "error" not in testee.call("store.put", {"handle": handle, "key": "6b", "value": "76"})
    assert testee.call("store.get", {"handle": handle, "key": "6b"})["value"] == "76"
    assert "error" not in testee.call("store.close", {"handle": handle})


@rules("TP-8")
@pytest.mark.parametrize("how", ["shutdown", "end_of_input"])
def test_shutdown_and_end_of_input_stop_the_testee(testee: SubprocessAdapter, how: str) -> None:
    try:
        code = testee.stop(how == "shutdown", wait=5)
        assert code == 0, f"after {how} the testee exited with {code}" if code is not None else \
            f"the testee still ran 5 s after {how}"
    finally:
        testee.restart()
