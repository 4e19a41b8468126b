"""The kit's broker as a service outside pytest: ``kstate broker start|stop|status`` (issue 34).

``start`` runs a small supervisor process, detached from the terminal, that starts the broker the system tests
start (:func:`kstate.kafka.broker.start_broker`: Apache Kafka from Maven jars where Java is installed, else the
embedded Tansu broker; always on 127.0.0.1), writes ``broker.json`` (bootstrap, provider, pid) in the service
directory, and closes the broker when it gets SIGTERM. The broker process dies with its supervisor
(PR_SET_PDEATHSIG), so ``stop`` (SIGTERM to the supervisor) leaves nothing running.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from kstate.errors import KStateError
from kstate.kafka.broker import APACHE_KAFKA_VERSION, ApacheBroker, BrokerUnavailable, start_broker

#: The service directory when none is given: beside the working directory, as a tool's state is.
DEFAULT_SERVICE_DIR = Path(".kstate") / "broker"
STATE_FILE = "broker.json"
ERROR_FILE = "broker.error"
LOG_FILE = "service.log"
#: Seconds ``start`` waits for the supervisor to report a broker (Maven may resolve the broker's jars first).
START_TIMEOUT_S = 900.0
STOP_TIMEOUT_S = 60.0


class BrokerServiceError(KStateError):
    """The broker service could not be started, found or stopped; the message says why."""


@dataclass(frozen=True)
class RunningBroker:
    """What ``broker.json`` records of a running service."""

    bootstrap: str
    provider: str
    pid: int
    directory: Path

    def describe(self) -> str:
        kind = f"Apache Kafka {APACHE_KAFKA_VERSION}" if self.provider == "apache" else self.provider
        return f"{kind} broker at {self.bootstrap} (service pid {self.pid}, {self.directory})"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child of ours counts as gone
        done, _status = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        return True


def running(directory: Path = DEFAULT_SERVICE_DIR) -> RunningBroker | None:
    """The service running from ``directory``, or None (no state file, or its supervisor is gone)."""
    state = Path(directory) / STATE_FILE
    try:
        data = json.loads(state.read_text(encoding="utf-8"))
        found = RunningBroker(str(data["bootstrap"]), str(data["provider"]), int(data["pid"]), Path(directory))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return found if _alive(found.pid) else None


def start(directory: Path = DEFAULT_SERVICE_DIR, provider: str = "embedded",
          timeout: float = START_TIMEOUT_S) -> RunningBroker:
    """Start the service from ``directory`` (or return the one running there) and wait until its broker answers."""
    directory = Path(directory).resolve()
    already = running(directory)
    if already is not None:
        return already
    directory.mkdir(parents=True, exist_ok=True)
    for name in (STATE_FILE, ERROR_FILE):
        (directory / name).unlink(missing_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    with (directory / LOG_FILE).open("ab") as log:
        process = subprocess.Popen([sys.executable, "-m", "kstate.kafka.broker_service", str(directory), provider],
                                   stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True, env=env)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = running(directory)
        if found is not None:
            return found
        if (directory / ERROR_FILE).exists() or process.poll() is not None:
            process.wait(10)
            reason = _read(directory / ERROR_FILE) or _read(directory / LOG_FILE)[-800:]
            raise BrokerServiceError(f"the broker did not start: {reason.strip()}")
        time.sleep(0.2)
    process.terminate()
    raise BrokerServiceError(f"the broker did not start within {timeout:.0f} s (log: {directory / LOG_FILE})")


def stop(directory: Path = DEFAULT_SERVICE_DIR, timeout: float = STOP_TIMEOUT_S) -> RunningBroker | None:
    """Stop the service running from ``directory``; None if none was running there."""
    found = running(directory)
    if found is None:
        (Path(directory) / STATE_FILE).unlink(missing_ok=True)
        return None
    os.kill(found.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(found.pid):
            (Path(directory) / STATE_FILE).unlink(missing_ok=True)
            return found
        time.sleep(0.2)
    os.kill(found.pid, signal.SIGKILL)  # the broker dies with it (PR_SET_PDEATHSIG)
    (Path(directory) / STATE_FILE).unlink(missing_ok=True)
    return found


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def serve(directory: Path, provider: str) -> int:
    """The supervisor: start the broker, record it, wait for SIGTERM or SIGINT, close it."""
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    try:
        broker = start_broker(provider)
    except (BrokerUnavailable, OSError) as exc:
        (directory / ERROR_FILE).write_text(str(exc), encoding="utf-8")
        return 1
    try:
        provider_name = "apache" if isinstance(broker, ApacheBroker) else str(getattr(broker, "provider", provider))
        staged = directory / (STATE_FILE + ".tmp")
        staged.write_text(json.dumps({"bootstrap": broker.bootstrap, "provider": provider_name, "pid": os.getpid()}),
                          encoding="utf-8")
        staged.replace(directory / STATE_FILE)
        while not stopping.wait(1.0):
            broker.check_alive()
        return 0
    except BrokerUnavailable as exc:
        (directory / ERROR_FILE).write_text(str(exc), encoding="utf-8")
        return 1
    finally:
        broker.close()
        (directory / STATE_FILE).unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(serve(Path(sys.argv[1]), sys.argv[2]))
