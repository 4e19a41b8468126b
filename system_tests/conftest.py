"""System-test fixtures: one real broker per session (embedded Tansu by default), one shared SparkSession for
the oracle, and application clusters whose instance processes never outlive their test.

``KSTATE_ORACLE=python`` computes the oracle without Spark (the same semantics in plain Python); tests using
the Spark oracle are marked ``spark`` and can be deselected with ``-m "not spark"``.
``KSTATE_SPARK_MASTER`` names a cluster instead of ``local[2]``.
"""

from __future__ import annotations

import json
import os
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kstate.app.cluster import AppCluster
from kstate.codecs.store_types import StoreType
from kstate.kafka.broker import Broker, BrokerUnavailable, start_broker
from kstate.spark.oracle import AuditReport, LegacyBoundary, State, audit

ORACLE_ENGINE = os.environ.get("KSTATE_ORACLE", "spark")
SPARK_MASTER = os.environ.get("KSTATE_SPARK_MASTER", "local[2]")
_REPORTS_KEY = pytest.StashKey[list[tuple[str, str]]]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spark: uses the shared SparkSession (deselect with -m 'not spark')")
    config.stash[_REPORTS_KEY] = []


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "spark" in names or ("oracle" in names and ORACLE_ENGINE == "spark"):
            item.add_marker(pytest.mark.spark)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    reports = config.stash.get(_REPORTS_KEY, [])
    if reports:
        terminalreporter.section("kstate system reports")
        for title, text in reports:
            terminalreporter.write_line(f"{title}: {text}")


@pytest.fixture
def system_report(request: pytest.FixtureRequest) -> Callable[[str, Any], None]:
    """Record an outcome (iteration counts, timings) for the terminal summary and the JUnit properties."""

    def report(title: str, data: Any) -> None:
        text = data if isinstance(data, str) else json.dumps(data, sort_keys=True)
        request.config.stash[_REPORTS_KEY].append((title, text))
        request.node.user_properties.append((title, text))

    return report


@pytest.fixture(scope="session")
def broker() -> Iterator[Broker]:
    """The broker under test: ``KSTATE_BOOTSTRAP``, else ``KSTATE_BROKER`` (tansu default)."""
    instance = start_broker()
    try:
        yield instance
    finally:
        instance.close()


@pytest.fixture(autouse=True)
def _broker_stays_alive(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that used the shared broker fails with a clear error if the broker died during it."""
    yield
    if "broker" in request.fixturenames:
        shared: Broker = request.getfixturevalue("broker")
        try:
            shared.check_alive()
        except BrokerUnavailable as exc:
            pytest.fail(f"the shared broker died during this test: {exc}")


@pytest.fixture
def topic_name() -> str:
    return f"kstate-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def app_name() -> str:
    return f"app-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def make_cluster(broker: Broker, tmp_path: Path, app_name: str) -> Iterator[Callable[..., AppCluster]]:
    """``make_cluster(store_type, partitions, **options)``: an application on the shared broker (``options``: the
    family's ``store_options``, ``processor_options``, ``timestamp_jitter_ms``); every instance it started is
    killed when the test ends, whatever happened."""
    clusters: list[AppCluster] = []

    def make(store_type: StoreType, partitions: int, store_name: str = "store", suffix: str = "",
             **options: Any) -> AppCluster:
        cluster = AppCluster(broker, tmp_path / f"cluster{len(clusters)}", application_id=app_name + suffix,
                             store_name=store_name, store_type=store_type, partitions=partitions, **options)
        clusters.append(cluster)
        return cluster

    try:
        yield make
    finally:
        for cluster in clusters:
            cluster.close()


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One SparkSession for the whole run (``local[2]``, UI off)."""
    pytest.importorskip("pyspark")
    from kstate.spark.session import spark_session

    warnings.filterwarnings("ignore", module="pyspark")
    session = spark_session(SPARK_MASTER, conf={"spark.ui.showConsoleProgress": "false"})
    try:
        yield session
    finally:
        session.stop()


Oracle = Callable[..., AuditReport]


@pytest.fixture
def oracle(request: pytest.FixtureRequest, broker: Broker) -> Oracle:
    """``oracle(topic, store_type, actual, boundaries=None)``: audit ``actual`` against the state computed from the
    changelog topic by the Spark job (or the Python engine with ``KSTATE_ORACLE=python``)."""
    session = request.getfixturevalue("spark") if ORACLE_ENGINE == "spark" else None

    def run(topic: str, store_type: StoreType, actual: State,
            boundaries: dict[int, LegacyBoundary] | None = None) -> AuditReport:
        return audit(broker.bootstrap, topic, store_type, actual, spark=session, boundaries=boundaries)

    return run
