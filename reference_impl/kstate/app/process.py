"""Start, stop, bounce and kill application instances from a test or a tool, of any implementation.

An implementation is a command line (spec/instance-protocol.md, INST-1): the kit asks it ``--describe`` once
(INST-2, :class:`InstanceCommand`), then starts each instance as ``CMD... CONFIG_PATH`` (:class:`InstanceProcess`).
The reference is ``python -m kstate.app`` (:mod:`kstate.app.host`).
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import kstate
from kstate.app.config import InstanceConfig
from kstate.codecs.store_types import StoreType, UnknownStoreTypeError
from kstate.errors import KStateError
from kstate.kafka.broker import _die_with_parent


class InstanceError(KStateError):
    """An instance that exited, did not start, or did not reach a state in time; carries its log tail."""


class InstanceProtocolError(KStateError):
    """An instance command that cannot be run, or whose ``--describe`` answer breaks INST-2; names what was wrong."""


class UnsupportedByInstance(InstanceProtocolError):
    """The kit was about to give an instance a store type, crash point or event its describe did not list (INST-3)."""


#: The reference implementation's command line (INST-1).
REFERENCE_INSTANCE_ARGV: tuple[str, ...] = (sys.executable, "-m", "kstate.app")
#: The instance protocol version this kit speaks (INST-2).
INSTANCE_PROTOCOL_VERSION = 1
#: Seconds an implementation has to answer ``--describe`` (INST-2).
DESCRIBE_TIMEOUT_S = 30.0
#: The events every instance writes, so its describe lists them (INST-2).
REQUIRED_EVENTS = ("starting", "opened", "restored", "running", "stopped")
#: A describe answer larger than this is refused unread: it is one small JSON object.
MAX_DESCRIBE_BYTES = 1 << 20


def _child_env() -> dict[str, str]:
    # The child imports kstate from where this process did, installed or from a checkout.
    package_root = str(Path(kstate.__file__).resolve().parent.parent)
    paths = [package_root, *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)), "PYTHONUNBUFFERED": "1"}


def _string_list(description: Mapping[str, Any], name: str, required: bool) -> tuple[str, ...]:
    if name not in description:
        if required:
            raise InstanceProtocolError(f"its describe has no {name!r} list")
        return ()
    values = description[name]
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise InstanceProtocolError(f"its describe's {name!r} is not a list of strings: {values!r}")
    return tuple(values)


def check_description(description: Any) -> dict[str, Any]:
    """``description`` if it is a describe answer this kit can use (INST-2); else :class:`InstanceProtocolError`."""
    from kstate.app.config import CRASH_POINTS

    if not isinstance(description, dict):
        raise InstanceProtocolError(f"its describe printed {type(description).__name__}, not a JSON object")
    version = description.get("instance_protocol")
    if version != INSTANCE_PROTOCOL_VERSION:
        raise InstanceProtocolError(f"it speaks instance protocol {version!r}; this kit speaks {INSTANCE_PROTOCOL_VERSION}")
    name = description.get("implementation")
    if not isinstance(name, str) or not name.strip():
        raise InstanceProtocolError(f"its describe names no implementation (\"implementation\": {name!r})")
    unknown: list[str] = []
    for store_type in _string_list(description, "store_types", required=True):
        try:
            StoreType.parse(store_type)
        except UnknownStoreTypeError:
            unknown.append(store_type)
    if unknown:
        raise InstanceProtocolError(f"its describe lists unknown store types {unknown}; known: "
                                    f"{', '.join(t.value for t in StoreType)}")
    points = [p for p in _string_list(description, "crash_points", required=False) if p not in CRASH_POINTS]
    if points:
        raise InstanceProtocolError(f"its describe lists unknown crash points {points}; known: {', '.join(CRASH_POINTS)}")
    missing = [e for e in REQUIRED_EVENTS if e not in _string_list(description, "events", required=True)]
    if missing:
        raise InstanceProtocolError(f"its describe's 'events' lacks {missing}, which every instance writes")
    return description


def _tail(path: Path, size: int = 1000) -> str:
    with path.open("rb") as f:
        f.seek(max(0, path.stat().st_size - size))
        return f.read().decode("utf-8", "replace").strip()


@dataclass(frozen=True)
class InstanceCommand:
    """An implementation's command line and its checked ``--describe`` answer (INST-1, INST-2)."""

    argv: tuple[str, ...]
    description: dict[str, Any] = field(hash=False, compare=False)

    @classmethod
    def from_command_line(cls, text: str, timeout: float = DESCRIBE_TIMEOUT_S) -> InstanceCommand:
        """Split ``text`` as a shell would (shlex), run ``--describe`` and check its answer (INST-1, INST-2)."""
        try:
            argv = tuple(shlex.split(text))
        except ValueError as exc:
            raise InstanceProtocolError(f"instance command {text!r}: {exc}") from None
        return cls.from_argv(argv, timeout)

    @classmethod
    def from_argv(cls, argv: Iterable[str], timeout: float = DESCRIBE_TIMEOUT_S) -> InstanceCommand:
        argv = tuple(argv)
        if not argv:
            raise InstanceProtocolError("an empty instance command")
        shown = shlex.join(argv)
        try:
            description = check_description(_describe(argv, timeout))
        except InstanceProtocolError as exc:
            raise type(exc)(f"instance command {shown}: {exc}") from None
        return cls(argv, description)

    @classmethod
    def reference(cls) -> InstanceCommand:
        """The reference implementation, described by itself (once per process)."""
        return _reference_command()

    @property
    def name(self) -> str:
        return str(self.description["implementation"])

    @property
    def is_reference(self) -> bool:
        return self.argv == REFERENCE_INSTANCE_ARGV

    @property
    def store_types(self) -> frozenset[StoreType]:
        return frozenset(StoreType.parse(t) for t in self.description["store_types"])

    @property
    def crash_points(self) -> frozenset[str]:
        return frozenset(self.description.get("crash_points", ()))

    @property
    def events(self) -> frozenset[str]:
        return frozenset(self.description.get("events", ()))

    def supports_store_type(self, store_type: StoreType | str) -> bool:
        return StoreType.parse(store_type) in self.store_types if isinstance(store_type, str) else (
            store_type in self.store_types)

    def supports_crash_point(self, point: str) -> bool:
        return point in self.crash_points

    def supports_event(self, event: str) -> bool:
        return event in self.events

    def unsupported(self, store_types: Iterable[StoreType | str] = (), crash_points: Iterable[str] = (),
                    events: Iterable[str] = ()) -> list[str]:
        """What of the given this implementation did not describe, one phrase each (empty: all supported)."""
        missing = [f"store type {StoreType.parse(t).value if isinstance(t, str) else t.value}"
                   for t in dict.fromkeys(store_types) if not self.supports_store_type(t)]
        missing += [f"crash point {p}" for p in dict.fromkeys(crash_points) if not self.supports_crash_point(p)]
        missing += [f"event {e}" for e in dict.fromkeys(events) if not self.supports_event(e)]
        return missing

    def require(self, store_types: Iterable[StoreType | str] = (), crash_points: Iterable[str] = (),
                events: Iterable[str] = ()) -> None:
        """:class:`UnsupportedByInstance` (``unsupported by <implementation>: ...``) unless all are described (INST-3,
        INST-40)."""
        missing = self.unsupported(store_types, crash_points, events)
        if missing:
            raise UnsupportedByInstance(f"unsupported by {self.name}: {', '.join(missing)}")

    def __str__(self) -> str:
        return f"{self.name} ({shlex.join(self.argv)})"


