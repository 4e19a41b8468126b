"""The kit side of the instance protocol: an implementation's ``--describe`` is run and checked (INST-2), every way
it can be wrong is a typed error naming what was wrong, and the kit never gives an instance a store type, crash
point or event it did not describe (INST-3); such a scenario is skipped as unsupported (INST-40)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from kstate.app.config import InstanceConfig
from kstate.app.process import (
    REFERENCE_INSTANCE_ARGV,
    InstanceCommand,
    InstanceProcess,
    InstanceProtocolError,
    UnsupportedByInstance,
)
from kstate.codecs.store_types import StoreType
from kstate.errors import KStateError
from kstate_conformance import rules

GOOD = {"instance_protocol": 1, "implementation": "fake-impl", "version": "0.1", "store_types": ["kv", "timestamped_kv"],
        "crash_points": ["after_put"], "events": ["starting", "opened", "restored", "running", "stopped"]}


def _command(tmp_path: Path, body: str) -> str:
    """A command line running a small Python script whose ``--describe`` does ``body``."""
    script = tmp_path / "instance.py"
    script.write_text("import json, sys, time\nassert sys.argv[1:] == ['--describe'], sys.argv\n" + body + "\n")
    return shlex.join([sys.executable, str(script)])


def _describing(tmp_path: Path, answer: Any) -> str:
    return _command(tmp_path, f"print(json.dumps({answer!r}))")


@rules("INST-2", "INST-40")
def test_a_good_describe_is_read_and_checked(tmp_path: Path) -> None:
    command = InstanceCommand.from_command_line(_describing(tmp_path, GOOD))
    assert command.name == "fake-impl" and command.description == GOOD
    assert command.argv == (sys.executable, str(tmp_path / "instance.py"))
    assert command.supports_store_type(StoreType.TIMESTAMPED_KV) and command.supports_store_type("kv")
    assert not command.supports_store_type(StoreType.WINDOW)
    assert command.supports_crash_point("after_put") and not command.supports_crash_point("after_store_commit")
    assert command.unsupported(["kv", StoreType.SESSION], ["after_put", "after_restore_batch"], ["opened", "wiped"]) == [
        "store type session", "crash point after_restore_batch", "event wiped"]
    command.require(store_types=["kv"], crash_points=["after_put"], events=["restored"])
    with pytest.raises(UnsupportedByInstance, match=r"^unsupported by fake-impl: store type window$"):
        command.require(store_types=[StoreType.WINDOW])


def test_the_reference_describes_itself() -> None:
    reference = InstanceCommand.reference()
    assert reference.argv == REFERENCE_INSTANCE_ARGV and reference.is_reference
    assert reference.supports_store_type(StoreType.TIMESTAMPED_KV_WITH_HEADERS)
    assert reference.supports_crash_point("after_restore_batch")
    assert {"opened", "restored", "refused", "unclean_shutdown", "wiped"} <= reference.events


def _good_with(**changes: object) -> str:
    """An instance body whose ``--describe`` prints the good description with ``changes`` made to it."""
    return f"print(json.dumps({{**{GOOD!r}, **{changes!r}}}))"


def _good_without(field: str) -> str:
    """An instance body whose ``--describe`` prints the good description without ``field``."""
    return f"d = {GOOD!r}; del d[{field!r}]; print(json.dumps(d))"


@rules("INST-2", "INST-41")
@pytest.mark.parametrize(("body", "message"), [
    pytest.param("print('not json')", r"did not print one JSON object", id="not-json"),
    pytest.param("print('[1, 2]')", r"printed list, not a JSON object", id="not-an-object"),
    pytest.param("print()", r"printed nothing on stdout", id="nothing"),
    pytest.param(_good_with(instance_protocol=2), r"speaks instance protocol 2; this kit speaks 1",
                 id="wrong-protocol-version"),
    pytest.param(_good_without("instance_protocol"), r"speaks instance protocol None", id="no-protocol-version"),
    pytest.param(_good_without("store_types"), r"has no 'store_types' list", id="missing-store-types"),
    pytest.param(_good_with(store_types="kv"), r"'store_types' is not a list of strings", id="store-types-not-a-list"),
    pytest.param(_good_with(store_types=["kv", "key_value_x"]), r"unknown store types \['key_value_x'\]",
                 id="unknown-store-type"),
    pytest.param(_good_with(crash_points=["after_lunch"]), r"unknown crash points \['after_lunch'\]",
                 id="unknown-crash-point"),
    pytest.param(_good_with(implementation=""), r"names no implementation", id="no-implementation"),
    pytest.param(_good_with(events=["opened", "stopped"]), r"'events' lacks \['starting', 'restored', 'running'\]",
                 id="events-missing"),
    pytest.param("sys.stderr.write('cannot start: no license\\n'); sys.exit(7)",
                 r"--describe exited with 7: cannot start: no license", id="nonzero-exit"),
    pytest.param("sys.stdout.write('x' * (2 << 20))", r"printed 2097152 bytes, more than the 1048576 allowed",
                 id="huge-answer"),
])
def test_a_bad_describe_is_a_typed_error_naming_what_was_wrong(tmp_path: Path, body: str, message: str) -> None:
    text = _command(tmp_path, body)
    with pytest.raises(InstanceProtocolError, match=message) as error:
        InstanceCommand.from_command_line(text)
    assert isinstance(error.value, KStateError)
    assert str(error.value).startswith(f"instance command {text}: ")


@rules("INST-41")
def test_a_describe_that_does_not_answer_in_time_is_killed(tmp_path: Path) -> None:
    with pytest.raises(InstanceProtocolError, match=r"--describe did not exit within 0.5 s"):
        InstanceCommand.from_command_line(_command(tmp_path, "time.sleep(60)"), timeout=0.5)


@pytest.mark.parametrize(("text", "message"), [
    pytest.param("/nonexistent/kstate-instance --flag", r"cannot be run: No such file or directory", id="not-found"),
    pytest.param("", r"an empty instance command", id="empty"),
    pytest.param("python3 'unbalanced", r"No closing quotation", id="unbalanced-quote"),
])
def test_a_command_that_cannot_be_run_is_a_typed_error(text: str, message: str) -> None:
    with pytest.raises(InstanceProtocolError, match=message):
        InstanceCommand.from_command_line(text)


def _config(tmp_path: Path, store_type: str = "kv") -> InstanceConfig:
    return InstanceConfig(instance_id="i", bootstrap="127.0.0.1:1", application_id="app", input_topic="in",
                          partitions=[0], store_name="s", store_type=store_type, state_dir=str(tmp_path / "state"),
                          status_dir=str(tmp_path / "status"))


@rules("INST-3", "INST-40")
def test_an_instance_is_never_given_what_its_command_did_not_describe(tmp_path: Path) -> None:
    command = InstanceCommand.from_command_line(_describing(tmp_path, GOOD))
    process = InstanceProcess(_config(tmp_path, store_type="window"), command)
    with pytest.raises(UnsupportedByInstance, match="unsupported by fake-impl: store type window"):
        process.start()
    assert process.process is None and process.config.store_type == "window"
    process = InstanceProcess(_config(tmp_path), command)
    with pytest.raises(UnsupportedByInstance, match="crash point after_store_commit"):
        process.start(crash_at="after_store_commit:2")
    assert process.process is None and process.config.crash_at is None  # the refused change was not kept
    with pytest.raises(UnsupportedByInstance, match="event wiped"):
        process.events("wiped")
    assert process.events("opened") == []


@rules("INST-1")
def test_an_instance_runs_its_commands_argv_with_the_config_path(tmp_path: Path) -> None:
    script = tmp_path / "echo_instance.py"
    script.write_text("import json, sys\nif sys.argv[-1] == '--describe':\n"
                      f"    print(json.dumps({GOOD!r}))\nelse:\n    print('ARGS', json.dumps(sys.argv[1:]))\n")
    command = InstanceCommand.from_argv([sys.executable, str(script)])
    process = InstanceProcess(_config(tmp_path), command).start()
    assert process.wait_exit(30) == 0
    config_path = str(tmp_path / "status" / "i.config.json")
    assert f"ARGS {json.dumps([config_path])}" in process.log_tail()
    assert json.loads(Path(config_path).read_text())["store_type"] == "kv"
    other = InstanceCommand.from_argv([sys.executable, str(script), "--variant"])
    process.start(command=other)  # a bounce into another implementation (a mixed fleet)
    assert process.wait_exit(30) == 0 and process.command == other
    assert f"ARGS {json.dumps(['--variant', config_path])}" in process.log_tail()
