"""KIP-1035 migration with real Kafka Streams: an instance of Kafka Streams 4.2 (offsets in the task's `.checkpoint`
file, OFF-13) is stopped and restarted as Kafka Streams 4.4.0 on the same state directory. 4.4.0 takes the
checkpointed offset into the store's `offsets` column family (OFF-19) and opens the store at it: the restart
restores nothing it already had (INST-14, RST-*), the stores' data are unchanged by the upgrade, and the upgraded
instance goes on from the committed input (nothing acknowledged lost). Mirrors the store-format half of Kafka's
`streams_upgrade_test.py` (an upgrade by bounce, here of one instance).

Needs the Kafka Streams instance (`instances/kafka-streams`): Java and Maven on the PATH, Kafka's jars from Maven
Central or `~/.m2`. Without them the scenario is skipped with the reason; it does not use `--instance`.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import assert_no_acknowledged_input_lost

from kstate.app.cluster import AppCluster
from kstate.app.kafka_streams import InstanceUnavailable, kafka_streams_instance
from kstate.app.process import InstanceCommand
from kstate.codecs.store_types import StoreType
from kstate.storage_files import read_checkpoint_file
from kstate_conformance import rules

OLD, NEW = "4.2.1", "4.4.0"
PARTITIONS = 2
STORE_TYPE = StoreType("timestamped_kv")


def _kafka_streams(version: str) -> InstanceCommand:
    """The Kafka Streams instance of ``version``, its jar built first (a build may take longer than a describe), as
    ``kstate instance run`` and ``kstate demo`` start it; skipped where it cannot be run here."""
    try:
        return kafka_streams_instance(version)
    except InstanceUnavailable as exc:
        pytest.skip(f"needs the Kafka Streams instance: {exc}")


@pytest.fixture(scope="module")
def kafka_streams_old() -> InstanceCommand:
    return _kafka_streams(OLD)


@pytest.fixture(scope="module")
def kafka_streams_new() -> InstanceCommand:
    return _kafka_streams(NEW)


@rules("OFF-19", "OFF-13", "INST-14", "KV-50")
def test_checkpoint_offsets_move_into_the_store_and_nothing_is_restored_again(
        make_cluster: Callable[..., AppCluster], kafka_streams_old: InstanceCommand,
        kafka_streams_new: InstanceCommand, system_report: Callable[[str, object], None]) -> None:
    started = time.monotonic()
    cluster = make_cluster(STORE_TYPE, partitions=PARTITIONS, instance_command=kafka_streams_old)
    rng = random.Random(1035)
    cluster.produce_batch(per_partition=600, keys=120, rng=rng)
    # Kafka 4.2 keeps offsets outside the store: the protocol's manage_offsets=false (UPG-2).
    instance = cluster.instance("a", range(PARTITIONS), manage_offsets=False).start()
    instance.wait_caught_up(cluster.input_end(), timeout=120)
    assert instance.stop() == 0
    state_dir = Path(instance.config.state_dir) / cluster.application_id
    checkpointed: dict[int, int | None] = {}
    before = {}
    for p in range(PARTITIONS):
        entries = read_checkpoint_file(state_dir / f"0_{p}" / ".checkpoint")
        checkpointed[p] = entries.get((cluster.changelog_topic, p))
        assert checkpointed[p] is not None, (p, entries)  # 4.2 checkpointed its changelog offset (OFF-13)
        dump = cluster.dump(p)
        assert dump.committed_offset(cluster.changelog_topic, p) is None  # no offsets column family before 4.3
        before[p] = dump.data_families()
        assert before[p], f"partition {p}: Kafka Streams {OLD} wrote no data"

    # The upgrade: the same state directory, Kafka Streams 4.4.0, offsets kept in the store from now on.
    instance.start(command=kafka_streams_new, manage_offsets=True)
    instance.wait_caught_up(cluster.input_end(), timeout=120)
    assert instance.stop() == 0
    mine = [e for e in instance.events() if e["pid"] == instance.pid]
    for p in range(PARTITIONS):
        (opened,) = [e for e in mine if e["event"] == "opened" and e["partition"] == p]
        assert opened["committed_changelog_offset"] == checkpointed[p], opened
        restored = [e for e in mine if e["event"] == "restored" and e["partition"] == p]
        assert [e["records"] for e in restored] == [0], restored  # nothing it already had is restored again
        dump = cluster.dump(p)
        assert dump.committed_offset(cluster.changelog_topic, p) == checkpointed[p]  # taken into the store (OFF-19)
        assert dump.data_families() == before[p], f"partition {p}: the upgrade changed the store's data"
        assert dump.status_open is False

    # The upgraded instance goes on from the committed input, restoring nothing on its next start either.
    cluster.produce_batch(per_partition=200, keys=120, rng=rng)
    instance.start()
    instance.wait_caught_up(cluster.input_end(), timeout=120)
    assert instance.stop() == 0
    assert not any(e["records"] for e in instance.events("restored") if e["pid"] == instance.pid)
    checked = assert_no_acknowledged_input_lost(cluster, cluster.logical_state(), STORE_TYPE)
    system_report(f"KIP-1035 migration Kafka Streams {OLD} -> {NEW}",
                  {"checkpointed": checkpointed, "keys_checked": checked, "seconds": round(time.monotonic() - started, 1)})
