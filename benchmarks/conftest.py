"""Fixtures the benchmark modules share: one broker per module, the kit's default provider (issue 24)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from bench_tools import KafkaSide, print_report, start_kafka_side

from kstate.kafka.broker import Broker, BrokerUnavailable, TansuBroker, describe, start_broker

#: The Maven project of the ``apache`` provider (Kafka's broker jars), shared with the system tests.
APACHE_PROJECT = Path(__file__).resolve().parents[1] / "system_tests" / "brokers" / "apache"


def _start() -> Broker:
    """``KSTATE_BOOTSTRAP``, else ``KSTATE_BROKER``, else Apache Kafka where Java is installed; Tansu when the
    default cannot start (a provider named explicitly is never replaced)."""
    if os.environ.get("KSTATE_BOOTSTRAP") or os.environ.get("KSTATE_BROKER"):
        return start_broker(apache_project=APACHE_PROJECT)
    try:
        return start_broker(default="embedded", apache_project=APACHE_PROJECT)
    except BrokerUnavailable as exc:
        print(f"\nbenchmarks: the default broker did not start ({exc}); falling back to embedded Tansu", flush=True)
        return TansuBroker.start()


@pytest.fixture(scope="module")
def bench_broker(request: pytest.FixtureRequest) -> Iterator[Broker]:
    """The broker of one benchmark module (its provider printed first), stopped when the module ends."""
    broker = _start()
    print_report(request, [f"\nbenchmarks on the {describe(broker)}"])
    try:
        yield broker
    finally:
        broker.close()


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaSide]:
    """Kafka's stores for one module (issue 23), skipped where the testee cannot run (no Java or Maven)."""
    side = start_kafka_side(tmp_path_factory.mktemp("kafka"))
    if isinstance(side, str):
        pytest.skip(side)
    try:
        yield side
    finally:
        side.close()
