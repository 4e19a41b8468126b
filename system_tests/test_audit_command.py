"""``kstate audit`` as an operator runs it: a copy of an instance's state directory deliberately corrupted (one
value changed, one key deleted, one key added) is reported with the right count per kind in the Markdown,
HTML and JSON lines reports (RST-1, RST-2); several stores of one application, of different families, are
audited in one run with one summary line each (VER-25, VER-32); progress goes to stderr as plain lines
outside a terminal and not at all with ``--quiet``."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import consumed_by_one_instance, write_raw_store

from kstate.app.cluster import AppCluster
from kstate.codecs.layout import column_family_plan
from kstate.codecs.store_types import StoreType
from kstate.kafka.broker import Broker
from kstate.kafka.changelog_topics import create_topic, produce
from kstate.spark.audit_report import read_jsonl

pytestmark = pytest.mark.spark


def _corrupt(store_path: Path, store_type: StoreType) -> tuple[bytes, bytes]:
    """In a closed store's data family: the first key's value changed (timestamp kept), the second key deleted,
    ``never-written`` added. Answers the changed and the deleted key."""
    import rocksdict

    from kstate.stores.engine import rocksdb_options

    names = rocksdict.Rdict.list_cf(str(store_path))
    db: Any = rocksdict.Rdict(str(store_path), rocksdb_options(),
                              column_families={cf: rocksdb_options() for cf in names})
    data = db.get_column_family(column_family_plan(store_type, {}).data_cf)
    changed, deleted = sorted(data.keys())[:2]
    data[changed] = bytes(data[changed])[:8] + b"tampered"
    del data[deleted]
    data[b"never-written"] = (1000).to_bytes(8, "big") + b"x"
    del data
    db.close()
    del db
    return changed, deleted


def test_a_corrupted_store_copy_is_reported_per_kind_in_every_report_format(
        spark: Any, make_cluster: Callable[..., AppCluster], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    from kstate.cli import main

    cluster = make_cluster(StoreType.TIMESTAMPED_KV, partitions=2)
    instance = consumed_by_one_instance(cluster, per_partition=200, keys=50, seed=3)
    copy = tmp_path / "copy"
    shutil.copytree(instance.config.state_dir, copy)
    changed, deleted = _corrupt(copy / cluster.application_id / "0_1" / "rocksdb" / cluster.store_name,
                                StoreType.TIMESTAMPED_KV)
    args = ["audit", "--bootstrap", cluster.broker.bootstrap, "--application-id", cluster.application_id,
            "--store", cluster.store_name, "--state-dir", str(copy), "--master", "local[2]"]
    # The untouched original is clean; the report of a clean run says so.
    clean = tmp_path / "clean.md"
    assert main([*args[:-4], "--state-dir", instance.config.state_dir, "--master", "local[2]",
                 "--report", str(clean)]) == 0
    assert "None: every store holds exactly the state its changelog implies." in clean.read_text(encoding="utf-8")
    capsys.readouterr()

    reports = {fmt: tmp_path / "reports" / f"audit.{fmt}" for fmt in ("md", "html", "jsonl")}
    for fmt, path in reports.items():
        assert main([*args, "--report", str(path)]) == 1
        captured = capsys.readouterr()
        assert "3 differences" in captured.out and f"report ({fmt}) written to {path}" in captured.err
        # Not a terminal: one plain line a stage, on stderr.
        assert f"audit {cluster.store_name}: reading stores" in captured.err
        assert f"audit {cluster.store_name}: comparing" in captured.err
        # The last line of a store's progress says the records the audit read, as its summary does.
        read = re.findall(rf"audit {cluster.store_name}: done, (\d+) changelog records read", captured.err)
        assert len(read) == 1 and f"oracle: {read[0]} changelog records" in captured.out and int(read[0]) > 0
    markdown = reports["md"].read_text(encoding="utf-8")
    assert "| store | missing | unexpected | different | total |" in markdown
    assert f"| {cluster.store_name} | 1 | 1 | 1 | 3 |" in markdown
    assert f"| 1 | `{deleted.hex()}` |  | missing |" in markdown
    page = reports["html"].read_text(encoding="utf-8")
    assert (f"<tr><td>{cluster.store_name}</td><td>1</td><td>1</td><td>1</td><td>3</td></tr>" in page)
    assert f"<code>{b'never-written'.hex()}</code>" in page
    rows = read_jsonl(reports["jsonl"])
    assert sorted((r.partition, bytes.fromhex(r.key), r.kind) for r in rows) == sorted(
        [(1, changed, "different"), (1, deleted, "missing"), (1, b"never-written", "unexpected")])
    different = next(r for r in rows if r.kind == "different")
    assert different.actual is not None and different.actual.endswith(b"tampered".hex())
    assert different.expected is not None and different.expected[:16] == different.actual[:16]  # same timestamp
    first = json.loads(reports["jsonl"].read_text(encoding="utf-8").splitlines()[0])
    assert set(first) == {"store", "store_type", "partition", "key", "entry", "kind", "expected", "actual"}
    assert first["store"] == cluster.store_name and first["store_type"] == "timestamped_kv"

    # --quiet: the same outcome and output, nothing on stderr.
    assert main([*args, "--quiet"]) == 1
    captured = capsys.readouterr()
    assert "3 differences" in captured.out and captured.err == ""


def test_several_stores_of_different_families_in_one_run(
        spark: Any, broker: Broker, tmp_path: Path, app_name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A key-value store (type detected) that matches its changelog and a versioned store (type given with the
    name) that lacks a version: each store's usual output, then one line a store; exit 1 for the one."""
    from kstate.cli import main
    from kstate.codecs import versioned
    from kstate.stores.api import Backend, TopicPartition
    from kstate.stores.factory import open_kv_store

    create_topic(broker, f"{app_name}-counts-changelog", 2)
    rows = {p: {b"k%d-%d" % (p, i): b"v%d" % i for i in range(5)} for p in range(2)}
    for partition, entries in rows.items():
        produce(broker, f"{app_name}-counts-changelog", [(k, v, 100, []) for k, v in entries.items()],
                partition=partition)
        store = open_kv_store(StoreType.KEY_VALUE, Backend.ROCKSDB, name="counts",
                              state_dir=tmp_path / "state", application_id=app_name,
                              task_id=f"0_{partition}")
        for key, value in entries.items():
            store.put(key, value)
        store.commit({TopicPartition(f"{app_name}-counts-changelog", partition): len(entries)})
        store.close()
    create_topic(broker, f"{app_name}-vs-changelog", 1)
    produce(broker, f"{app_name}-vs-changelog", [(b"k1", b"a", 1000, []), (b"k2", b"x", 2500, []),
                                                 (b"k3", b"q", 3100, [])])
    store_dir = tmp_path / "state" / app_name / "0_0" / "rocksdb" / "vs"
    write_raw_store(store_dir, {versioned.latest_value_key(b"k1"): versioned.encode_latest_value(b"a", 1000),
                                versioned.latest_value_key(b"k2"): versioned.encode_latest_value(b"x", 2500)})
    report = tmp_path / "audit.md"
    args = ["audit", "--bootstrap", broker.bootstrap, "--application-id", app_name, "--store", "counts",
            "--store", "vs:versioned_kv", "--history-retention-ms", "500000", "--state-dir", str(tmp_path / "state"),
            "--master", "local[2]", "--report", str(report)]
    assert main(args) == 1
    captured = capsys.readouterr()
    assert "store counts: store type kv (detected" in captured.err
    out = captured.out
    assert f"{app_name}-counts-changelog: 2 partitions dumped" in out
    assert f"{app_name}-vs-changelog: 1 partitions dumped" in out
    assert "2 stores audited:" in out
    assert ("  counts (kv): ok, 10 changelog records, 10 expected keys, 10 actual keys, 0 differences\n") in out
    assert ("  vs (versioned_kv): DIFFERENCES, 3 changelog records, 3 expected versions, 2 actual versions, "
            "1 differences (missing 1)") in out
    text = report.read_text(encoding="utf-8")
    assert "2 stores audited, 1 with differences, 1 differences." in text
    assert "| counts | 0 | 0 |" in text and "| vs | 1 | 1 |" in text
    assert f"| 0 | `{b'k3'.hex()}` | valid_from=3100 | missing | value=71 valid_to=latest | *absent* |" in text
    # --legacy names one store's partitions: refused with several stores, before any work.
    assert main([*args, "--legacy", "0:1:kv"]) == 2
    assert "give a single --store" in capsys.readouterr().err
