"""System-test fixtures: one real broker per session, one shared SparkSession for the oracle, and application
clusters whose instance processes never outlive their test.

The broker is ``KSTATE_BOOTSTRAP`` (an external cluster), else ``KSTATE_BROKER`` (apache, tansu,
testcontainers, auto), else Apache Kafka 4.4.0 run from Maven jars where Java is installed (its Maven project is
``brokers/apache``, resolved once), else the embedded Tansu broker with a one-line notice.

``KSTATE_ORACLE=python`` computes the oracle without Spark (the same semantics in plain Python); tests using
the Spark oracle are marked ``spark`` and can be deselected with ``-m "not spark"``.
``KSTATE_SPARK_MASTER`` names a cluster instead of ``local[2]``.

``--instance CMD`` (or ``KSTATE_INSTANCE``) runs every scenario's instances as CMD, an implementation of the
instance protocol (spec/instance-protocol.md; the reference by default): CMD is described once before any test
(INST-2, a bad answer is a usage error), and a scenario needing a store type, crash point or event CMD did not
describe is skipped as ``unsupported by <implementation>: ...`` (INST-3, INST-40).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import time
import uuid
import warnings
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from kstate.app.cluster import AppCluster
from kstate.app.process import InstanceCommand, InstanceProtocolError, UnsupportedByInstance
from kstate.codecs.store_types import StoreType
from kstate.kafka.broker import (
    APACHE_KAFKA_VERSION,
    ApacheBroker,
    Broker,
    BrokerUnavailable,
    embedded_provider,
    start_broker,
)
from kstate.scratch import scratch_temp_dir
from kstate.spark.oracle import AuditReport, LegacyBoundary, State, audit

ORACLE_ENGINE = os.environ.get("KSTATE_ORACLE", "spark")
SPARK_MASTER = os.environ.get("KSTATE_SPARK_MASTER", "local[2]")
_REPORTS_KEY = pytest.StashKey[list[tuple[str, str]]]()
_INSTANCE_KEY = pytest.StashKey[InstanceCommand | None]()
#: The Maven project of the ``apache`` provider (Kafka's broker jars).
APACHE_PROJECT = Path(__file__).resolve().parent / "brokers" / "apache"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--instance", metavar="CMD", default=os.environ.get("KSTATE_INSTANCE") or None,
                     help="run the scenarios' instances as CMD (an instance-protocol implementation; default the "
                          "reference, or KSTATE_INSTANCE)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spark: uses the shared SparkSession (deselect with -m 'not spark')")
    config.stash[_REPORTS_KEY] = []
    # Stores, state directories and the broker's log on tmpfs where there is one (kstate.scratch).
    scratch = contextlib.ExitStack()
    scratch.enter_context(scratch_temp_dir("system"))
    config.add_cleanup(scratch.close)
    text = config.getoption("--instance", default=None)
    try:
        # Described before any test, so that a command that cannot be used fails the run once (INST-2, INST-41).
        config.stash[_INSTANCE_KEY] = InstanceCommand.from_command_line(text) if text else None
    except InstanceProtocolError as exc:
        raise pytest.UsageError(f"--instance: {exc}") from None


def pytest_report_header(config: pytest.Config) -> list[str]:
    command = config.stash.get(_INSTANCE_KEY, None)
    lines = [f"instance under test: {command if command is not None else 'the reference (python -m kstate.app)'}"]
    if os.environ.get("KSTATE_BOOTSTRAP"):
        lines.append(f"broker: external, {os.environ['KSTATE_BOOTSTRAP']}")
    elif os.environ.get("KSTATE_BROKER"):
        lines.append(f"broker: {os.environ['KSTATE_BROKER']} (KSTATE_BROKER)")
    else:
        kind, notice = embedded_provider()
        lines.append(f"broker: {notice}" if notice else f"broker: {kind} (Kafka {APACHE_KAFKA_VERSION} from Maven jars)")
    return lines


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """A scenario that needs what the instance under test did not describe is an explicit skip (INST-3, INST-40)."""
    try:
        return (yield)
    except UnsupportedByInstance as exc:
        pytest.skip(str(exc))


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
def broker(request: pytest.FixtureRequest) -> Iterator[Broker]:
    """The broker under test: ``KSTATE_BOOTSTRAP``, else ``KSTATE_BROKER``, else apache where Java is installed,
    else tansu. How long an Apache broker took to start and stop goes to the system report."""
    started = time.monotonic()
    instance = start_broker(default="embedded", apache_project=APACHE_PROJECT)
    reports = request.config.stash[_REPORTS_KEY]
    if isinstance(instance, ApacheBroker):
        reports.append(("broker", f"apache (Kafka {APACHE_KAFKA_VERSION}) at {instance.bootstrap}: ready "
                                  f"{time.monotonic() - started:.1f} s after the fixture began (storage format "
                                  f"{instance.format_time:.1f} s, JVM start to first answer {instance.start_times[0]:.1f} s)"))
    try:
        yield instance
    finally:
        stopping = time.monotonic()
        instance.close()
        if isinstance(instance, ApacheBroker):
            reports.append(("broker stop", f"{time.monotonic() - stopping:.1f} s"))


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


@pytest.fixture(scope="session")
def reference_instance() -> InstanceCommand:
    """The reference implementation, as described by its own ``--describe``."""
    return InstanceCommand.reference()


@pytest.fixture(scope="session")
def instance_under_test(request: pytest.FixtureRequest, reference_instance: InstanceCommand) -> InstanceCommand:
    """``--instance CMD`` described (INST-2), or the reference."""
    command = request.config.stash.get(_INSTANCE_KEY, None)
    return command if command is not None else reference_instance


@pytest.fixture(scope="session", autouse=True)
def _instance_in_junit(record_testsuite_property: Callable[[str, object], None],
                       instance_under_test: InstanceCommand) -> None:
    """The instance under test and its describe answer, as properties of the JUnit test suite (INST-42)."""
    record_testsuite_property("instance_implementation", instance_under_test.name)
    record_testsuite_property("instance_command", shlex.join(instance_under_test.argv))
    record_testsuite_property("instance_describe", json.dumps(instance_under_test.description, sort_keys=True))


@pytest.fixture
def topic_name() -> str:
    return f"kstate-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def app_name() -> str:
    return f"app-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def make_cluster(broker: Broker, tmp_path: Path, app_name: str,
                 instance_under_test: InstanceCommand) -> Iterator[Callable[..., AppCluster]]:
    """``make_cluster(store_type, partitions, **options)``: an application on the shared broker (``options``: the
    family's ``store_options``, ``processor_options``, ``timestamp_jitter_ms``, ``instance_command``) whose
    instances run the instance under test unless told otherwise; every instance it started is killed when the
    test ends, whatever happened."""
    clusters: list[AppCluster] = []

    def make(store_type: StoreType, partitions: int, store_name: str = "store", suffix: str = "",
             **options: Any) -> AppCluster:
        options.setdefault("instance_command", instance_under_test)
        cluster = AppCluster(broker, tmp_path / f"cluster{len(clusters)}", application_id=app_name + suffix,
                             store_name=store_name, store_type=store_type, partitions=partitions, **options)
        clusters.append(cluster)
        return cluster

    try:
        yield make
    finally:
        for cluster in clusters:
            cluster.close()


#: Why Spark's own Kafka source is not on the shared session's classpath (None: it is), set when the session starts.
SPARK_KAFKA_PROBLEM: list[str] = []


@pytest.fixture(scope="session")
def spark(request: pytest.FixtureRequest) -> Iterator[Any]:
    """One SparkSession for the whole run (``local[2]``, UI off); where a collected test reads through Spark's own
    Kafka source (``spark_kafka``), with that source on its classpath, fetched by Maven (a JVM takes jars only when
    it starts; issue 24)."""
    pytest.importorskip("pyspark")
    from kstate.spark.session import spark_session
    from kstate.spark.spark_kafka import SparkKafkaUnavailable, connector

    warnings.filterwarnings("ignore", module="pyspark")
    conf = {"spark.ui.showConsoleProgress": "false"}
    if any("spark_kafka" in getattr(item, "fixturenames", ()) for item in request.session.items):
        try:
            conf.update(connector().conf)
        except SparkKafkaUnavailable as exc:
            SPARK_KAFKA_PROBLEM.append(str(exc))
    else:
        SPARK_KAFKA_PROBLEM.append("no collected test reads through Spark's Kafka source")
    session = spark_session(SPARK_MASTER, conf=conf)
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def spark_kafka(spark: Any) -> Any:
    """The shared session, skipping the test where Spark's Kafka source could not be put on its classpath."""
    if SPARK_KAFKA_PROBLEM:
        pytest.skip(SPARK_KAFKA_PROBLEM[0])
    return spark


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
