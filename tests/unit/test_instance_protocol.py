"""The instance protocol (spec/instance-protocol.md) spoken by the reference instance (``python -m kstate.app``)
and by the second, independent instance (``examples/testee_instance/instance.py``) on the embedded broker.

Both run the same input on applications of their own; their changelogs must be equal record for record and
byte for byte, and the state directories they leave equal in every data column family.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from kstate.app.cluster import AppCluster
from kstate.app.config import CRASH_POINTS, InstanceConfig
from kstate.codecs.store_types import BUILT_TYPES, Family, StoreType
from kstate.codecs.store_types import STORE_TYPES as STORE_TYPES_INFO
from kstate.kafka.broker import Broker, start_broker
from kstate.kafka.changelog_topics import consume_all
from kstate.store_dump import dump_segmented_store, dump_store
from kstate_conformance import rules

SECOND_INSTANCE = Path(__file__).resolve().parents[2] / "examples" / "testee_instance" / "instance.py"
#: The command lines of the two instances (INST-1): the reference and the second instance over the reference testee.
COMMANDS = {
    "reference": [sys.executable, "-m", "kstate.app"],
    "second": [sys.executable, str(SECOND_INSTANCE), "--testee", f"{sys.executable} -m kstate.cli testee"],
}
PARTITIONS = 2
#: Store types of every family both instances support, with the family's store and processor options.
STORE_TYPES: dict[StoreType, tuple[dict[str, Any], dict[str, int]]] = {
    StoreType.KEY_VALUE: ({}, {}),
    StoreType.TIMESTAMPED_KV_WITH_HEADERS: ({}, {}),
    StoreType.VERSIONED_KV_WITH_HEADERS: ({"history_retention_ms": 60_000}, {}),
    # A key comes back every 50 ms: two records of a key share a window, and sessions merge.
    StoreType.TIMESTAMPED_WINDOW_WITH_HEADERS: ({"retention_ms": 60_000, "window_size_ms": 100}, {"grace_ms": 20}),
    StoreType.SESSION_WITH_HEADERS: ({"retention_ms": 60_000}, {"inactivity_gap_ms": 60, "grace_ms": 100}),
}


def input_records(partition: int) -> list[tuple[bytes, bytes | None, int, list[tuple[str, bytes | None]]]]:
    """A few records: keys written twice or more, a tombstone, headers with a null value, and one record (seq 9)
    older than its key's previous one in the same window and session."""
    records: list[tuple[bytes, bytes | None, int, list[tuple[str, bytes | None]]]] = []
    for seq in range(12):
        key = f"k{partition}-{seq % 5}".encode()
        value = None if seq == 7 else f"v{partition}-{seq}".encode()
        headers: list[tuple[str, bytes | None]] = [("seq", str(seq).encode())] + ([("n", None)] if seq % 3 == 0 else [])
        records.append((key, value, 1_700_000_000_000 + seq * 10 - (55 if seq == 9 else 0), headers))
    return records


@dataclass
class Run:
    """One instance's run over the input: its cluster, config, exit code, status, events and changelog."""

    cluster: AppCluster
    config: InstanceConfig
    exit_code: int
    status: dict[str, Any]
    events: list[dict[str, Any]]
    changelog: dict[int, list[dict[str, Any]]]
    restart_events: list[dict[str, Any]]


def _events(config: InstanceConfig) -> list[dict[str, Any]]:
    path = Path(config.status_dir) / f"{config.instance_id}.events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _status(config: InstanceConfig) -> dict[str, Any] | None:
    try:
        status: dict[str, Any] = json.loads((Path(config.status_dir) / f"{config.instance_id}.status.json").read_text())
        return status
    except (OSError, ValueError):
        return None


def _start(name: str, config: InstanceConfig) -> subprocess.Popen[bytes]:
    # An unknown field in the config must be ignored (INST-5).
    path = Path(config.status_dir) / f"{config.instance_id}.config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**asdict(config), "a_field_from_the_future": {"x": [1]}}))
    (Path(config.status_dir) / f"{config.instance_id}.status.json").unlink(missing_ok=True)
    log = (Path(config.status_dir) / f"{config.instance_id}.log").open("ab")
    return subprocess.Popen([*COMMANDS[name], str(path)], stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)


