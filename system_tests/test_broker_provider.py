"""The broker provider: starts, answers, keeps records byte-exact, fails clearly, leaves nothing behind."""

from __future__ import annotations

import os
import socket

import pytest

from kstate.kafka.broker import Broker, BrokerUnavailable, TansuBroker
from kstate.kafka.changelog_topics import consume_all, create_topic, produce


def test_records_round_trip_byte_exact(broker: Broker, topic_name: str) -> None:
    create_topic(broker, topic_name, config={"cleanup.policy": "compact"})
    records = [
        (b"k1", b"v1", 1_700_000_000_000, [("a", b"1"), ("a", b"2"), ("n", None), ("e", b"")]),
        (b"k2", b"", 5, []),
        (b"k1", None, 7, [("\u0436", b"\xff")]),
        (b"", b"\x00\xff", 2**41, []),
    ]
    assert produce(broker, topic_name, records) == len(records)
    got = consume_all(broker, topic_name)
    assert [(r["key"], r["value"], r["timestamp"], r["headers"]) for r in got] == [
        (k, v, ts, h) for k, v, ts, h in records
    ]
    assert [r["offset"] for r in got] == list(range(len(records)))


def test_reading_to_the_end_does_not_trust_list_offsets(broker: Broker, topic_name: str) -> None:
    create_topic(broker, topic_name)
    produce(broker, topic_name, [(b"k%d" % i, b"v", 10 + i, []) for i in range(50)])
    assert len(consume_all(broker, topic_name)) == 50
    assert len(consume_all(broker, topic_name, start_offset=45)) == 5


def test_a_port_in_use_is_not_mistaken_for_a_ready_broker(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        monkeypatch.setattr("kstate.kafka.broker._free_port", lambda: port)
        with pytest.raises(BrokerUnavailable, match=r"tansu.*127\.0\.0\.1"):
            TansuBroker.start(attempts=1, timeout=5)


def test_a_missing_binary_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALF_TANSU_BIN", "/nonexistent/tansu")
    with pytest.raises(BrokerUnavailable, match="no Tansu binary"):
        TansuBroker.start(attempts=1)


def test_close_leaves_no_process() -> None:
    broker = TansuBroker.start()
    pid = broker._process.pid
    broker.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
