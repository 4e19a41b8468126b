"""Two implementations on one application: the reference and the instance under test (``--instance CMD``; the
reference again by default) each restore what the other wrote, and run side by side in one fleet.

(a) and (b): one implementation builds its stores from the input and stops; the other, on an empty state
directory, restores every partition from the first one's changelog (RST-1 to RST-3, batch by batch), then goes on
from the first one's committed input offsets. The restored stores equal the originals byte for byte in every data
column family, with the same committed changelog offset (RST-6, KV-50, WS-5, WS-27), and hold what the input says.
(c) a mixed fleet under continuous input: each instance in turn is bounced into the other implementation on the
same state directory, which opens the other's store at its committed offset (KV-50, OFF-4) instead of restoring
it; nothing acknowledged is lost and the oracle computed from the changelog agrees (INST-30, INST-43).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import pytest
from conftest import Oracle
from helpers import (
    assert_no_acknowledged_input_lost,
    assert_state_matches_input,
    bounce_one_by_one,
    family_cluster,
    family_keys,
)

from kstate.app.cluster import AppCluster
from kstate.app.process import InstanceCommand, UnsupportedByInstance
from kstate.codecs.store_types import BUILT_KV_TYPES, BUILT_TYPES, STORE_TYPES, Family, StoreType
from kstate.kafka.broker import Broker
from kstate_conformance import rules

PARTITIONS = 2
#: Every built store type of every family.
CROSS_TYPES = list(BUILT_TYPES)
#: The families whose changelog Kafka Streams 4.4 restores from the first unexpired record, not offset 0 (INST-14).
_SEEKS_PAST_EXPIRED = (Family.WINDOW, Family.SESSION)
#: Which implementation writes first: the reference, then the instance under test restores (a); or the reverse (b).
DIRECTIONS = ["reference-writes", "instance-writes"]


def _pair(direction: str, reference: InstanceCommand, under_test: InstanceCommand) -> tuple[InstanceCommand,
                                                                                               InstanceCommand]:
    return (reference, under_test) if direction == "reference-writes" else (under_test, reference)


def _require_exact_end_offsets(restorer: InstanceCommand, broker: Broker) -> None:
    """A restorer whose restore ends at ListOffsets(latest) (INST-14's option, Kafka Streams' StoreChangelogReader)
    needs a broker that answers it exactly: another producer's changelog ends in a batch of many records."""
    if (restorer.description.get("restore_end_offset") == "list_offsets"
            and not broker.capabilities.list_offsets_latest_exact):
        raise UnsupportedByInstance(f"unsupported by {restorer.name} on broker {broker.provider}: its restore ends at "
                                    "ListOffsets(latest), which this broker does not answer exactly (INST-14)")


@rules("INST-43", "INST-30", "INST-40", "RST-6", "KV-50")
@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("store_type", CROSS_TYPES, ids=[t.value for t in CROSS_TYPES])
def test_cross_restore_from_the_other_implementations_changelog(
        make_cluster: Callable[..., AppCluster], broker: Broker, reference_instance: InstanceCommand,
        instance_under_test: InstanceCommand, system_report: Callable[[str, object], None], store_type: StoreType,
        direction: str) -> None:
    started = time.monotonic()
    writer, restorer = _pair(direction, reference_instance, instance_under_test)
    for command in (writer, restorer):
        command.require(store_types=[store_type], events=["restored"] if command is restorer else [])
    if writer != restorer:
        _require_exact_end_offsets(restorer, broker)
    family = STORE_TYPES[store_type].family
    cluster = family_cluster(make_cluster, store_type, PARTITIONS, instance_command=writer)
    rng = random.Random(31)
    cluster.produce_batch(per_partition=1000, keys=family_keys(store_type), rng=rng)
    writing = cluster.instance("writer", range(PARTITIONS)).start()
    writing.wait_caught_up(cluster.input_end())
    assert writing.stop() == 0
    original = {p: cluster.store_dump(p, writing) for p in range(PARTITIONS)}
    for p, dump in original.items():
        assert dump.status_open is False, p  # closed cleanly (OFF-7)
        assert dump.data_families(), f"partition {p}: {writer.name} wrote no data"

    # The restorer's own, empty state directory: every partition restored from the writer's changelog.
    cluster.retire(writing)
    restoring = cluster.instance("restorer", range(PARTITIONS), command=restorer, restore_batch_size=250).start()
    restoring.wait_caught_up(cluster.input_end())
    assert restoring.stop() == 0
    changelog = cluster.changelog_rows()
    restored = [e for e in restoring.events("restored") if e["pid"] == restoring.pid]
    for p in range(PARTITIONS):
        (event,) = [e for e in restored if e["partition"] == p]
        # Kafka Streams 4.4 restores a windowed changelog from offsetsForTimes(last timestamp - retention), past the
        # expired prefix (StoreChangelogReader.seekByRetentionFromPolledRecords, INST-14); the reference reads it all.
        start = event["first_offset"] if family in _SEEKS_PAST_EXPIRED and restorer is not reference_instance else 0
        assert event["records"] == sum(1 for r in changelog if r.partition == p and r.offset >= start) > 0, event
        again = cluster.store_dump(p, restoring)
        assert again.data_families() == original[p].data_families(), (
            f"partition {p}: {restorer.name}'s restore of {writer.name}'s changelog differs byte for byte")
        assert (again.committed_offset(cluster.changelog_topic, p)
                == original[p].committed_offset(cluster.changelog_topic, p)), p
        assert again.status_open is False, p

    # The restorer goes on from the writer's committed input offsets: the state is the whole input's.
    cluster.produce_batch(per_partition=200, keys=family_keys(store_type), rng=rng)
    restoring.start()
    restoring.wait_caught_up(cluster.input_end())
    assert restoring.stop() == 0
    assert not any(e["records"] for e in restoring.events("restored") if e["pid"] == restoring.pid)
    checked = assert_state_matches_input(cluster, store_type)
    system_report(f"cross restore {store_type.value} {writer.name} -> {restorer.name}",
                  {"changelog_records": len(changelog), "rows_checked": checked,
                   "seconds": round(time.monotonic() - started, 1)})


