"""``kstate fixtures record``: Kafka's answers to the spec and reference inputs, recorded without a JVM here.

A fake testee (the reference with chosen answers replaced) stands in for Kafka; the committed recordings are
checked for provenance, classified deviations and a verifier that still fails a mark that no longer holds.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kstate.fixtures_tool import dumps_fixture, verify
from kstate_conformance.adapter import ReferenceAdapter, Unsupported
from kstate_conformance.data import fixtures_dir
from kstate_conformance.expectations import Entry, ExpectedFailures
from kstate_conformance.fixtures import all_cases, deviating_cases
from kstate_conformance.kafka_jvm.recording import documents, normalized, record, report_markdown, version_differences

REPO = Path(__file__).resolve().parents[1]
RECORDED_VERSION = "4.4.0"


class FakeKafka:
    """The reference, but answering ``overrides`` (op -> output) and refusing ``missing`` ops as unsupported."""

    name = "fake-kafka"

    def __init__(self, overrides: dict[str, Any] | None = None, missing: tuple[str, ...] = ()) -> None:
        self.reference = ReferenceAdapter()
        self.overrides = overrides or {}
        self.missing = missing

    def supports(self, op: str) -> bool:
        return op not in self.missing

    def call(self, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        if op in self.missing:
            raise Unsupported(op)
        if op in self.overrides:
            return dict(self.overrides[op])
        return self.reference.call(op, payload)


def _root(tmp_path: Path) -> Path:
    """A fixtures tree of one spec file, one reference file and one vector file, taken from the shipped ones."""
    root = tmp_path / "fixtures"
    for rel in ("fixture.schema.json", "spec/primitives.json", "reference/timestamped.json", "kafka-jvm/varint.json"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(fixtures_dir() / rel, root / rel)
    return root


def test_every_source_case_is_recorded_with_its_kafka_version(tmp_path: Path) -> None:
    root = _root(tmp_path)
    rec = record(FakeKafka(missing=("timestamped.raw_value",)), "4.4.0", root)
    sources = sum(len(json.loads(p.read_text())["cases"]) for p in root.glob("[rs]*/*.json"))
    assert rec.sources == len(rec.outcomes) == sources
    assert rec.count("unsupported") == sum(
        1 for p in root.glob("reference/*.json") for c in json.loads(p.read_text())["cases"]
        if c["op"] == "timestamped.raw_value") > 0
    assert rec.count("deviates") == 0 and rec.count("recorded") == sources - rec.count("unsupported")
    for outcome in rec.outcomes:
        if outcome.case is not None:
            assert outcome.case["provenance"] == {"kafka_version": "4.4.0", "recorded_from": outcome.source_id}
            assert outcome.case["id"].startswith("kafka-jvm.recorded_")
    assert rec.vectors_checked > 100 and rec.vector_disagreements == []


def test_a_deviating_answer_is_recorded_with_the_expected_failure_reason(tmp_path: Path) -> None:
    root = _root(tmp_path)
    wrong = {"bytes": "00"}
    source = next(c for c in json.loads((root / "spec/primitives.json").read_text())["cases"]
                  if c["op"] == "primitives.encode_int64")
    expected = ExpectedFailures(Path("x.txt"), [Entry(f"test_golden.py::test_golden[{source['id']}]", "[KAFKA] XX-1: because")])
    rec = record(FakeKafka({"primitives.encode_int64": wrong}), "4.4.0", root, expected)
    deviating = {o.source_id: o for o in rec.outcomes if o.status == "deviates"}
    assert source["id"] in deviating
    case = deviating[source["id"]].case
    assert case is not None and case["output"] == wrong
    assert case["deviation"]["reason"] == "[KAFKA] XX-1: because" and case["deviation"]["from"] == source["id"]
    others = [o for i, o in deviating.items() if i != source["id"]]
    assert others and all(o.detail.startswith("[UNCLASSIFIED]") for o in others)
    report = report_markdown(rec)
    assert f"`{source['id']}`: [KAFKA] XX-1: because" in report


def test_a_vector_the_testee_contradicts_is_reported_not_overwritten(tmp_path: Path) -> None:
    root = _root(tmp_path)
    before = (root / "kafka-jvm/varint.json").read_bytes()
    rec = record(FakeKafka({"varint.write_varint": {"bytes": "ff"}}), "4.4.0", root)
    assert rec.vector_disagreements and all(i.startswith("kafka-jvm.varint.") for i, _ in rec.vector_disagreements)
    assert "varint.json" not in "".join(documents(rec))
    assert (root / "kafka-jvm/varint.json").read_bytes() == before
    assert "disagreeing with the vectors" in report_markdown(rec)


def test_recorded_documents_are_schema_valid_deterministic_and_verified(tmp_path: Path) -> None:
    root = _root(tmp_path)
    rec = record(FakeKafka({"primitives.encode_int64": {"bytes": "00"}}), "4.4.0", root)
    first = documents(rec)
    assert first == documents(record(FakeKafka({"primitives.encode_int64": {"bytes": "00"}}), "4.4.0", root))
    for rel, text in first.items():
        (root / rel).write_text(text, encoding="utf-8")
    checked, failures = verify(root)
    assert checked > 0 and failures == []


def test_a_deviation_mark_the_reference_now_agrees_with_fails_verification(tmp_path: Path) -> None:
    root = _root(tmp_path)
    rec = record(FakeKafka({"primitives.encode_int64": {"bytes": "00"}}), "4.4.0", root)
    text = documents(rec)["kafka-jvm/recorded_primitives.json"]
    document = json.loads(text)
    lying = next(c for c in document["cases"] if "deviation" in c)
    source = next(c for c in json.loads((root / "spec/primitives.json").read_text())["cases"]
                  if c["id"] == lying["deviation"]["from"])
    lying["output"] = source["output"]
    (root / "kafka-jvm/recorded_primitives.json").write_text(dumps_fixture(document), encoding="utf-8")
    _, failures = verify(root)
    assert [f.case_id for f in failures] == [lying["id"]]
    assert "reference agrees" in failures[0].detail


def test_a_kafka_case_without_provenance_is_refused_by_the_schema(tmp_path: Path) -> None:
    root = _root(tmp_path)
    document = json.loads((root / "kafka-jvm/varint.json").read_text())
    del document["cases"][0]["provenance"]
    (root / "kafka-jvm/varint.json").write_text(dumps_fixture(document), encoding="utf-8")
    _, failures = verify(root)
    assert failures and "provenance" in failures[0].detail


def test_answers_are_made_repeatable() -> None:
    answer = {"error": {"kafka_exception": "X", "message": "/tmp/abc"},
              "steps": [{"changed": ["a/LOG.old.1795777764744638", "a/000004.log"]}]}
    assert normalized(answer) == {"error": {"kafka_exception": "X"},
                                  "steps": [{"changed": ["a/LOG.old.<time>", "a/000004.log"]}]}


def test_versions_that_answer_differently_are_listed(tmp_path: Path) -> None:
    root = _root(tmp_path)
    older = record(FakeKafka({"primitives.encode_int64": {"bytes": "00"}}, missing=("primitives.compare",)), "4.3.1", root)
    newer = record(FakeKafka(), "4.4.0", root)
    diffs = version_differences(older, newer)
    changed = {i for i, _ in diffs}
    assert changed and all(i.split(".")[1] == "primitives" for i in changed)
    report = report_markdown(newer, [older])
    assert "## Kafka 4.3.1 against 4.4.0" in report and all(f"`{i}`" in report for i in changed)


# --- the committed recording ---------------------------------------------------------------------------


def _recorded() -> list[dict[str, Any]]:
    return [c for c in (*all_cases(), *deviating_cases()) if c["id"].startswith("kafka-jvm.recorded_")]


def test_the_committed_recording_comes_from_the_named_release_and_covers_the_kip_formats() -> None:
    cases = _recorded()
    assert {c["provenance"]["kafka_version"] for c in cases} == {RECORDED_VERSION}
    ops = {c["op"] for c in cases}
    # KIP-1035 (position), KIP-1271 (headers values) and the store-level scenarios are among the recorded.
    assert {"store.scenario", "position.serialize", "header_values.serialize"} <= ops
    vectors = [c for c in all_cases() if c["id"].startswith("kafka-jvm.") and c not in cases]
    assert vectors and all(c["provenance"]["source"] == "jvm-vectors" for c in vectors)


def test_every_committed_deviation_is_an_expected_failure_of_that_release() -> None:
    expected = ExpectedFailures.load(REPO / "testees" / "kafka-jvm" / f"expected-failures-{RECORDED_VERSION}.txt")
    deviations = deviating_cases()
    assert deviations
    for case in deviations:
        entry = expected.match(f"test_golden.py::test_golden[{case['deviation']['from']}]")
        assert entry is not None and case["deviation"]["reason"] == entry.reason, case["id"]


def test_the_recording_report_lists_every_committed_deviation() -> None:
    report = (fixtures_dir() / "kafka-jvm" / "RECORDING.md").read_text(encoding="utf-8")
    for case in deviating_cases():
        source = case["deviation"]["from"]
        backend = case["input"].get("backend") if case["id"].endswith((".memory", ".rocksdb")) else None
        label = f"{source} ({backend})" if backend else source
        assert f"`{label}`: {case['deviation']['reason']}" in report

    assert f"kstate fixtures record --impl kafka-jvm:{RECORDED_VERSION}" in report


def test_the_command_records_only_kafka_and_only_into_a_fixtures_directory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kstate.cli import main

    assert main(["fixtures", "record", "--impl", "reference", "--root", str(_root(tmp_path))]) == 2
    assert "kafka-jvm:VERSION" in capsys.readouterr().err
    assert main(["fixtures", "record", "--impl", "kafka-jvm:4.4.0", "--root", str(tmp_path / "nowhere")]) == 2
    assert "not a fixtures directory" in capsys.readouterr().err


def test_kafka_verdicts_check_passes_on_the_committed_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    from kstate.cli import main

    monkeypatch.chdir(REPO)
    assert main(["kafka-verdicts", "--check"]) == 0


def test_a_scenario_of_a_feature_the_testee_lacks_is_recorded_as_unsupported(tmp_path: Path) -> None:
    """A store scenario of HV-10 alone on a testee whose store.capabilities declares no lazy_headers is absent, as
    test_golden skips it: neither recorded nor a deviation (the reference, which has the feature, records it)."""
    root = tmp_path / "fixtures"
    for rel in ("fixture.schema.json", "spec/kv_store.json"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(fixtures_dir() / rel, root / rel)
    answer = ReferenceAdapter().call("store.capabilities", {})
    eager = FakeKafka(overrides={"store.capabilities": {**answer, "lazy_headers": False}})
    lazy_id = "spec.kv_store.headers_facade_lazy"
    outcomes = {o.source_id: o for o in record(eager, "4.4.0", root).outcomes}
    assert outcomes[lazy_id].status == "unsupported" and "lazy_headers" in outcomes[lazy_id].detail
    outcomes = {o.source_id: o for o in record(FakeKafka(), "4.4.0", root).outcomes}
    assert outcomes[lazy_id].status == "recorded"
