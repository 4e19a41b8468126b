"""Upgrades and downgrades of real Kafka Streams under continuous input, judged by the kit's readers, the oracle
and ``kstate audit`` (UPG-*, INST-27, INST-43). Two store families:

- ``dsl``: ``builder.table(input, Materialized.as(store))``; the old version materializes a timestamped store, Kafka
  4.4.0 with KIP-1285's ``dsl.store.format=headers`` a header store (UPG-6's upgrade on disk);
- ``papi``: the Processor API's ``timestampedKeyValueStoreBuilder`` moved to KIP-1271's
  ``timestampedKeyValueStoreWithHeadersBuilder``.

The rolling upgrade mirrors Kafka's ``tests/kafkatest/tests/streams/streams_upgrade_test.py``
(``test_rolling_upgrade_with_2_bounces``: instances of one group upgraded one at a time under a running driver, here
in one bounce, the store format's upgrade being lazy); the downgrade mirrors its ``test_simple_upgrade_downgrade`` in
the other direction, and Kafka's documented downgrade of a KIP-1035 or header store: clear the local state (INST-28).

The CI's ``system`` env runs the representative pair (``dsl``, 4.2.1 -> 4.4.0, and back); every family x version
pair runs with ``KSTATE_STREAMS_MATRIX=1`` (``tox -e streams-matrix``). Needs Java and Maven; else skipped.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import ORACLE_ENGINE
from helpers import assert_no_acknowledged_input_lost, bounce_one_by_one, decode

from kstate.app.cluster import AppCluster, InputFeeder
from kstate.app.kafka_streams import InstanceUnavailable, kafka_streams_instance
from kstate.app.process import InstanceCommand, InstanceProcess
from kstate.codecs.store_types import OFFSETS_CF, TIMESTAMPED_CF, TIMESTAMPED_HEADERS_CF, StoreType
from kstate_conformance import rules

NEWEST = "4.4.0"
OLD_TYPE, NEW_TYPE = StoreType.TIMESTAMPED_KV, StoreType.TIMESTAMPED_KV_WITH_HEADERS
MATRIX = os.environ.get("KSTATE_STREAMS_MATRIX") == "1"
FAMILIES = ("dsl", "papi")
OLDER = ("4.2.1", "4.3.1")


def _pairs() -> list[Any]:
    """Every family x older version; all but the representative (dsl, 4.2.1) only in the long matrix."""
    out = []
    for family in FAMILIES:
        for older in OLDER:
            marks = [] if (family, older) == ("dsl", "4.2.1") or MATRIX else [pytest.mark.skip(
                reason="long matrix: KSTATE_STREAMS_MATRIX=1 (tox -e streams-matrix)")]
            out.append(pytest.param(family, older, id=f"{family}-{older}", marks=marks))
    return out


_built: dict[str, InstanceCommand] = {}


def kafka_streams(version: str) -> InstanceCommand:
    """The Kafka Streams instance of ``version``, its jar built when missing or older than its sources (once a run:
    a build takes up to a minute, and the module's scenarios share it)."""
    if version in _built:
        return _built[version]
    try:
        command = kafka_streams_instance(version)  # built when missing or older than its sources
    except InstanceUnavailable as exc:
        pytest.skip(f"needs the Kafka Streams instance: {exc}")
    if "dsl" not in command.description.get("topologies", ["papi"]):
        pytest.skip(f"unsupported by {command.name}: the DSL topology (INST-27)")
    _built[version] = command
    return command


def settings(family: str, version: str) -> dict[str, Any]:
    """The config of ``family`` on Kafka ``version``: 4.4.0 runs the header store, older ones the timestamped one;
    offsets in the store from 4.3 on (UPG-2); the DSL chosen by INST-27's ``extra`` entry."""
    newest = version == NEWEST
    extra = {"kstate.topology": family}
    if family == "dsl" and newest:
        extra["dsl.store.format"] = "headers"
    return {"store_type": (NEW_TYPE if newest else OLD_TYPE).value, "manage_offsets": not version.startswith("4.2"),
            "extra": extra}


def audit(cluster: AppCluster, store_type: StoreType, tmp_path: Path) -> None:
    """``kstate audit`` over every instance's state directory, as an operator runs it: the stores against the state
    the oracle computes from the changelog (the ``oracle`` fixture's comparison, run once), exit 0, a clean report."""
    from kstate.cli import main

    report = tmp_path / f"audit-{store_type.value}.md"
    args = ["audit", "--bootstrap", cluster.broker.bootstrap, "--application-id", cluster.application_id,
            "--store", f"{cluster.store_name}:{store_type.value}", "--report", str(report), "--quiet"]
    for process in cluster.instances.values():
        args += ["--state-dir", process.config.state_dir]
    args += ["--engine", ORACLE_ENGINE] + (["--master", "local[2]"] if ORACLE_ENGINE == "spark" else [])
    assert main(args) == 0, report.read_text(encoding="utf-8") if report.exists() else "no audit report"
    text = report.read_text(encoding="utf-8")
    assert "None: every store holds exactly the state its changelog implies." in text, text


def assert_header_store_after_upgrade(cluster: AppCluster, partitions: range, family: str) -> dict[str, int]:
    """The on-disk result of the lazy upgrade (UPG-6, KV-30..37): the legacy family keeps the timestamped values
    not written since, the header family holds every key written since (with that record's headers for the
    Processor API, with none for the DSL's ``table()``, INST-27), no key is in both, and the offsets family is
    there (OFF-*). Returns how many keys each family held."""
    latest = cluster.latest_input()
    held = {TIMESTAMPED_CF: 0, TIMESTAMPED_HEADERS_CF: 0}
    for p in partitions:
        dump = cluster.dump(p)
        families = dump.column_families
        assert OFFSETS_CF in families, (p, sorted(families))
        assert dump.status_open is False
        legacy, new = families.get(TIMESTAMPED_CF, {}), families.get(TIMESTAMPED_HEADERS_CF, {})
        assert not set(legacy) & set(new), f"partition {p}: keys in both families"
        for key, value in legacy.items():
            raw, ts, _ = decode(OLD_TYPE, value)
            assert raw == latest[p][key].value and ts == latest[p][key].timestamp, (p, key)
        for key, value in new.items():
            raw, ts, headers = decode(NEW_TYPE, value)
            record = latest[p][key]
            # Written by 4.4.0 after the upgrade: the input record's value and timestamp (HV-6); its headers only
            # through the Processor API, as KTableSource puts `new RecordHeaders()` (INST-27).
            expected = record.headers if family == "papi" else ()
            assert (raw, ts, headers) == (record.value, record.timestamp, expected), (p, key)
        held[TIMESTAMPED_CF] += len(legacy)
        held[TIMESTAMPED_HEADERS_CF] += len(new)
    assert held[TIMESTAMPED_HEADERS_CF] > 0, "nothing was written in the header format after the upgrade"
    return held


@rules("UPG-6", "INST-27", "INST-43", "KV-50", "OFF-19")
@pytest.mark.parametrize(("family", "older"), _pairs())
def test_rolling_upgrade_to_header_stores_under_continuous_input(
        make_cluster: Callable[..., AppCluster], tmp_path: Path,
        system_report: Callable[[str, object], None], family: str, older: str) -> None:
    """Mirrors ``streams_upgrade_test.py::test_rolling_upgrade_with_2_bounces`` (two instances of one group bounced
    one at a time onto the newer version under a running input driver) for the store format: Kafka
    ``StoreUpgradeIntegrationTest``'s timestamped-to-headers migration, on a fleet."""
    started = time.monotonic()
    old, new = kafka_streams(older), kafka_streams(NEWEST)
    cluster = make_cluster(OLD_TYPE, partitions=4, instance_command=old)
    cluster.produce_batch(per_partition=300, keys=150, rng=random.Random(1285))
    # Two instances of one consumer group, partitions 0 and 2 on one, 1 and 3 on the other.
    instances = [cluster.instance(name, parts, **settings(family, older))
                 for name, parts in (("a", [0, 2]), ("b", [1, 3]))]
    for instance in instances:
        instance.start()
    for instance in instances:
        instance.wait_caught_up(cluster.input_end(), timeout=120)
    opened: dict[int, dict[str, Any]] = {}

    def reopened(event: dict[str, Any]) -> None:
        # The old store opened by 4.4.0 at its committed offset (KV-50, OFF-19), in upgrade mode (UPG-6).
        assert event["committed_changelog_offset"] is not None, event
        assert event["mode"] == "upgrade" and event["column_families"] == [TIMESTAMPED_CF, TIMESTAMPED_HEADERS_CF], event
        opened[event["partition"]] = event

    def upgrade(instance: InstanceProcess) -> None:
        instance.bounce(command=new, **settings(family, NEWEST))

    sent = bounce_one_by_one(cluster, instances, upgrade, reopened, keys=150, seed=1271, rate=200)
    assert sorted(opened) == [0, 1, 2, 3]
    for instance in instances:
        restored = [e["records"] for e in instance.events("restored") if e["pid"] == instance.pid]
        assert restored == [0, 0], (instance.name, restored)  # the clean close left nothing to restore again
    held = assert_header_store_after_upgrade(cluster, range(4), family)
    state = cluster.logical_state()
    checked = assert_no_acknowledged_input_lost(cluster, state, NEW_TYPE)
    audit(cluster, NEW_TYPE, tmp_path)
    system_report(f"rolling upgrade {family} Kafka Streams {older} -> {NEWEST}",
                  {"input_during_bounce": sent, "keys_checked": checked, "families": held,
                   "audit": "clean", "seconds": round(time.monotonic() - started, 1)})


@rules("UPG-1", "UPG-2", "UPG-3", "INST-28", "INST-16", "RST-6")
@pytest.mark.parametrize(("family", "older"), _pairs())
def test_downgrade_is_refused_then_rebuilt_from_the_changelog(
        make_cluster: Callable[..., AppCluster], tmp_path: Path,
        system_report: Callable[[str, object], None], family: str, older: str) -> None:
    """Mirrors ``streams_upgrade_test.py::test_simple_upgrade_downgrade`` in the downgrade direction, with the state
    directory kept: the older version refuses the newer store (INST-28), the operator clears it, and it is rebuilt."""
    started = time.monotonic()
    old, new = kafka_streams(older), kafka_streams(NEWEST)
    cluster = make_cluster(NEW_TYPE, partitions=2, instance_command=new)
    cluster.produce_batch(per_partition=300, keys=150, rng=random.Random(258))
    instance = cluster.instance("a", [0, 1], **settings(family, NEWEST)).start()
    instance.wait_caught_up(cluster.input_end(), timeout=120)
    assert instance.stop() == 0
    before = {p: cluster.dump(p).column_families for p in range(2)}
    task_files = {p: sorted(f.name for f in (Path(instance.config.state_dir) / cluster.application_id / f"0_{p}")
                            .iterdir()) for p in range(2)}
    for p in range(2):
        assert TIMESTAMPED_HEADERS_CF in before[p] and OFFSETS_CF in before[p], sorted(before[p])

    feeder = InputFeeder(cluster, rate=200, keys=150, seed=35)
    feeder.start()
    try:
        # The older version meets the newer store: RocksDB refuses to open it without every family (UPG-1), the
        # stream thread dies and Kafka Streams shuts the client down; nothing is wiped or changed (INST-28).
        instance.start(command=old, **settings(family, older))
        assert instance.wait_exit(timeout=120) == 2, instance.log_tail()
        (fatal,) = [e for e in instance.events("fatal") if e["pid"] == instance.pid]
        if older.startswith("4.2"):
            # 4.2.1 opens the families it knows; RocksDB refuses a database with others (INST-28).
            unknown = [OFFSETS_CF, TIMESTAMPED_HEADERS_CF]
            assert "Column families not opened" in fatal["reason"] and all(cf in fatal["reason"] for cf in unknown)
        else:
            # 4.3.1 names the unexpected family itself (RocksDBStore.openRocksDB), from KafkaStreams.start().
            assert "is a headers-aware store and cannot be opened as a timestamped store" in fatal["reason"], fatal
        assert not [e for e in instance.events("running") if e["pid"] == instance.pid]
        for p in range(2):
            assert cluster.dump(p, instance).column_families == before[p], f"partition {p}: the refusal changed it"
            task_dir = Path(instance.config.state_dir) / cluster.application_id / f"0_{p}"
            assert sorted(f.name for f in task_dir.iterdir()) == task_files[p], f"partition {p}: files changed"
        # The downgrade as Kafka documents it: clear the local state (KafkaStreams#cleanUp), start again.
        shutil.rmtree(Path(instance.config.state_dir) / cluster.application_id)
        instance.start()
        instance.wait_running(timeout=120)
    finally:
        sent = feeder.finish()
    instance.wait_caught_up(cluster.input_end(), timeout=120)
    assert instance.stop() == 0
    mine = [e for e in instance.events() if e["pid"] == instance.pid]
    for p in range(2):
        (opened,) = [e for e in mine if e["event"] == "opened" and e["partition"] == p]
        assert opened["committed_changelog_offset"] is None and opened["mode"] == "regular", opened
        (restored,) = [e for e in mine if e["event"] == "restored" and e["partition"] == p]
        assert restored["records"] > 0, restored  # rebuilt from the changelog (UPG-3)
        families = cluster.dump(p).column_families
        assert TIMESTAMPED_HEADERS_CF not in families, sorted(families)
        assert (OFFSETS_CF in families) == (not older.startswith("4.2")), sorted(families)
    state = cluster.logical_state()
    checked = assert_no_acknowledged_input_lost(cluster, state, OLD_TYPE)
    audit(cluster, OLD_TYPE, tmp_path)
    system_report(f"downgrade by rebuild {family} Kafka Streams {NEWEST} -> {older}",
                  {"input_during_downgrade": sent, "keys_checked": checked, "refusal": fatal["reason"][:200],
                   "audit": "clean", "seconds": round(time.monotonic() - started, 1)})


BAD_DSL_CONFIGS = [
    # The format's store type and the config's disagree: the DSL would build another type than asked for.
    pytest.param(NEWEST, {"store_type": "timestamped_kv", "extra": {"kstate.topology": "dsl",
                                                                     "dsl.store.format": "headers"}},
                 "store_type", id="format-headers-type-timestamped"),
    pytest.param(NEWEST, {"store_type": "timestamped_kv_with_headers", "extra": {"kstate.topology": "dsl"}},
                 "store_type", id="format-default-type-headers"),
    pytest.param(NEWEST, {"store_type": "kv", "extra": {"kstate.topology": "dsl"}}, "store_type", id="plain"),
    pytest.param(NEWEST, {"store_type": "timestamped_kv", "extra": {"kstate.topology": "streams"}}, "extra",
                 id="unknown-topology"),
    pytest.param(NEWEST, {"store_type": "timestamped_kv", "extra": {"kstate.topology": "dsl",
                                                                     "dsl.store.format": "json"}},
                 "extra", id="unknown-format"),
    pytest.param(NEWEST, {"store_type": "timestamped_kv", "crash_at": "after_put",
                          "extra": {"kstate.topology": "dsl"}}, "crash_at", id="after-put-without-processor"),
    # Kafka 4.2 does not know the setting and would silently build a timestamped store.
    pytest.param("4.2.1", {"store_type": "timestamped_kv", "manage_offsets": False,
                           "extra": {"kstate.topology": "dsl", "dsl.store.format": "headers"}},
                 "extra", id="headers-format-on-4.2.1"),
]


@rules("INST-27", "INST-6")
@pytest.mark.parametrize(("version", "fields", "named"), BAD_DSL_CONFIGS)
def test_a_dsl_config_the_instance_cannot_run_is_a_usage_error(tmp_path: Path, version: str, fields: dict[str, Any],
                                                               named: str) -> None:
    command = kafka_streams(version)
    config = {"instance_id": "bad", "bootstrap": "127.0.0.1:1", "application_id": "app", "input_topic": "in",
              "partitions": [0], "store_name": "store", "state_dir": str(tmp_path / "state"),
              "status_dir": str(tmp_path / "status"), **fields}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    done = subprocess.run([*command.argv, str(path)], capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 64, done.stderr
    assert f"field '{named}'" in done.stderr.decode("utf-8", "replace"), done.stderr
    assert not (tmp_path / "state").exists()  # refused before anything opened (INST-6)