def _wait(process: subprocess.Popen[bytes], config: InstanceConfig, until: Any, what: str) -> dict[str, Any]:
    deadline = time.monotonic() + 90
    while True:
        status = _status(config)
        if status is not None and status.get("pid") == process.pid and until(status):
            return status
        log = Path(config.status_dir) / f"{config.instance_id}.log"
        assert process.poll() is None, f"{config.instance_id} exited {process.returncode} before {what}: " \
                                       f"{log.read_text(errors='replace')[-2000:]}"
        assert time.monotonic() < deadline, f"{config.instance_id}: no {what} (status {status})"
        time.sleep(0.05)


def _stop(process: subprocess.Popen[bytes]) -> int:
    process.send_signal(signal.SIGTERM)
    return process.wait(60)


def _run_and_stop(process: subprocess.Popen[bytes], config: InstanceConfig, what: str) -> None:
    """Until the instance is running, then SIGTERM: it must stop with exit 0 (INST-17)."""
    _wait(process, config, lambda s: s["state"] == "running", what)
    assert _stop(process) == 0


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with contextlib.closing(start_broker()) as started:
        yield started


def _data(config: InstanceConfig, partition: int, suffix: str = "") -> Any:
    """The data column families of the store of task ``0_<partition>`` (of every segment for a segmented store)."""
    store_type = StoreType(config.store_type)
    read = dump_store if STORE_TYPES_INFO[store_type].single_database else dump_segmented_store
    return read(config.state_dir + suffix, config.application_id, f"0_{partition}", config.store_name,
                store_type).data_families()


@pytest.fixture(scope="module", params=list(STORE_TYPES), ids=lambda t: t.value)
def runs(request: pytest.FixtureRequest, broker: Broker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Run]]:
    """Both instances run the same input on applications of their own: started, caught up, stopped by SIGTERM;
    then started again on an emptied state directory (a restore of the whole changelog) and stopped."""
    store_type: StoreType = request.param
    out: dict[str, Run] = {}
    clusters: list[AppCluster] = []
    try:
        for name in COMMANDS:
            root = tmp_path_factory.mktemp(f"{name}-{store_type.value}")
            store_options, processor_options = STORE_TYPES[store_type]
            cluster = AppCluster(broker, root, application_id=f"inst-{name}-{store_type.value}-{time.time_ns()}",
                                 store_name="counts", store_type=store_type, partitions=PARTITIONS,
                                 store_options=store_options, processor_options=processor_options)
            clusters.append(cluster)
            for partition in range(PARTITIONS):
                cluster.produce(partition, input_records(partition))
            end = cluster.input_end()
            config = cluster.instance(name, range(PARTITIONS)).config
            process = _start(name, config)
            _wait(process, config, lambda s, e=end: all(s["input_next"].get(str(p)) == o for p, o in e.items()),
                  "commit of the whole input")
            code = _stop(process)
            status = _status(config) or {}
            events = _events(config)
            changelog = {p: consume_all(broker, cluster.changelog_topic, p) for p in range(PARTITIONS)}
            # Emptied state directory: everything comes back from the changelog (INST-14).
            shutil.copytree(config.state_dir, f"{config.state_dir}-first")
            shutil.rmtree(config.state_dir)
            Path(config.status_dir, f"{config.instance_id}.events.jsonl").unlink()
            _run_and_stop(_start(name, config), config, "running again")
            out[name] = Run(cluster, config, code, status, events, changelog, _events(config))
        yield out
    finally:
        for cluster in clusters:
            cluster.close()


