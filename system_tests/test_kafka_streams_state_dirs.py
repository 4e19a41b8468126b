"""One state directory, two implementations: a real Kafka Streams instance and the kstate reference each open the
store the other wrote, on the same ``state.dir``, for every store family (INST-43 (c) without the mixed fleet).

The writer processes the input and stops cleanly; ``kstate inspect`` reads its directory; the other implementation
then starts on that directory: it opens each store at the committed changelog offset the writer left (KV-50, OFF-4),
so it restores nothing, and its clean stop leaves the data byte for byte as it found them. It then goes on with more
input from the writer's committed input offsets, reading the writer's rows (a window's count goes on from the
writer's aggregate), and the state is the whole input's. Mirrors the store-format half of Kafka's
``streams_upgrade_test.py`` (an instance bounced into another build on the same state directory). A key-value store
Kafka Streams wrote is also upgraded by the reference (opened as the next type of its upgrade path, LAY-7, LAY-8).

Needs the Kafka Streams instance (``instances/kafka-streams``). The default env runs three representatives;
``KSTATE_STREAMS_MATRIX=1`` (tox env ``streams-families``) every store type both ways.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections.abc import Callable

import pytest
from helpers import assert_no_acknowledged_input_lost, assert_state_matches_input, family_cluster, family_keys
from test_kafka_streams_sigkill import MATRIX, TYPES, kafka_streams  # noqa: F401 (the module's fixture)

from kstate.app.cluster import AppCluster
from kstate.app.process import InstanceCommand, InstanceProcess
from kstate.codecs.store_types import STORE_TYPES, Family, StoreType
from kstate_conformance import rules

PARTITIONS = 2
DIRECTIONS = ["kafka-streams-writes", "reference-writes"]
#: The default env's scenarios: three families, both ways between them (env streams-families: every type, both ways).
REPRESENTATIVES = {(StoreType.TIMESTAMPED_KV, "kafka-streams-writes"), (StoreType.SESSION, "reference-writes"),
                   (StoreType.VERSIONED_KV, "kafka-streams-writes")}


def _assert_versioned_as_restored(cluster: AppCluster, shared: InstanceProcess, reference: InstanceCommand) -> int:
    """A versioned store's latest values and history in one database (VS-*): it equals, byte for byte, what the
    reference restores from the whole changelog on an empty directory (RST-6). Returns the partitions checked."""
    check = cluster.instance("check", range(PARTITIONS), command=reference).start()
    check.wait_running(timeout=120)
    assert check.stop() == 0
    for p in range(PARTITIONS):
        assert cluster.store_dump(p, shared).data_families() == cluster.store_dump(p, check).data_families(), (
            f"partition {p}: the versioned store differs from the restore of its changelog")
    return PARTITIONS


@rules("INST-44", "INST-43", "KV-50", "OFF-4")
@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("store_type", TYPES, ids=[t.value for t in TYPES])
def test_a_state_directory_is_opened_by_the_other_implementation_at_its_committed_offset(
        make_cluster: Callable[..., AppCluster], reference_instance: InstanceCommand,
        kafka_streams: InstanceCommand, system_report: Callable[[str, object], None],  # noqa: F811
        store_type: StoreType, direction: str) -> None:
    if (store_type, direction) not in REPRESENTATIVES and not MATRIX:
        pytest.skip("the family matrix: KSTATE_STREAMS_MATRIX=1 (tox env streams-families)")
    started = time.monotonic()
    writer, opener = ((kafka_streams, reference_instance) if direction == "kafka-streams-writes"
                      else (reference_instance, kafka_streams))
    for command in (writer, opener):
        command.require(store_types=[store_type])
    cluster = family_cluster(make_cluster, store_type, PARTITIONS, instance_command=writer)
    rng = random.Random(43)
    keys = family_keys(store_type)
    cluster.produce_batch(per_partition=400, keys=keys, rng=rng)
    shared = cluster.instance("shared", range(PARTITIONS)).start()
    shared.wait_caught_up(cluster.input_end(), timeout=120)
    assert shared.stop() == 0
    written = {p: cluster.store_dump(p, shared) for p in range(PARTITIONS)}
    for p, dump in written.items():
        assert dump.data_families(), f"partition {p}: {writer.name} wrote no data"

    # kstate inspect reads the writer's directory: every task and its store, with the committed offset.
    inspected = subprocess.run([sys.executable, "-m", "kstate.cli", "inspect", "--json", shared.config.state_dir],
                               capture_output=True, text=True, timeout=120)
    assert inspected.returncode == 0, inspected.stderr[-2000:]
    report = json.dumps(json.loads(inspected.stdout))
    for p in range(PARTITIONS):
        assert f"0_{p}" in report, f"kstate inspect did not list task 0_{p}: {report[:500]}"

    # The other implementation on the same directory: opened at the committed offset, nothing restored, unchanged.
    shared.start(command=opener)
    shared.wait_running(timeout=120)
    shared.wait_caught_up(cluster.input_end(), timeout=120)
    assert shared.stop() == 0
    restored = [e for e in shared.events("restored") if e["pid"] == shared.pid]
    assert {e["partition"] for e in restored} == set(range(PARTITIONS)), restored
    for event in restored:
        assert event["records"] == 0, (f"{opener.name} restored {writer.name}'s store instead of opening it at its "
                                       f"committed offset: {event}")
    for p in range(PARTITIONS):
        again = cluster.store_dump(p, shared)
        assert again.data_families() == written[p].data_families(), (
            f"partition {p}: {opener.name}'s open and clean close changed {writer.name}'s data")

    # More input, processed by the opener over the writer's rows: the state is the whole input's.
    cluster.produce_batch(per_partition=200, keys=keys, rng=rng)
    shared.start()
    shared.wait_caught_up(cluster.input_end(), timeout=120)
    assert shared.stop() == 0
    if STORE_TYPES[store_type].family is Family.VERSIONED:
        checked = _assert_versioned_as_restored(cluster, shared, reference_instance)
    else:
        checked = assert_state_matches_input(cluster, store_type)
    system_report(f"state directory {store_type.value} {writer.name} -> {opener.name}",
                  {"rows_checked": checked, "seconds": round(time.monotonic() - started, 1)})


#: A key-value store Kafka Streams wrote, opened by the reference as the next type of its upgrade path (LAY-7, LAY-8).
UPGRADES = [(StoreType.TIMESTAMPED_KV, StoreType.TIMESTAMPED_KV_WITH_HEADERS),
            (StoreType.KEY_VALUE, StoreType.TIMESTAMPED_KV)]


@rules("INST-44", "LAY-7", "LAY-8", "KV-31")
@pytest.mark.parametrize(("old", "new"), UPGRADES, ids=[f"{a.value}-to-{b.value}" for a, b in UPGRADES])
def test_a_kafka_streams_state_directory_is_upgraded_by_the_reference(
        make_cluster: Callable[..., AppCluster], reference_instance: InstanceCommand,
        kafka_streams: InstanceCommand, system_report: Callable[[str, object], None],  # noqa: F811
        old: StoreType, new: StoreType) -> None:
    if old is not StoreType.TIMESTAMPED_KV and not MATRIX:
        pytest.skip("the family matrix: KSTATE_STREAMS_MATRIX=1 (tox env streams-families)")
    started = time.monotonic()
    kafka_streams.require(store_types=[old])
    reference_instance.require(store_types=[new], events=["opened"])
    cluster = make_cluster(old, partitions=PARTITIONS, instance_command=kafka_streams)
    rng = random.Random(44)
    cluster.produce_batch(per_partition=300, keys=200, rng=rng)
    shared = cluster.instance("shared", range(PARTITIONS)).start()
    shared.wait_caught_up(cluster.input_end(), timeout=120)
    assert shared.stop() == 0

    # The reference opens Kafka's store as the new type: upgrade mode, at Kafka's committed offset, nothing restored.
    cluster.produce_batch(per_partition=100, keys=200, rng=rng)
    shared.start(command=reference_instance, store_type=new.value)
    shared.wait_caught_up(cluster.input_end(), timeout=120)
    assert shared.stop() == 0
    mine = [e for e in shared.events() if e["pid"] == shared.pid]
    opened = [e for e in mine if e["event"] == "opened"]
    assert {e["partition"] for e in opened} == set(range(PARTITIONS)), opened
    for event in opened:
        assert event["mode"] == "upgrade", event
    for event in (e for e in mine if e["event"] == "restored"):
        assert event["records"] == 0, f"the reference restored Kafka Streams' store instead of upgrading it: {event}"
    checked = assert_no_acknowledged_input_lost(cluster, cluster.logical_state(new), new)
    system_report(f"state directory upgrade {old.value} kafka-streams -> {new.value} kstate-reference",
                  {"rows_checked": checked, "seconds": round(time.monotonic() - started, 1)})
