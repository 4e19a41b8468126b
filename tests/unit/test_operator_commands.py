"""The operator's commands without a broker (issue 34): where the Kafka Streams instance cannot run the reason is
one typed error (the system tests skip on it), a broker service that is not running is said so, and a bad
``--store`` is refused by name. The whole path, with a broker and Kafka Streams, is system_tests/test_operator_demo.py."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kstate.app.kafka_streams import KAFKA_STREAMS_RUN_ENV, InstanceUnavailable, kafka_streams_instance
from kstate.cli import main
from kstate.kafka import broker_service


def test_no_run_script_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KAFKA_STREAMS_RUN_ENV, str(tmp_path / "nowhere" / "run"))
    with pytest.raises(InstanceUnavailable, match="not here"):
        kafka_streams_instance()


def test_no_java_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.write_text("#!/bin/sh\nexit 1\n")
    monkeypatch.setenv(KAFKA_STREAMS_RUN_ENV, str(run))
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(InstanceUnavailable, match="no java on the PATH"):
        kafka_streams_instance()


def test_a_service_whose_process_is_gone_is_not_running(tmp_path: Path) -> None:
    (tmp_path / broker_service.STATE_FILE).write_text(json.dumps(
        {"bootstrap": "127.0.0.1:1", "provider": "apache", "pid": 2 ** 22 + 12345}))
    assert broker_service.running(tmp_path) is None
    assert broker_service.stop(tmp_path) is None
    assert not (tmp_path / broker_service.STATE_FILE).exists()


def test_the_current_process_counts_as_a_running_service(tmp_path: Path) -> None:
    (tmp_path / broker_service.STATE_FILE).write_text(json.dumps(
        {"bootstrap": "127.0.0.1:9", "provider": "tansu", "pid": os.getpid()}))
    found = broker_service.running(tmp_path)
    assert found is not None and found.bootstrap == "127.0.0.1:9"


def test_broker_status_without_a_service_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["broker", "status", "--dir", str(tmp_path)]) == 1
    assert "no broker running from" in capsys.readouterr().err


def test_instance_run_wants_a_typed_store_and_a_broker(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["instance", "run", "--application-id", "a", "--state-dir", str(tmp_path), "--broker-dir", str(tmp_path)]
    assert main([*args, "--store", "counts"]) == 2
    assert "expected NAME:TYPE" in capsys.readouterr().err
    assert main([*args, "--store", "counts:kv"]) == 2
    assert "no broker running from" in capsys.readouterr().err
