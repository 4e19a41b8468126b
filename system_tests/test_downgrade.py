"""Downgrade by rebuild: an older-format instance refuses a newer store with a clear error naming the column
family it does not know (UPG-1, UPG-2) and leaves it untouched; after wiping, it rebuilds the store from the
changelog and matches the oracle (UPG-3, RST-6)."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from conftest import Oracle
from helpers import assert_no_acknowledged_input_lost

from kstate.app.cluster import AppCluster
from kstate.app.config import ON_REFUSED_WIPE
from kstate.app.host import EXIT_REFUSED
from kstate.codecs.store_types import OFFSETS_CF, TIMESTAMPED_HEADERS_CF, StoreType

DOWNGRADES = [
    # A 4.3 instance on timestamped stores, given a store with headers (KIP-1271).
    pytest.param(StoreType.TIMESTAMPED_KV, True, TIMESTAMPED_HEADERS_CF, id="headers-to-timestamped"),
    # A pre-4.3 instance (no store-managed offsets), given a 4.3 store with the offsets family (KIP-1035).
    pytest.param(StoreType.TIMESTAMPED_KV_WITH_HEADERS, False, OFFSETS_CF, id="to-pre-4.3-offsets"),
]


@pytest.mark.parametrize(("older", "manage_offsets", "unknown_cf"), DOWNGRADES)
def test_older_instance_refuses_then_rebuilds(make_cluster: Callable[..., AppCluster], oracle: Oracle,
                                              older: StoreType, manage_offsets: bool, unknown_cf: str) -> None:
    cluster = make_cluster(StoreType.TIMESTAMPED_KV_WITH_HEADERS, partitions=2)
    cluster.require(store_types=[StoreType.TIMESTAMPED_KV_WITH_HEADERS, older], events=["refused", "wiped"])
    rng = random.Random(5)
    cluster.produce_batch(per_partition=600, keys=150, rng=rng)
    instance = cluster.instance("a", [0, 1]).start()
    instance.wait_caught_up(cluster.input_end())
    assert instance.stop() == 0
    before = {p: cluster.dump(p).column_families for p in range(2)}

    instance.start(store_type=older.value, manage_offsets=manage_offsets)
    assert instance.wait_exit() == EXIT_REFUSED
    refused = [e for e in instance.events("refused") if e["pid"] == instance.pid]
    assert refused and unknown_cf in refused[0]["column_families"], refused
    assert f"Column families not opened: {unknown_cf}" in refused[0]["error"]
    assert {p: cluster.dump(p).column_families for p in range(2)} == before  # refused, not modified

    instance.start(on_refused=ON_REFUSED_WIPE)
    cluster.produce_batch(per_partition=100, keys=150, rng=rng)
    instance.wait_caught_up(cluster.input_end())
    assert instance.stop() == 0
    mine = [e["event"] for e in instance.events() if e["pid"] == instance.pid]
    assert mine.count("wiped") == 2 and mine.index("wiped") < mine.index("restored")
    for p in range(2):
        families = cluster.dump(p).column_families
        assert unknown_cf not in families
    state = cluster.logical_state()
    assert_no_acknowledged_input_lost(cluster, state, older)
    report = oracle(cluster.changelog_topic, older, state)
    assert report.ok, report.summary()
