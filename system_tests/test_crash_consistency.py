"""Crash consistency (KIP-1035): an instance SIGKILLed at random points during writes, commits and restores,
many times over. After every crash, read without opening the store for writing: the status is still OPEN
(KV-52), the committed changelog offset is never ahead of the changelog and the data is exactly the
changelog up to it (KV-50, OFF-4), and every input offset committed to Kafka has its changelog record.
On restart the unclean shutdown is detected and the restore catches up to the changelog's end. At the end
no acknowledged input is lost and the state matches the oracle.

``KSTATE_CRASH_ITERATIONS`` (default 20) sets the number of crashes.
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from collections.abc import Callable

from conftest import Oracle
from helpers import assert_no_acknowledged_input_lost, committed_input

from kstate.app.cluster import AppCluster
from kstate.app.config import CRASH_POINTS, UNCLEAN_KEEP, UNCLEAN_WIPE
from kstate.codecs.store_types import StoreType
from kstate.spark.oracle import ChangelogRow, python_kv_state

ITERATIONS = int(os.environ.get("KSTATE_CRASH_ITERATIONS", "20"))
STORE_TYPE = StoreType.TIMESTAMPED_KV_WITH_HEADERS
PARTITIONS = 2


def _committed_input(cluster: AppCluster) -> dict[int, int]:
    return committed_input(cluster, PARTITIONS)


def _store_state(cluster: AppCluster, partition: int) -> dict[str, object]:
    """The offsets status and the file names of one partition's store, read-only (a failure's evidence)."""
    dump = cluster.dump(partition)
    files = sorted(p.name for p in dump.path.iterdir()) if dump.path.is_dir() else None
    return {"status_open": dump.status_open, "families": sorted(dump.column_families), "files": files}


def test_sigkill_at_random_points_never_loses_or_runs_ahead(make_cluster: Callable[..., AppCluster], oracle: Oracle,
                                                            system_report: Callable[[str, object], None]) -> None:
    cluster = make_cluster(STORE_TYPE, partitions=PARTITIONS)
    # Every crash point, and the events each start is checked by (INST-3), before the first crash.
    cluster.require(crash_points=CRASH_POINTS, events=("opened", "restored", "unclean_shutdown", "wiped"))
    rng = random.Random(int(os.environ.get("KSTATE_CRASH_SEED", "20261122")))
    instance = cluster.instance("crashy", range(PARTITIONS), commit_every_records=40, commit_interval_ms=30,
                                restore_batch_size=100)
    outcomes: Counter[str] = Counter()
    opened_before_crash: set[int] = set()
    started = time.monotonic()
    for iteration in range(ITERATIONS):
        cluster.produce_batch(per_partition=int(rng.choice([100, 200, 400])), keys=250, rng=rng)
        changelog_before = cluster.changelog_rows()
        end_before = {p: max((r.offset for r in changelog_before if r.partition == p), default=None)
                      for p in range(PARTITIONS)}
        crash_at = None
        policy = UNCLEAN_WIPE if iteration % 7 == 6 else UNCLEAN_KEEP
        if iteration % 2 == 0:
            point = CRASH_POINTS[(iteration // 2) % len(CRASH_POINTS)]
            crash_at = f"{point}:{rng.randint(1, 3)}"
            if point == "after_restore_batch":
                policy = UNCLEAN_WIPE  # a full restore from the changelog, to be crashed in the middle of
        # What each store holds before this start, for the message of a failed check below (read-only).
        before_start = {p: _store_state(cluster, p) for p in range(PARTITIONS)}
        instance.start(crash_at=crash_at, on_unclean_shutdown=policy)
        if crash_at is None:
            time.sleep(rng.uniform(0.2, 1.5))
            instance.kill()
            outcomes["killed by timer"] += 1
        else:
            try:
                instance.wait_exit(timeout=4)
                outcomes[f"crashed {crash_at.split(':')[0]}"] += 1
            except Exception:
                instance.kill()  # the point was not reached in time (e.g. nothing to restore)
                outcomes["crash point not reached, killed"] += 1
        mine = [e for e in instance.events() if e["pid"] == instance.pid]

        # On this start: an earlier crash was detected (KV-52), and restore caught up to the changelog's end.
        for event in mine:
            if event["event"] == "unclean_shutdown":
                outcomes["unclean shutdown detected"] += 1
            if event["event"] == "restored" and end_before[event["partition"]] is not None:
                assert event["last_offset"] in (None, end_before[event["partition"]]), (event, end_before)
                outcomes["restored records"] += event["records"]
        detected = {e["partition"] for e in mine if e["event"] == "unclean_shutdown"}
        opened_now = {e["partition"] for e in mine if e["event"] == "opened"}
        wiped_now = {e["partition"] for e in mine if e["event"] == "wiped"}
        assert opened_before_crash & opened_now <= detected, (iteration, opened_before_crash, detected,
                                                              [(e["event"], e.get("partition")) for e in mine],
                                                              before_start)
        # A store wiped and not opened again (killed in between) is gone: its next open is a clean one. So may be
        # one whose wipe was decided but whose "wiped" event was never written (killed during the delete).
        wiping_now = {e["partition"] for e in mine
                      if e["event"] == "unclean_shutdown" and e.get("policy") == UNCLEAN_WIPE}
        outcomes["killed between wipe and reopen"] += len((wiped_now | wiping_now) - opened_now)
        opened_before_crash = opened_now | (opened_before_crash - opened_now - wiped_now - wiping_now)

        # After the crash, read-only: never ahead of the data, never ahead of the changelog.
        changelog = cluster.changelog_rows()
        committed_input = _committed_input(cluster)
        logged_values = {r.value for r in changelog if r.value is not None}
        for partition in range(PARTITIONS):
            dump = cluster.dump(partition)
            if partition in opened_now:
                assert dump.status_open is True, f"iteration {iteration}: status not OPEN after SIGKILL"
            committed = dump.committed_offset(cluster.changelog_topic, partition)
            rows = [r for r in changelog if r.partition == partition]
            if committed is None:
                assert not dump.logical_view(STORE_TYPE), f"iteration {iteration}: data without a committed offset"
                continue
            assert committed <= rows[-1].offset, (iteration, committed, rows[-1].offset)
            prefix = [ChangelogRow(r.partition, r.offset, r.key, r.value, r.timestamp, r.headers)
                      for r in rows if r.offset <= committed]
            expected = python_kv_state(prefix, STORE_TYPE).get(partition, {})
            assert dump.logical_view(STORE_TYPE) == expected, f"iteration {iteration}: data != changelog[0..{committed}]"
            outcomes["store checks"] += 1
        for record in cluster.acked:
            if record.value is not None and record.offset < committed_input[record.partition]:
                assert record.value in logged_values, f"iteration {iteration}: committed input {record} not logged"

    instance.start(crash_at=None, on_unclean_shutdown=UNCLEAN_KEEP)
    instance.wait_caught_up(cluster.input_end(), timeout=120)
    assert instance.stop() == 0
    state = cluster.logical_state()
    checked = assert_no_acknowledged_input_lost(cluster, state, STORE_TYPE)
    report = oracle(cluster.changelog_topic, STORE_TYPE, state)
    assert report.ok, report.summary()
    assert outcomes["unclean shutdown detected"] >= ITERATIONS // 2
    summary = {"iterations": ITERATIONS, "seconds": round(time.monotonic() - started, 1),
               "input_records": len(cluster.acked), "final_keys_checked": checked, **outcomes}
    system_report("crash consistency", summary)
