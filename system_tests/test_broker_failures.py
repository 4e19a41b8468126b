"""A broker that dies or cannot be reached fails clearly, naming provider and address, within a bounded time;
nothing is left running. Changelog topics get Kafka Streams' configuration per store type (CL-15 to CL-17)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import APACHE_PROJECT

from kstate.codecs.store_types import StoreType
from kstate.kafka.broker import Broker, BrokerUnavailable, ExternalBroker, TansuBroker, ensure_reachable, java_binary
from kstate.kafka.changelog_topics import (
    consume_all,
    create_changelog_topic,
    create_topic,
    describe_topic_config,
    produce,
)

BOUND_S = 15.0


@pytest.fixture
def doomed_broker() -> Iterator[TansuBroker]:
    """A private broker a test may kill."""
    broker = TansuBroker.start()
    try:
        yield broker
    finally:
        broker.close()


def _gone(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def _address_pattern(broker: TansuBroker) -> str:
    return rf"tansu.*127\.0\.0\.1:{broker.port}"


@pytest.mark.parametrize("operation", ["consume", "produce", "create_topic", "ensure_reachable"])
def test_a_broker_killed_mid_test_is_a_clear_bounded_error(doomed_broker: TansuBroker, operation: str) -> None:
    create_topic(doomed_broker, "t", 1)
    produce(doomed_broker, "t", [(b"k", b"v", 1, [])])
    doomed_broker.kill()
    started = time.monotonic()
    with pytest.raises(BrokerUnavailable, match=_address_pattern(doomed_broker)):
        if operation == "consume":
            consume_all(doomed_broker, "t", start_offset=1)
        elif operation == "produce":
            produce(doomed_broker, "t", [(b"k", b"v", 2, [])], timeout=BOUND_S)
        elif operation == "create_topic":
            create_topic(doomed_broker, "u", 1, timeout=5)
        else:
            ensure_reachable(doomed_broker)
    assert time.monotonic() - started < BOUND_S


def test_an_unreachable_external_cluster_is_named() -> None:
    external = ExternalBroker("127.0.0.1:1")
    started = time.monotonic()
    with pytest.raises(BrokerUnavailable, match=r"external broker at 127\.0\.0\.1:1"):
        ensure_reachable(external, timeout=3)
    assert time.monotonic() - started < BOUND_S


@pytest.mark.parametrize("provider", ["tansu", "apache"])
def test_a_killed_test_process_leaves_no_broker_behind(provider: str, tmp_path: Path) -> None:
    """The broker dies with the process that started it, even when that process is SIGKILLed."""
    if provider == "apache" and java_binary() is None:
        pytest.skip("no Java: the apache provider cannot run here")
    start = "TansuBroker.start()" if provider == "tansu" else f"ApacheBroker.start(Path({str(APACHE_PROJECT)!r}))"
    script = ("import sys, time\nfrom pathlib import Path\nfrom kstate.kafka.broker import ApacheBroker, TansuBroker\n"
              f"b = {start}\nprint(b.pid, b.log_path, flush=True)\ntime.sleep(120)\n")
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, env={**os.environ,
                             "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
    try:
        assert child.stdout is not None
        pid_text, log_path = child.stdout.readline().split()
        broker_pid = int(pid_text)
        child.kill()
        child.wait(10)
        assert _gone(broker_pid), f"broker {broker_pid} outlived the process that started it"
    finally:
        child.kill()
        child.wait(10)
        if provider == "apache":
            # A SIGKILLed process removes nothing: its broker's temporary directory is left, removed here.
            shutil.rmtree(Path(log_path.decode()).parent, ignore_errors=True)


STORE_TOPIC_CASES = [
    (StoreType.KEY_VALUE, {}, {"cleanup.policy": "compact"}),
    (StoreType.TIMESTAMPED_KV, {}, {"cleanup.policy": "compact"}),
    (StoreType.TIMESTAMPED_KV_WITH_HEADERS, {}, {"cleanup.policy": "compact"}),
    (StoreType.VERSIONED_KV, {"history_retention_ms": 3_600_000},
     {"cleanup.policy": "compact", "min.compaction.lag.ms": str(3_600_000 + 86_400_000)}),
    (StoreType.TIMESTAMPED_WINDOW, {"retention_ms": 600_000},
     {"cleanup.policy": "compact,delete", "retention.ms": str(600_000 + 86_400_000)}),
    (StoreType.SESSION, {"retention_ms": 60_000},
     {"cleanup.policy": "compact,delete", "retention.ms": str(60_000 + 86_400_000)}),
]


@pytest.mark.parametrize(("store_type", "retention", "expected"), STORE_TOPIC_CASES, ids=lambda c: getattr(c, "value", ""))
def test_changelog_topics_get_kafka_streams_config(broker: Broker, app_name: str, store_type: StoreType,
                                                    retention: dict[str, int], expected: dict[str, str]) -> None:
    """CL-14 to CL-17 on a real broker: the name, and the configuration the broker reports back."""
    topic = create_changelog_topic(broker, app_name, "s", store_type, 2, **retention)
    assert topic == f"{app_name}-s-changelog"
    config = describe_topic_config(broker, topic)
    for key, value in {"message.timestamp.type": "CreateTime", **expected}.items():
        assert config.get(key) == value, (key, config)


def test_reading_a_missing_topic_or_partition_names_it(broker: Broker) -> None:
    """No waiting for progress that cannot come: the metadata says what is missing, within the timeout."""
    from kstate.kafka.changelog_topics import ChangelogIOError, iter_batches

    started = time.monotonic()
    with pytest.raises(ChangelogIOError, match="topic kstate-no-such-topic does not exist"):
        list(iter_batches(broker.bootstrap, "kstate-no-such-topic", 0, timeout=2.0))
    topic = "kstate-one-partition"
    create_topic(broker, topic, partitions=1)
    with pytest.raises(ChangelogIOError, match=f"topic {topic} has no partition 3 \\(it has 1\\)"):
        list(iter_batches(broker.bootstrap, topic, 3, timeout=2.0))
    assert time.monotonic() - started < BOUND_S
