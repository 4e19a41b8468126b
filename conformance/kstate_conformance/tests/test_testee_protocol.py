"""The testee protocol itself (spec/testee-protocol.md): checked on an out-of-process implementation only.

Against an in-process adapter there is no protocol to check, and these tests are skipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kstate_conformance import rules
from kstate_conformance.capabilities import Capabilities
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
    caps = Capabilities.parse(testee.call("store.capabilities", {}))
    if not caps.offers_store_type(KV) or not caps.backends:
        pytest.skip("the testee has no plain key-value store")
    opened = testee.call("store.open", {"store_type": KV, "backend": caps.backends[0], "name": "tp",
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


# --- hostile lines (TP-11) and texts that are not Unicode (TP-12) ----------------------------------------------

HOSTILE_LINES = {
    "op_is_a_list": (b'{"id":21,"op":["varint.write_varint"],"input":{}}', 21),
    "op_is_an_object": (b'{"id":22,"op":{"name":"hello"},"input":{}}', 22),
    "op_is_a_number": (b'{"id":23,"op":7,"input":{}}', 23),
    "nested_100000_deep": (b'{"id":24,"op":"x.y","input":{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}}", None),
    "nested_65_deep": (b'{"id":25,"op":"x.y","input":{"a":' + b"[" * 63 + b"]" * 63 + b"}}", None),
    "id_nan": (b'{"id":NaN,"op":"x.y","input":{}}', None),
    "id_infinity": (b'{"id":Infinity,"op":"x.y","input":{}}', None),
    "id_minus_infinity": (b'{"id":-Infinity,"op":"x.y","input":{}}', None),
    "id_fraction": (b'{"id":1.5,"op":"x.y","input":{}}', None),
    "id_negative": (b'{"id":-1,"op":"x.y","input":{}}', None),
    "id_true": (b'{"id":true,"op":"x.y","input":{}}', None),
    "id_a_string": (b'{"id":"7","op":"x.y","input":{}}', None),
    "not_utf8": (b'{"id":26,"op":"x.y","input":{"k":"\xff\xfe"}}', None),
    "not_json": (b'{"id":27,', None),
    "a_json_list": (b"[1,2,3]", None),
    "text_with_odd_hex": (b'{"id":28,"op":"x.y","input":{"k":{"encoding":"utf-16be","hex":"006"}}}', None),
}


@rules("TP-11", "TP-7")
@pytest.mark.parametrize("name", sorted(HOSTILE_LINES))
def test_a_hostile_line_gets_one_typed_internal_error_and_the_testee_keeps_serving(
        testee: SubprocessAdapter, response_schema: Any, name: str) -> None:
    line, request_id = HOSTILE_LINES[name]
    answer = _valid(response_schema, testee.exchange_line(line, expected_id=request_id, op=name))
    assert "internal_error" in answer, f"the hostile line {name} was answered {answer}"
    assert isinstance(answer["internal_error"].get("type"), str), f"the internal error names no type: {answer}"
    follow = testee.exchange_raw({"id": 30, "op": "no_such_family.no_such_op", "input": {}})
    assert follow.get("unsupported") is True, f"after {name} the testee answered {follow}"


@rules("TP-11")
def test_a_line_longer_than_the_cap_is_refused_and_the_testee_keeps_serving(testee: SubprocessAdapter) -> None:
    from kstate.testee_wire import MAX_LINE_BYTES

    line = b'{"id":31,"op":"x.y","input":{"k":"' + b"a" * (MAX_LINE_BYTES + (1 << 20)) + b'"}}'
    answer = testee.exchange_line(line, expected_id=None, op="line of 17 MiB", timeout=60)
    assert "internal_error" in answer and isinstance(answer["internal_error"].get("type"), str), answer
    follow = testee.exchange_raw({"id": 32, "op": "no_such_family.no_such_op", "input": {}})
    assert follow.get("unsupported") is True


@rules("TP-11")
def test_a_line_within_the_caps_is_served(testee: SubprocessAdapter) -> None:
    # 64 levels (the top-level object is level 1) and a long string: both inside the caps, so an answer.
    line = b'{"id":33,"op":"no_such_family.no_such_op","input":{"a":' + b"[" * 62 + b"]" * 62 + \
        b',"b":"' + b"a" * (4 << 20) + b'"}}'
    answer = testee.exchange_line(line, expected_id=33, op="deep but allowed", timeout=60)
    assert answer.get("unsupported") is True, f"a line inside the caps was answered {answer}"


@rules("TP-12", "HV-16")
def test_a_text_that_is_not_unicode_travels_as_utf16_hex(testee: SubprocessAdapter) -> None:
    if not testee.supports("header_values.serialize_headers"):
        pytest.skip("the testee does not offer header_values.serialize_headers")
    line = (b'{"id":34,"op":"header_values.serialize_headers","input":{"headers":'
            b'[[{"encoding":"utf-16be","hex":"0061d8000062"},null],[{"encoding":"utf-16be","hex":"00e9"},"01"]]}}')
    answer = testee.exchange_line(line, expected_id=34, op="header_values.serialize_headers")
    if "error" in answer:
        pytest.skip(f"the testee refuses a key that is not Unicode (TP-12 allows it): {answer['error']}")
    # "a?b" (HV-16) then a valid text sent in the encoded form, decoded as any other: e-acute.
    assert answer == {"id": 34, "output": {"bytes": "0406613f620104c3a90201"}}, answer
