"""Restore: build state from input, wipe the instance's state directory, restore it from the changelog; the
stores equal the originals logically and byte for byte per column family (RST-1 to RST-3, RST-6, KV-50)."""

from __future__ import annotations

import random
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import Oracle
from helpers import assert_no_acknowledged_input_lost

from kstate.app.cluster import AppCluster
from kstate.codecs.store_types import BUILT_KV_TYPES, StoreType


@pytest.mark.parametrize("store_type", list(BUILT_KV_TYPES), ids=lambda t: t.value)
def test_wiped_state_restores_byte_for_byte(make_cluster: Callable[..., AppCluster], oracle: Oracle,
                                            store_type: StoreType) -> None:
    cluster = make_cluster(store_type, partitions=2)
    rng = random.Random(11)
    cluster.produce_batch(per_partition=1500, keys=300, rng=rng)
    instance = cluster.instance("a", [0, 1], restore_batch_size=250).start()
    instance.wait_caught_up(cluster.input_end())
    assert instance.stop() == 0
    original = {p: cluster.dump(p) for p in range(2)}
    for p, dump in original.items():
        assert dump.status_open is False  # closed cleanly (OFF-7)
        assert dump.data_families(), f"partition {p}: no data"

    shutil.rmtree(Path(instance.config.state_dir))
    instance.start()
    instance.wait_caught_up(cluster.input_end())
    assert instance.stop() == 0
    restored_events = [e for e in instance.events("restored") if e["pid"] == instance.pid]
    changelog = cluster.changelog_rows()
    for p in range(2):
        (event,) = [e for e in restored_events if e["partition"] == p]
        assert event["records"] == sum(1 for r in changelog if r.partition == p)
        assert event["batches"] >= 2  # restore_batch_size 250: committed batch by batch (RST-3)
        again = cluster.dump(p)
        # Byte for byte per column family: every data family, and the committed changelog offset.
        assert again.data_families() == original[p].data_families()
        assert again.committed_offset(cluster.changelog_topic, p) == original[p].committed_offset(cluster.changelog_topic, p)
        assert again.status_open is False

    state = cluster.logical_state()
    assert_no_acknowledged_input_lost(cluster, state, store_type)
    report = oracle(cluster.changelog_topic, store_type, state)
    assert report.ok, report.summary()
    assert report.records_read == len(changelog)
