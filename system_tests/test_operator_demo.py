"""The operator's first five minutes (issue 34): ``kstate demo`` brings up the broker, a Kafka Streams application
with traffic and its state directory, and prints the ``kstate inspect`` and ``kstate audit`` commands to run on it;
those commands, run as printed, exit 0; ``kstate broker stop`` stops the broker. The path of the operator's guide
(``docs/operator.md``, the same block in the README) is run as written, its audit without ``--store-type`` (the
README's example that crashed beside Kafka Streams' ``.lock``), then again on the changelog emptied by DeleteRecords.

Runs on its own broker (the demo's service), not the shared one; Kafka Streams where Java and Maven are installed,
else the reference instance (the demo says so). Spark for the audit when pyspark is installed.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
import subprocess
import sys
from pathlib import Path

from kstate.kafka import broker_service
from kstate.kafka.broker import metadata_answers
from kstate_conformance import rules

REPO = Path(__file__).resolve().parents[1]
#: Bounds of each step: the demo (a broker, Maven's first resolution, a JVM application), an audit (Spark's start).
DEMO_TIMEOUT_S = 600
COMMAND_TIMEOUT_S = 300


def _kstate_on_path(tmp_path: Path) -> dict[str, str]:
    """An environment whose ``kstate`` on the PATH is this checkout's (as ``pip install .`` would give)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "kstate"
    script.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m kstate.cli \"$@\"\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    env.pop("KSTATE_BOOTSTRAP", None)  # the demo starts its own broker
    # The commands run in a scratch directory with the kit installed (a tox env's wheel has no tree around its
    # modules): they are pointed at this checkout's broker project and Kafka Streams instance, as an operator with an
    # installed kit would point them (docs/operator.md).
    env.setdefault("KSTATE_APACHE_PROJECT", str(REPO / "system_tests" / "brokers" / "apache"))
    env.setdefault("KSTATE_KAFKA_STREAMS_RUN", str(REPO / "instances" / "kafka-streams" / "run"))
    return env


