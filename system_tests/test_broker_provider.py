"""The broker providers (Tansu, Apache Kafka from Maven jars): each starts, answers, keeps records byte-exact,
fails clearly and leaves nothing behind."""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import pytest
from conftest import APACHE_PROJECT

from kstate.kafka.broker import (
    APACHE_KAFKA_VERSION,
    ApacheBroker,
    ApacheClasspathError,
    Broker,
    BrokerUnavailable,
    TansuBroker,
    apache_classpath,
    java_binary,
)
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


# --- the apache provider -----------------------------------------------------------------------------------------

needs_java = pytest.mark.skipif(java_binary() is None, reason="no Java: the apache provider cannot run here")


def _project_copy(tmp_path: Path, kafka_version: str | None = None) -> Path:
    """The apache provider's Maven project copied (without its target/), the Kafka version replaced if given."""
    project = tmp_path / "apache"
    project.mkdir()
    pom = (APACHE_PROJECT / "pom.xml").read_text()
    if kafka_version is not None:
        pom = pom.replace(f"<kafka.version>{APACHE_KAFKA_VERSION}</kafka.version>",
                          f"<kafka.version>{kafka_version}</kafka.version>")
        assert kafka_version in pom
    (project / "pom.xml").write_text(pom)
    shutil.copy(APACHE_PROJECT / "log4j2.properties", project)
    return project


def test_the_apache_project_pins_the_kafka_version() -> None:
    assert f"<kafka.version>{APACHE_KAFKA_VERSION}</kafka.version>" in (APACHE_PROJECT / "pom.xml").read_text()


def test_apache_without_a_maven_project_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ApacheClasspathError, match=r"no Maven project at .*pom\.xml missing"):
        apache_classpath(tmp_path)


def test_apache_without_maven_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = _project_copy(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(ApacheClasspathError, match=r"Maven \(mvn\) is not on the PATH.*KSTATE_BROKER=tansu"):
        apache_classpath(project)


@pytest.mark.skipif(shutil.which("mvn") is None, reason="no Maven: the apache provider's resolution cannot run")
def test_apache_jars_maven_cannot_resolve_are_a_clear_error(tmp_path: Path) -> None:
    project = _project_copy(tmp_path, kafka_version="0.0.0-kstate-no-such-version")
    with pytest.raises(ApacheClasspathError, match=r"Maven could not resolve Kafka .*mvn exit 1"):
        apache_classpath(project)


@needs_java
def test_apache_close_leaves_no_process_and_no_data() -> None:
    """A private broker: started on 127.0.0.1, answering; closed, its JVM is gone and its directory removed."""
    broker = ApacheBroker.start(APACHE_PROJECT)
    try:
        assert broker.bootstrap.startswith("127.0.0.1:")
        create_topic(broker, "t", 1)
        assert produce(broker, "t", [(b"k", b"v", 1, [])]) == 1
        pid, directory = broker.pid, broker.directory
        assert (directory / "data").is_dir()
    finally:
        broker.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not directory.exists()