def _describe(argv: tuple[str, ...], timeout: float) -> Any:
    """Run ``CMD... --describe``; its one JSON object, read from a file so that no answer size is held in memory."""
    with tempfile.TemporaryDirectory(prefix="kstate-describe-") as tmp:
        out_path, err_path = Path(tmp) / "stdout", Path(tmp) / "stderr"
        with out_path.open("wb") as out, err_path.open("wb") as err:
            try:
                process = subprocess.Popen([*argv, "--describe"], stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                           env=_child_env(), preexec_fn=_die_with_parent)
            except OSError as exc:
                raise InstanceProtocolError(f"cannot be run: {exc.strerror or exc} ({argv[0]})") from None
            try:
                code = process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
                raise InstanceProtocolError(f"--describe did not exit within {timeout:g} s") from None
        if code != 0:
            raise InstanceProtocolError(f"--describe exited with {code}: {_tail(err_path) or '(no stderr)'}")
        size = out_path.stat().st_size
        if size > MAX_DESCRIBE_BYTES:
            raise InstanceProtocolError(f"--describe printed {size} bytes, more than the {MAX_DESCRIBE_BYTES} allowed")
        text = out_path.read_bytes().decode("utf-8", "replace").strip()
    if not text:
        raise InstanceProtocolError("--describe printed nothing on stdout")
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InstanceProtocolError(f"--describe did not print one JSON object ({exc}): {text[:200]!r}") from None


@functools.cache
def _reference_command() -> InstanceCommand:
    return InstanceCommand.from_argv(REFERENCE_INSTANCE_ARGV)


class InstanceProcess:
    """One instance process of ``command`` (None: the reference); the config is rewritten before every start, so
    a bounce may change it, and the command too (a mixed fleet)."""

    def __init__(self, config: InstanceConfig, command: InstanceCommand | None = None) -> None:
        self.config = config
        self.command = command
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

    @property
    def argv(self) -> tuple[str, ...]:
        return self.command.argv if self.command is not None else REFERENCE_INSTANCE_ARGV

    def start(self, command: InstanceCommand | None = None, **changes: Any) -> InstanceProcess:
        """Start with ``changes`` to the config, and as ``command`` if given; the config's store type and crash
        point must be ones the command described (:class:`UnsupportedByInstance`, INST-3)."""
        if self.running:
            raise InstanceError(f"instance {self.name} is already running")
        config = replace(self.config, **changes) if changes else self.config
        command = command or self.command
        if command is not None:
            crash_point = (config.crash_at or "").partition(":")[0]
            command.require(store_types=[config.store_type], crash_points=[crash_point] if crash_point else [])
        self.config, self.command = config, command
        config_path = self.config.write(self.status_dir / f"{self.name}.config.json")
        self.status_path.unlink(missing_ok=True)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen([*self.argv, str(config_path)], stdout=log,
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

    def bounce(self, command: InstanceCommand | None = None, **changes: Any) -> InstanceProcess:
        """Stop cleanly, then start again, optionally with a changed config or command (a rolling upgrade step)."""
        code = self.stop()
        if code != 0:
            raise InstanceError(f"instance {self.name} exited with {code} when stopped: {self.log_tail()}")
        return self.start(command, **changes)

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
        """The events written so far (INST-21), of ``kind`` if given: one the command described (INST-3)."""
        if kind is not None and self.command is not None:
            self.command.require(events=[kind])
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
