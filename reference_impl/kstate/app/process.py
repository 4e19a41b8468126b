"""Start, stop, bounce and kill application instances (:mod:`kstate.app.host`) from a test or a tool."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import kstate
from kstate.app.config import InstanceConfig
from kstate.errors import KStateError
from kstate.kafka.broker import _die_with_parent


class InstanceError(KStateError):
    """An instance that exited, did not start, or did not reach a state in time; carries its log tail."""


def _child_env() -> dict[str, str]:
    # The child imports kstate from where this process did, installed or from a checkout.
    package_root = str(Path(kstate.__file__).resolve().parent.parent)
    paths = [package_root, *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)), "PYTHONUNBUFFERED": "1"}


class InstanceProcess:
    """One instance process; the config is rewritten before every start, so a bounce may change it."""

    def __init__(self, config: InstanceConfig) -> None:
        self.config = config
        self.status_dir = Path(config.status_dir)
        self.status_dir.mkdir(parents=True, exist_ok=True)
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def name(self) -> str:
        return self.config.instance_id

    @property
    def log_path(self) -> Path:
        return self.status_dir / f"{self.name}.log"

    @property
    def status_path(self) -> Path:
        return self.status_dir / f"{self.name}.status.json"

    @property
    def events_path(self) -> Path:
        return self.status_dir / f"{self.name}.events.jsonl"

    def start(self, **changes: Any) -> InstanceProcess:
        if self.running:
            raise InstanceError(f"instance {self.name} is already running")
        if changes:
            self.config = replace(self.config, **changes)
        config_path = self.config.write(self.status_dir / f"{self.name}.config.json")
        self.status_path.unlink(missing_ok=True)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen([sys.executable, "-m", "kstate.app", str(config_path)], stdout=log,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=_child_env(),
                                            preexec_fn=_die_with_parent)
        self.starts += 1
        return self

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM: a clean stop (final commit, stores closed). Returns the exit code; SIGKILL after ``timeout``."""
        if self.process is None:
            return 0
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                raise InstanceError(f"instance {self.name} did not stop within {timeout:.0f} s: {self.log_tail()}") from None
        return int(self.process.returncode)

    def kill(self) -> None:
        """SIGKILL: a crash at whatever point the instance is at."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def bounce(self, **changes: Any) -> InstanceProcess:
        """Stop cleanly, then start again, optionally with a changed config (a rolling upgrade step)."""
        code = self.stop()
        if code != 0:
            raise InstanceError(f"instance {self.name} exited with {code} when stopped: {self.log_tail()}")
        return self.start(**changes)

    def wait_exit(self, timeout: float = 30.0) -> int:
        assert self.process is not None
        try:
            return int(self.process.wait(timeout))
        except subprocess.TimeoutExpired:
            raise InstanceError(f"instance {self.name} still running after {timeout:.0f} s") from None

    # --- progress ------------------------------------------------------------------------------------

    def status(self) -> dict[str, Any] | None:
        try:
            status: dict[str, Any] = json.loads(self.status_path.read_text())
            return status
        except (OSError, ValueError):
            return None

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        try:
            lines = self.events_path.read_text().splitlines()
        except OSError:
            return []
        out = []
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a line cut by SIGKILL
            if kind is None or event.get("event") == kind:
                out.append(event)
        return out

    def log_tail(self, size: int = 2000) -> str:
        try:
            return self.log_path.read_bytes()[-size:].decode("utf-8", "replace")
        except OSError:
            return ""

    def wait_until(self, predicate: Callable[[dict[str, Any]], bool], timeout: float, what: str) -> dict[str, Any]:
        """Poll the status until ``predicate`` holds; an exited instance or the timeout is an :class:`InstanceError`."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.status()
            if status is not None and status.get("pid") == self.pid and predicate(status):
                return status
            if not self.running:
                code = None if self.process is None else self.process.returncode
                raise InstanceError(f"instance {self.name} exited ({code}) before {what}: {self.log_tail()}")
            if time.monotonic() > deadline:
                raise InstanceError(f"instance {self.name}: no {what} within {timeout:.0f} s "
                                    f"(status {status}): {self.log_tail()}")
            time.sleep(0.05)

    def wait_running(self, timeout: float = 60.0) -> dict[str, Any]:
        return self.wait_until(lambda s: s.get("state") == "running", timeout, "running state")

    def wait_caught_up(self, input_end: Mapping[int, int], timeout: float = 60.0) -> dict[str, Any]:
        """Until every owned input partition is committed up to ``input_end[p]`` (the next offset to read)."""
        owned = {p: input_end[p] for p in self.config.partitions if p in input_end}

        def caught_up(status: dict[str, Any]) -> bool:
            committed = status.get("input_next", {})
            return all((committed.get(str(p)) or 0) >= end for p, end in owned.items())

        return self.wait_until(caught_up, timeout, f"commit of input up to {owned}")
