"""Rolling upgrades under continuous input, one instance bounced at a time onto the newer store type:
KIP-1271 (timestamped -> timestamped with headers, dual column-family lazy upgrade, UPG-6, KV-38) and
KIP-258 (plain -> timestamped, UPG-5). Nothing is lost, legacy values are read through the conversion
(KV-31, RST-7), new writes use the new layout, the changelog format is unchanged (CL-3, CL-4, CL-8), and
the final state matches the oracle computed from the changelog."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from conftest import Oracle
from helpers import assert_no_acknowledged_input_lost, bounce_one_by_one, decode, three_caught_up_after_every_key

from kstate.app.cluster import AppCluster
from kstate.codecs.store_types import DEFAULT_CF, TIMESTAMPED_CF, TIMESTAMPED_HEADERS_CF, StoreType
from kstate.spark.oracle import LegacyBoundary

UPGRADES = [
    pytest.param(StoreType.TIMESTAMPED_KV, StoreType.TIMESTAMPED_KV_WITH_HEADERS, TIMESTAMPED_CF, TIMESTAMPED_HEADERS_CF,
                 id="kip1271-timestamped-to-headers"),
    pytest.param(StoreType.KEY_VALUE, StoreType.TIMESTAMPED_KV, DEFAULT_CF, TIMESTAMPED_CF, id="kip258-plain-to-timestamped"),
]
KEYS = 400
PARTITIONS = 6


@pytest.mark.parametrize(("old", "new", "legacy_cf", "new_cf"), UPGRADES)
def test_rolling_upgrade_under_continuous_input(make_cluster: Callable[..., AppCluster], oracle: Oracle,
                                                system_report: Callable[[str, object], None], old: StoreType,
                                                new: StoreType, legacy_cf: str, new_cf: str) -> None:
    cluster = make_cluster(old, partitions=PARTITIONS)
    cluster.require(store_types=[old, new], events=["opened"])  # before any work (INST-40)
    rng = random.Random(3)
    # Every key exists before the upgrade, so that some keys are still legacy at the end.
    instances = three_caught_up_after_every_key(cluster, KEYS, range(KEYS), rng)
    boundaries: dict[int, LegacyBoundary] = {}

    def upgraded(event: dict[str, Any]) -> None:
        # The mode is decided at open: upgrade mode with both families (KV-30, KV-38).
        assert event["mode"] == "upgrade", event
        assert event["column_families"] == [legacy_cf, new_cf], event
        boundaries[event["partition"]] = LegacyBoundary(event["partition"], event["committed_changelog_offset"] + 1, old)

    sent = bounce_one_by_one(cluster, instances, lambda instance: instance.bounce(store_type=new.value), upgraded,
                             keys=KEYS)
    assert sorted(boundaries) == list(range(PARTITIONS))

    state = cluster.logical_state()
    checked = assert_no_acknowledged_input_lost(cluster, state, new)
    report = oracle(cluster.changelog_topic, new, state, boundaries)
    assert report.ok, report.summary()

    # Changelog format unchanged: raw input values at the input timestamps; headers only once the headers
    # store writes (CL-8), never before (CL-3, CL-4).
    by_value = cluster.input_by_value()
    latest_offset: dict[tuple[int, bytes], int] = {}
    for row in cluster.changelog_rows():
        latest_offset[(row.partition, row.key)] = row.offset
        if row.value is None:
            continue
        source = by_value[row.value]
        assert (row.key, row.timestamp) == (source.key, source.timestamp), row
        legacy = row.offset < boundaries[row.partition].before_offset
        if legacy or new is not StoreType.TIMESTAMPED_KV_WITH_HEADERS:
            assert row.headers == (), row
        else:
            assert row.headers == source.headers, row

    legacy_keys = new_keys = 0
    for partition in range(PARTITIONS):
        families = cluster.dump(partition).column_families
        for key, value in state[partition].items():
            raw, timestamp, headers = decode(new, value)
            source = by_value[raw]
            if latest_offset[(partition, key)] < boundaries[partition].before_offset:
                legacy_keys += 1
                assert key in families[legacy_cf] and key not in families[new_cf]
                if new is StoreType.TIMESTAMPED_KV_WITH_HEADERS:
                    # Legacy values read with empty headers and their own timestamps (HV-8, KV-31).
                    assert (timestamp, headers) == (source.timestamp, ()), (key, value)
                else:
                    # An in-place KIP-258 upgrade has no timestamp for legacy values: -1 (TSKV-5, RST-7).
                    assert timestamp == -1, (key, value)
            else:
                new_keys += 1
                assert key in families[new_cf] and key not in families[legacy_cf]
                assert timestamp == source.timestamp
                if new is StoreType.TIMESTAMPED_KV_WITH_HEADERS:
                    assert headers == source.headers  # new writes carry headers
    assert legacy_keys > 0 and new_keys > 0, (legacy_keys, new_keys)
    system_report(f"rolling upgrade {old.value}->{new.value}",
                  {"input_during_upgrade": sent, "keys_checked": checked, "legacy_keys": legacy_keys,
                   "new_keys": new_keys, "changelog_records": report.records_read, "oracle": report.engine})
