"""``kstate audit`` without a cluster: the client configuration it builds, and setup errors in one line, fast.

The end-to-end run against the embedded broker with a non-default configuration is in
system_tests/test_spark_oracle.py.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from kstate.cli import build_parser, main
from kstate.kafka.client_config import ClientConfigError, build_client_config, read_properties


def _audit(tmp_path: Path, *extra: str) -> list[str]:
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    return ["audit", "--bootstrap", "127.0.0.1:1", "--application-id", "app", "--store", "s", "--store-type", "kv",
            "--state-dir", str(state), "--engine", "python", "--connect-timeout", "1", *extra]


def test_properties_file_shortcuts_and_settings_in_that_order(tmp_path: Path) -> None:
    file = tmp_path / "client.properties"
    file.write_text("# a comment\n! another\nclient.id = from-file\nsecurity.protocol: SSL\n\nfetch.wait.max.ms=7\n")
    assert read_properties(file) == {"client.id": "from-file", "security.protocol": "SSL", "fetch.wait.max.ms": "7"}
    config = build_client_config(file=file, shortcuts={"security.protocol": "PLAINTEXT", "sasl.username": None},
                                 settings=["client.id=from-x", "fetch.wait.max.ms=9", "client.id=last"])
    assert config == {"client.id": "last", "security.protocol": "PLAINTEXT", "fetch.wait.max.ms": "9"}


@pytest.mark.parametrize("settings", [["client.id"], ["=x"]])
def test_a_setting_without_key_or_value_is_refused(settings: list[str]) -> None:
    with pytest.raises(ClientConfigError, match="key=value"):
        build_client_config(settings=settings)


def test_bootstrap_comes_from_the_option_only() -> None:
    with pytest.raises(ClientConfigError, match=r"bootstrap\.servers"):
        build_client_config(settings=["bootstrap.servers=elsewhere:9092"])


def test_an_unreachable_broker_is_named_in_one_line_within_the_timeout(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    assert main(_audit(tmp_path, "-X", "client.id=auditor")) == 2
    assert time.monotonic() - started < 10
    err = capsys.readouterr().err
    assert "no broker answered at 127.0.0.1:1" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_a_property_librdkafka_does_not_know_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_audit(tmp_path, "-X", "sasl.jaas.config=java-only")) == 2
    assert "sasl.jaas.config" in capsys.readouterr().err


def test_a_missing_config_file_or_state_dir_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_audit(tmp_path, "--client-config", str(tmp_path / "absent.properties"))) == 2
    assert "absent.properties" in capsys.readouterr().err
    args = _audit(tmp_path)
    args[args.index("--state-dir") + 1] = str(tmp_path / "no-such-dir")
    assert main(args) == 2
    assert "no-such-dir" in capsys.readouterr().err


def test_a_missing_password_variable_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KSTATE_TEST_NO_SUCH_VAR", raising=False)
    assert main(_audit(tmp_path, "--sasl-password-env", "KSTATE_TEST_NO_SUCH_VAR")) == 2
    assert "KSTATE_TEST_NO_SUCH_VAR" in capsys.readouterr().err


@pytest.mark.parametrize(("module", "engine", "extra"), [("confluent_kafka", "python", "kafka"),
                                                         ("pyspark", "spark", "spark")])
def test_a_missing_extra_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch, module: str, engine: str, extra: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # importing it now raises ModuleNotFoundError

    def no_broker(*args: object, **kwargs: object) -> list[int]:
        raise AssertionError("the broker was contacted before the extras were checked")

    # The extras are checked first: no wait on a broker for a setup that cannot run anyway.
    monkeypatch.setattr("kstate.kafka.client_config.check_reachable", no_broker)
    args = _audit(tmp_path)
    args[args.index("--engine") + 1] = engine
    assert main(args) == 2
    err = capsys.readouterr().err
    # The hint is the README's install command.
    assert f"needs {'confluent-kafka' if extra == 'kafka' else 'pyspark'}" in err
    assert "pip install '.[kafka,spark]'" in err and "Traceback" not in err


def test_the_spark_source_passes_kafka_options_to_its_clients() -> None:
    pytest.importorskip("pyspark")
    from kstate.spark.kafka_source import KafkaTopicReader

    reader = KafkaTopicReader({"bootstrap": "b:1", "topic": "t", "kafka.client.id": "auditor",
                               "kafka.security.protocol": "PLAINTEXT", "timeout": "5"})
    assert reader.client_config == {"client.id": "auditor", "security.protocol": "PLAINTEXT"}


def test_every_option_of_every_subcommand_has_help() -> None:
    import argparse

    missing: list[str] = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{path} {name}")
            elif not isinstance(action, argparse._HelpAction) and not action.help:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")

    walk(build_parser(), "kstate")
    assert not missing, f"options without help text: {missing}"


def test_the_oracle_hands_the_client_configuration_to_the_spark_source(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pyspark")
    from kstate.codecs.store_types import StoreType
    from kstate.spark import kafka_source
    from kstate.spark.oracle import audit

    seen: dict[str, str] = {}

    class Stop(Exception):
        pass

    def read_topic(spark: object, bootstrap: str, topic: str, **options: str) -> None:
        seen.update(options)
        raise Stop

    monkeypatch.setattr(kafka_source, "read_topic", read_topic)
    with pytest.raises(Stop):
        audit("b:1", "t", StoreType.KEY_VALUE, {}, spark=object(), client_config={"client.id": "auditor"})
    # The audit reads with the source's map-side combine (latest record per key of each partition).
    assert seen == {"kafka.client.id": "auditor", "latest_per_key": "true"}


def test_state_directories_without_the_store_are_warned_about(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from kstate.spark.oracle import AuditReport

    monkeypatch.setattr("kstate.kafka.client_config.check_reachable", lambda *a, **k: [0])
    monkeypatch.setattr("kstate.kafka.client_config.partition_offsets", lambda *a, **k: {0: (0, 5)})
    monkeypatch.setattr("kstate.spark.oracle.audit", lambda *a, **k: AuditReport("python", 0, 0, 0))
    assert main(_audit(tmp_path)) == 0
    captured = capsys.readouterr()
    assert "0 partitions dumped" in captured.out
    assert "warning: no store s of application app under" in captured.err


@pytest.mark.parametrize(("extra", "message"), [
    (["--store-type", "versioned_kv"], "history-retention-ms"),
    (["--store-type", "session"], "retention-ms"),
    (["--store-type", "window", "--retention-ms", "5", "--engine", "python"], "Spark engine only"),
    (["--store-type", "window", "--retention-ms", "5", "--legacy", "0:1:kv"], "key-value stores only"),
    (["--store-type", "kv", "--legacy", "0:1:window"], "expected PARTITION:OFFSET:TYPE"),
])
def test_a_family_audit_without_what_it_needs_is_refused_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str) -> None:
    args = _audit(tmp_path)
    del args[args.index("--store-type"):args.index("--store-type") + 2]
    del args[args.index("--engine"):args.index("--engine") + 2]
    assert main([*args, *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_without_a_store_type_one_is_detected_or_asked_for(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = _audit(tmp_path)
    del args[args.index("--store-type"):args.index("--store-type") + 2]
    assert main(args) == 2
    assert "cannot tell the type of store s (no such store in any task directory); pass --store-type" in (
        capsys.readouterr().err)


def test_spark_kafka_source_without_the_spark_engine_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_audit(tmp_path, "--source", "spark-kafka")) == 2
    err = capsys.readouterr().err
    assert "--source spark-kafka is a Spark reader: it needs --engine spark" in err and "Traceback" not in err


def test_the_spark_kafka_source_reads_what_the_python_source_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--source spark-kafka`` hands the audit's reads to Spark's Kafka source: read_committed, from the start,
    the partitions and (exclusive) ends asked for, client properties as ``kafka.*`` options."""
    pytest.importorskip("pyspark")
    from kstate.codecs.store_types import StoreType
    from kstate.spark.oracle import audit, read_changelog_frame

    options: dict[str, str] = {}

    class Stop(Exception):
        pass

    class Reader:
        def format(self, name: str) -> Reader:
            options["format"] = name
            return self

        def option(self, key: str, value: str) -> Reader:
            options[key] = value
            return self

        def load(self) -> None:
            raise Stop

    class Session:
        read = Reader()

    with pytest.raises(Stop):
        audit("b:1", "t", StoreType.KEY_VALUE, {}, spark=Session(), client_config={"client.id": "auditor"},
              source="spark-kafka")
    assert options == {"format": "kafka", "kafka.bootstrap.servers": "b:1", "includeHeaders": "true",
                       "startingOffsets": "earliest", "kafka.isolation.level": "read_committed",
                       "failOnDataLoss": "false", "subscribe": "t", "endingOffsets": "latest",
                       "kafka.client.id": "auditor"}
    options.clear()
    with pytest.raises(Stop):
        read_changelog_frame(Session(), "b:1", "t", [1, 0], ends={0: 5, 1: 7}, source="spark-kafka")
    assert options["assign"] == '{"t": [0, 1]}' and options["endingOffsets"] == '{"t": {"0": 5, "1": 7}}'
    assert "subscribe" not in options


def test_connector_jars_are_named_without_their_versions() -> None:
    from kstate.spark.spark_kafka import artifact_name

    assert [artifact_name(j) for j in ("/m2/spark-sql-kafka-0-10_2.13-4.2.0.jar", "kafka-clients-3.9.2.jar",
                                        "lz4-java-1.10.1.jar", "netty-common-4.1.118.Final.jar")] == [
        "spark-sql-kafka-0-10_2.13", "kafka-clients", "lz4-java", "netty-common"]