@rules("INST-43", "KV-50")
@pytest.mark.parametrize("store_type", BUILT_KV_TYPES, ids=[t.value for t in BUILT_KV_TYPES])
def test_cross_mixed_fleet_swaps_implementations_during_a_rolling_bounce(
        make_cluster: Callable[..., AppCluster], oracle: Oracle, reference_instance: InstanceCommand,
        instance_under_test: InstanceCommand, system_report: Callable[[str, object], None],
        store_type: StoreType) -> None:
    started = time.monotonic()
    for command in (reference_instance, instance_under_test):
        command.require(store_types=[store_type], events=["opened"])
    assignments = {c.name: c.description.get("partition_assignment", "config")
                   for c in (reference_instance, instance_under_test)}
    if len(set(assignments.values())) > 1:
        # A member of the group (Kafka Streams) and an instance committing as a non-member cannot share one
        # group: the broker refuses the non-member's commits with UNKNOWN_MEMBER_ID (INST-10's option).
        grouped = [name for name, how in assignments.items() if how == "group"]
        raise UnsupportedByInstance(f"unsupported by {', '.join(grouped)}: a mixed fleet with an instance whose "
                                    "partitions the config assigns (partitions assigned by the group, INST-10)")
    cluster = make_cluster(store_type, partitions=4)
    cluster.produce_batch(per_partition=300, keys=150, rng=random.Random(41))
    # Partitions 0 and 2 on the reference, 1 and 3 on the instance under test; each then swaps implementation.
    instances = [cluster.instance("ref", [0, 2], command=reference_instance),
                 cluster.instance("test", [1, 3], command=instance_under_test)]
    for instance in instances:
        instance.start()
    for instance in instances:
        instance.wait_caught_up(cluster.input_end())
    other = {"ref": instance_under_test, "test": reference_instance}
    opened: dict[int, dict[str, Any]] = {}

    def reopened(event: dict[str, Any]) -> None:
        # The other implementation's store opened at its committed changelog offset (KV-50), not rebuilt.
        assert event["committed_changelog_offset"] is not None, event
        opened[event["partition"]] = event

    sent = bounce_one_by_one(cluster, instances, lambda instance: instance.bounce(command=other[instance.name]),
                             reopened, keys=150, seed=42)
    assert sorted(opened) == [0, 1, 2, 3]
    assert [i.command for i in instances] == [instance_under_test, reference_instance]
    state = cluster.logical_state()
    checked = assert_no_acknowledged_input_lost(cluster, state, store_type)
    report = oracle(cluster.changelog_topic, store_type, state)
    assert report.ok, report.summary()
    system_report(f"mixed fleet {store_type.value} {reference_instance.name} <-> {instance_under_test.name}",
                  {"input_during_bounce": sent, "keys_checked": checked, "changelog_records": report.records_read,
                   "seconds": round(time.monotonic() - started, 1)})