def _run(line: str, env: dict[str, str], cwd: Path, timeout: float = COMMAND_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-euo", "pipefail", "-c", line], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def _guide_block(path: Path, heading: str) -> str:
    """The first ``sh`` block under ``heading`` of a Markdown file."""
    text = path.read_text(encoding="utf-8")
    section = text[text.index(heading):]
    found = re.search(r"```sh\n(.*?)```", section, re.S)
    assert found, f"{path}: no sh block under {heading!r}"
    return found.group(1)


def _delete_every_record(bootstrap: str, topic: str) -> None:
    """DeleteRecords up to each partition's end, as retention deletes a changelog's records (the topic's policy made
    ``compact,delete`` first: a compacted topic refuses DeleteRecords)."""
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kstate-demo-test"})
    try:
        partitions = sorted(consumer.list_topics(topic, timeout=15).topics[topic].partitions)
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=15)[1] for p in partitions}
    finally:
        consumer.close()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    policy = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry("cleanup.policy", "compact,delete", incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([policy]).values():
        future.result(30)
    for future in admin.delete_records([TopicPartition(topic, p, end) for p, end in ends.items()]).values():
        future.result(30)


def _audit_engine() -> list[str]:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return ["--engine", "python"]
    return []


def _guide_lines() -> list[str]:
    """docs/operator.md's first five minutes, the README's operator path: its command lines, continuations joined."""
    block = _guide_block(REPO / "docs" / "operator.md", "## First five minutes")
    assert block in (REPO / "README.md").read_text(encoding="utf-8"), "the README's operator path is not the guide's"
    return [line.strip() for line in block.replace("\\\n", " ").splitlines()
            if line.strip() and not line.strip().startswith("#")]


def _options(line: str) -> dict[str, str]:
    words = shlex.split(line)
    return {w: words[i + 1] for i, w in enumerate(words) if w.startswith("--") and i + 1 < len(words)}


@rules("LAY-5", "INST-1", "CL-16")
def test_the_operator_path_runs_as_written_and_the_demo_prints_it(tmp_path: Path) -> None:
    """The guide's lines in a shell, one by one: ``kstate demo`` (exit 0, printing the inspect, audit and stop
    commands the guide gives, the broker's address filled in), the inspect and the audit as written (exit 0, the
    audit's store type detected beside Kafka Streams' ``.lock``: the README's example that crashed), then the same
    audit on the changelog emptied as retention empties it (said once a partition), and the broker's stop."""
    lines = _guide_lines()
    assert [line.split()[:2] for line in lines] == [["kstate", "demo"], ["kstate", "inspect"], ["kstate", "audit"],
                                                   ["kstate", "broker"]], lines
    demo_line, inspect_line, audit_line, stop_line = lines
    assert "--store-type" not in audit_line, audit_line
    env = _kstate_on_path(tmp_path)
    demo = tmp_path / "kstate-demo"
    try:
        done = _run(demo_line, env, tmp_path, DEMO_TIMEOUT_S)
        assert done.returncode == 0, done.stderr[-3000:]
        printed = [line for line in done.stdout.splitlines() if line.startswith("kstate ")]
        assert [line.split()[1] for line in printed] == ["inspect", "audit", "broker"], done.stdout
        printed_audit = _options(printed[1])
        bootstrap = printed_audit.pop("--bootstrap")
        assert bootstrap.startswith("127.0.0.1:"), bootstrap
        guide_audit = {k: v for k, v in _options(audit_line).items() if k != "--bootstrap"}
        assert Path(printed_audit["--state-dir"]) == (tmp_path / guide_audit.pop("--state-dir")).resolve()
        del printed_audit["--state-dir"]
        assert printed_audit == guide_audit, (printed[1], audit_line)

        inspected = _run(inspect_line, env, tmp_path)
        assert inspected.returncode == 0, inspected.stdout + inspected.stderr
        assert "timestamped_kv" in inspected.stdout and "0 violations" in inspected.stdout, inspected.stdout

        audited = _run(" ".join([audit_line, *_audit_engine()]), env, tmp_path, DEMO_TIMEOUT_S)
        assert audited.returncode == 0, audited.stdout + audited.stderr[-3000:]
        assert re.search(r"\b1000 changelog records\b.* 0 differences", audited.stdout), audited.stdout

        # The changelog emptied as retention would empty it: the audit says so once a partition, after the verdict.
        _delete_every_record(bootstrap, "demo-timestamped-kv-counts-changelog")
        emptied = _run(f"{audit_line} --engine python", env, tmp_path)
        assert emptied.returncode == 1, emptied.stdout + emptied.stderr[-3000:]
        out = emptied.stdout.splitlines()
        assert out[1].startswith("python oracle: 0 changelog records"), out[:3]
        assert [line.split(":")[0] for line in out[2:]] == ["partition 0", "partition 1"], out
        assert all("the changelog partition is empty" in line for line in out[2:]), out

        # kstate instance run on the running broker (the demo's, found by --broker-dir): the reference instance.
        state = tmp_path / "run-state"
        ran = _run(f"kstate instance run --broker-dir kstate-demo/broker --application-id run-app --store s:kv "
                   f"--state-dir {shlex.quote(str(state))} --instance reference --records 200", env, tmp_path)
        assert ran.returncode == 0, ran.stdout + ran.stderr[-3000:]
        assert "200 input records processed" in ran.stderr, ran.stderr
        inspected = _run(f"kstate inspect --json {shlex.quote(str(state))}", env, tmp_path)
        assert inspected.returncode == 0 and '"type": "kv"' in inspected.stdout, inspected.stdout[:2000]

        stopped = _run(stop_line, env, tmp_path)
        assert stopped.returncode == 0, stopped.stderr
        assert broker_service.running(demo / "broker") is None
        assert metadata_answers(bootstrap, 3) is not None, f"the broker at {bootstrap} still answers after the stop"
    finally:
        broker_service.stop(demo / "broker")