def _describe(name: str) -> dict[str, Any]:
    done = subprocess.run([*COMMANDS[name], "--describe"], capture_output=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    lines = done.stdout.decode().strip().splitlines()
    assert len(lines) == 1, f"--describe printed {lines}"
    description: dict[str, Any] = json.loads(lines[0])
    return description


@rules("INST-1", "INST-2")
@pytest.mark.parametrize("name", COMMANDS)
def test_describe_prints_one_valid_object(name: str) -> None:
    description = _describe(name)
    assert description["instance_protocol"] == 1
    assert isinstance(description["implementation"], str) and description["implementation"]
    assert set(description) >= {"store_types", "crash_points", "events"}
    built = {t.value for t in BUILT_TYPES}
    assert description["store_types"] and set(description["store_types"]) <= built
    assert set(description["crash_points"]) <= set(CRASH_POINTS)
    assert {"starting", "opened", "restored", "running", "stopped"} <= set(description["events"])
    if name == "reference":
        assert set(description["store_types"]) == built and description["crash_points"] == list(CRASH_POINTS)
    else:
        assert set(description["crash_points"]) == set(CRASH_POINTS) and "kv" in description["store_types"]


@rules("INST-5", "INST-15", "INST-17", "INST-20")
@pytest.mark.parametrize("name", COMMANDS)
def test_an_instance_commits_the_whole_input_and_stops_cleanly_on_sigterm(runs: dict[str, Run], name: str) -> None:
    run = runs[name]
    assert run.exit_code == 0
    end = run.cluster.input_end()
    assert run.status["state"] == "stopped" and run.status["instance"] == name
    assert run.status["input_next"] == {str(p): o for p, o in end.items()}
    store_type = StoreType(run.config.store_type)
    read = dump_store if STORE_TYPES_INFO[store_type].single_database else dump_segmented_store
    for partition in range(PARTITIONS):
        store = read(run.config.state_dir + "-first", run.config.application_id, f"0_{partition}",
                     run.config.store_name, store_type)
        assert store.status_open is False, "a clean stop closes the store"
        assert store.committed_offset(run.cluster.changelog_topic, partition) == run.changelog[partition][-1]["offset"]


@rules("INST-21", "INST-14")
@pytest.mark.parametrize("name", COMMANDS)
def test_an_instance_reports_its_events(runs: dict[str, Run], name: str) -> None:
    run = runs[name]
    kinds = [e["event"] for e in run.events]
    assert kinds[0] == "starting" and kinds[-1] == "stopped"
    assert kinds.count("opened") == kinds.count("restored") == PARTITIONS and "running" in kinds
    for event in run.events:
        assert event["instance"] == name and isinstance(event["pid"], int) and isinstance(event["time"], float)
    opened = [e for e in run.events if e["event"] == "opened"]
    assert {e["partition"] for e in opened} == set(range(PARTITIONS))
    assert all(e["store_type"] == run.config.store_type and e["committed_changelog_offset"] is None for e in opened)
    if STORE_TYPES_INFO[StoreType(run.config.store_type)].family is Family.KEY_VALUE:
        assert all(e["mode"] == "regular" for e in opened)
    # Started again on an empty state directory: each partition restores its whole changelog.
    restored = {e["partition"]: e for e in run.restart_events if e["event"] == "restored"}
    for partition in range(PARTITIONS):
        records = run.changelog[partition]
        assert restored[partition]["records"] == len(records)
        assert (restored[partition]["first_offset"], restored[partition]["last_offset"]) == (
            records[0]["offset"], records[-1]["offset"])


@rules("INST-11", "INST-12", "INST-13")
def test_both_instances_write_the_same_changelog_byte_for_byte(runs: dict[str, Run]) -> None:
    reference, second = runs["reference"].changelog, runs["second"].changelog
    for partition in range(PARTITIONS):
        assert reference[partition], "the reference wrote no changelog"
        assert second[partition] == reference[partition]


@rules("INST-10", "INST-14", "INST-30")
def test_both_instances_leave_equal_stores(runs: dict[str, Run]) -> None:
    for partition in range(PARTITIONS):
        # After processing, and after the restore of the whole changelog.
        dumps = {(name, suffix): _data(run.config, partition, suffix) for name, run in runs.items()
                 for suffix in ("-first", "")}
        first = dumps["reference", "-first"]
        assert first, "the reference wrote nothing"
        assert all(found == first for found in dumps.values()), sorted(dumps)


def _config_without(tmp_path: Path, **changes: Any) -> Path:
    config = asdict(InstanceConfig(instance_id="i", bootstrap="127.0.0.1:1", application_id="a", input_topic="in",
                                   partitions=[0], store_name="s", store_type="kv", state_dir=str(tmp_path / "state"),
                                   status_dir=str(tmp_path / "status")))
    for name, value in changes.items():
        if value is None:
            del config[name]
        else:
            config[name] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


@rules("INST-6", "INST-18")
@pytest.mark.parametrize("name", COMMANDS)
@pytest.mark.parametrize(("field", "value"), [("bootstrap", None), ("partitions", "0"), ("store_type", 5)])
def test_a_missing_or_mistyped_config_field_is_a_usage_error_naming_it(tmp_path: Path, name: str, field: str,
                                                                        value: Any) -> None:
    path = _config_without(tmp_path, **{field: value})
    done = subprocess.run([*COMMANDS[name], str(path)], capture_output=True, timeout=60, check=False)
    assert done.returncode == 64
    assert f"'{field}'" in done.stderr.decode(), done.stderr
    assert "Traceback" not in done.stderr.decode()
    assert not (tmp_path / "state").exists(), "nothing is opened on a bad config"


@rules("INST-1", "INST-18")
@pytest.mark.parametrize("name", COMMANDS)
def test_a_bad_command_line_is_a_usage_error(name: str) -> None:
    done = subprocess.run([*COMMANDS[name], "a.json", "b.json"], capture_output=True, timeout=60, check=False)
    assert done.returncode == 64 and b"usage" in done.stderr


def _leave_store(config: InstanceConfig, store_type: str, *, crash: bool) -> None:
    """Leave a store in partition 0's task directory as a process of ``store_type`` would: crashed or closed."""
    from kstate.ops import call

    opened = call("store.open", {"store_type": store_type, "state_dir": config.state_dir, "name": config.store_name,
                                 "application_id": config.application_id, "task_id": "0_0"})
    handle = opened["handle"]
    call("store.put", {"handle": handle, "key": "6b", "value": "00" * 8 + "76" if store_type != "kv" else "76"})
    call("store.commit", {"handle": handle, "changelog_offsets": []})
    call("store.crash" if crash else "store.close", {"handle": handle})


@pytest.fixture(scope="module")
def small_cluster(broker: Broker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppCluster]:
    cluster = AppCluster(broker, tmp_path_factory.mktemp("small"), application_id=f"inst-small-{time.time_ns()}",
                         store_name="counts", store_type=StoreType.KEY_VALUE, partitions=1)
    try:
        yield cluster
    finally:
        cluster.close()


def _start_over(cluster: AppCluster, name: str, instance_id: str, left_type: StoreType, *, crash: bool,
                **settings: Any) -> tuple[subprocess.Popen[bytes], InstanceConfig]:
    """Instance ``name`` started over a store of ``left_type`` left in partition 0's task directory."""
    config = cluster.instance(instance_id, [0], **settings).config
    _leave_store(config, left_type.value, crash=crash)
    return _start(name, config), config


@rules("INST-16", "INST-18", "INST-21")
@pytest.mark.parametrize("name", COMMANDS)
@pytest.mark.parametrize("policy", ["fail", "wipe"])
def test_a_store_written_by_a_newer_type_is_refused_or_wiped(small_cluster: AppCluster, name: str,
                                                             policy: str) -> None:
    process, config = _start_over(small_cluster, name, f"{name}-refused-{policy}", StoreType.TIMESTAMPED_KV,
                                  crash=False, on_refused=policy)
    if policy == "fail":
        assert process.wait(60) == 3
        kinds = [e["event"] for e in _events(config)]
        assert "refused" in kinds and kinds[-1] == "exit" and "running" not in kinds
        assert _events(config)[-1]["code"] == 3
        return
    _run_and_stop(process, config, "running after the wipe")
    kinds = [e["event"] for e in _events(config)]
    assert kinds.index("refused") < kinds.index("wiped") < kinds.index("opened")
    store = dump_store(config.state_dir, config.application_id, "0_0", config.store_name, StoreType.KEY_VALUE)
    assert set(store.data_families()) <= {"default"} and b"k" not in store.data_families().get("default", {})


@rules("INST-16", "INST-21")
@pytest.mark.parametrize("name", COMMANDS)
@pytest.mark.parametrize("policy", ["keep", "wipe"])
def test_a_store_left_by_a_crash_is_kept_or_wiped_as_configured(small_cluster: AppCluster, name: str,
                                                                 policy: str) -> None:
    process, config = _start_over(small_cluster, name, f"{name}-unclean-{policy}", StoreType.KEY_VALUE, crash=True,
                                  on_unclean_shutdown=policy)
    _run_and_stop(process, config, "running after an unclean shutdown")
    events = _events(config)
    unclean = [e for e in events if e["event"] == "unclean_shutdown"]
    assert len(unclean) == 1 and unclean[0]["policy"] == policy and unclean[0]["partition"] == 0
    assert ("wiped" in [e["event"] for e in events]) == (policy == "wipe")
    store = dump_store(config.state_dir, config.application_id, "0_0", config.store_name, StoreType.KEY_VALUE)
    # Kept: the committed row is still there (at-least-once); wiped: the store was rebuilt from the empty changelog.
    assert (b"k" in store.data_families().get("default", {})) == (policy == "keep")
    assert store.status_open is False


@rules("INST-3", "INST-18")
@pytest.mark.parametrize("name", COMMANDS)
def test_a_store_type_the_instance_does_not_list_is_a_usage_error(tmp_path: Path, name: str) -> None:
    listed = set(_describe(name)["store_types"])
    unlisted = next(t.value for t in StoreType if t.value not in listed)
    path = _config_without(tmp_path, store_type=unlisted)
    done = subprocess.run([*COMMANDS[name], str(path)], capture_output=True, timeout=60, check=False)
    assert done.returncode == 64 and "'store_type'" in done.stderr.decode(), done.stderr


@rules("INST-7")
def test_the_reference_refuses_a_crash_point_it_does_not_list(tmp_path: Path) -> None:
    path = _config_without(tmp_path, crash_at="before_breakfast:1")
    done = subprocess.run([*COMMANDS["reference"], str(path)], capture_output=True, timeout=60, check=False)
    assert done.returncode == 64 and "'crash_at'" in done.stderr.decode(), done.stderr


@rules("INST-26", "INST-18")
def test_the_reference_refuses_a_processor_option_its_processor_does_not_take(tmp_path: Path) -> None:
    path = _config_without(tmp_path, store_type="window", store_options={"retention_ms": 100, "window_size_ms": 10},
                           processor_options={"inactivity_gap_ms": 5})
    done = subprocess.run([*COMMANDS["reference"], str(path)], capture_output=True, timeout=60, check=False)
    assert done.returncode == 64 and "'inactivity_gap_ms'" in done.stderr.decode(), done.stderr
    assert "Traceback" not in done.stderr.decode()


def _latest_values(records: list[tuple[bytes, bytes | None, int, Any]]) -> dict[bytes, bytes]:
    """What a key-value table holds after ``records``: each key's last value, tombstoned keys gone."""
    latest: dict[bytes, bytes | None] = {}
    for key, value, _, _ in records:
        latest[key] = value
    return {key: value for key, value in latest.items() if value is not None}


@rules("INST-7", "INST-16", "INST-21")
@pytest.mark.parametrize("name", COMMANDS)
@pytest.mark.parametrize("point", CRASH_POINTS)
def test_a_crash_point_kills_the_instance_and_a_restart_catches_up(broker: Broker, tmp_path: Path, name: str,
                                                                     point: str) -> None:
    cluster = AppCluster(broker, tmp_path, application_id=f"inst-crash-{name}-{point}-{time.time_ns()}",
                         store_name="counts", store_type=StoreType.KEY_VALUE, partitions=1)
    try:
        cluster.produce(0, input_records(0))
        end = cluster.input_end()
        config = cluster.instance(name, [0], commit_every_records=4, restore_batch_size=3).config
        if point == "after_restore_batch":  # a changelog to restore: a clean run, then an empty state directory
            _run_until_caught_up_and_stop(name, config, end)
            shutil.rmtree(config.state_dir)
        crashing = replace(config, crash_at=f"{point}:{2 if point in ('after_put', 'after_restore_batch') else 1}")
        process = _start(name, crashing)
        assert process.wait(60) == -signal.SIGKILL
        crash = _events(config)[-1]
        assert (crash["event"], crash["point"]) == ("crash", point)
        _run_until_caught_up_and_stop(name, config, end)
        restarted = _events(config)
        assert [e["policy"] for e in restarted if e["event"] == "unclean_shutdown"][-1:] == ["keep"]
        store = dump_store(config.state_dir, config.application_id, "0_0", config.store_name, StoreType.KEY_VALUE)
        assert store.data_families() == {"default": _latest_values(input_records(0))}
    finally:
        cluster.close()


def _run_until_caught_up_and_stop(name: str, config: InstanceConfig, end: dict[int, int]) -> None:
    process = _start(name, config)
    _wait(process, config, lambda s: all(s["input_next"].get(str(p)) == o for p, o in end.items()), "catching up")
    assert _stop(process) == 0
