"""Golden fixtures: schema-valid, all pass against the reference, and regeneration changes no byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kstate.cli import main
from kstate.fixtures_tool import (
    HAND_WRITTEN_DIRS,
    FixtureError,
    jvm_fixture_documents,
    load_fixture_file,
    reference_fixture_documents,
    schema_validator,
    stale_documents,
)
from kstate_conformance.kafka_jvm.recording import RECORDED_PREFIX


def test_every_fixture_passes_its_schema_and_the_reference(repo_root: Path) -> None:
    assert main(["fixtures", "verify", "--root", str(repo_root / "fixtures")]) == 0


def test_regeneration_changes_no_byte(repo_root: Path, shared_vectors: Path) -> None:
    documents = reference_fixture_documents()
    documents.update(jvm_fixture_documents(shared_vectors))
    assert stale_documents(documents, repo_root / "fixtures") == []
    # The recorded files come from Kafka through ``kstate fixtures record`` (checked by tox -e kafka-jvm-record).
    on_disk = {str(p.relative_to(repo_root / "fixtures")) for p in (repo_root / "fixtures").glob("*/*.json")
               if p.parent.name not in HAND_WRITTEN_DIRS and not p.name.startswith(RECORDED_PREFIX)}
    assert on_disk == set(documents), "fixture files exist that no generator produces"
    assert not any(rel.split("/", 1)[0] in HAND_WRITTEN_DIRS for rel in documents), "a generator writes spec/"


def _spec_case(**overrides: object) -> dict[str, object]:
    case: dict[str, object] = {
        "id": "spec.primitives.int32_one", "op": "primitives.encode_int32", "rules": ["PRIM-1"],
        "level": "required", "evidence": "spec", "input": {"value": 1}, "output": {"bytes": "00000001"},
        "note": "PRIM-1: four bytes, big-endian",
    }
    case.update(overrides)
    return case


def _spec_file(root: Path, *cases: dict[str, object]) -> Path:
    path = root / "spec" / "primitives.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"fixture_format": 1, "evidence": "spec", "family": "primitives",
                                "description": "hand-derived", "cases": list(cases)}))
    return path


def test_generate_leaves_hand_written_files_alone(repo_root: Path, tmp_path: Path, shared_vectors: Path) -> None:
    root = tmp_path / "fixtures"
    root.mkdir()
    (root / "fixture.schema.json").write_text((repo_root / "fixtures" / "fixture.schema.json").read_text())
    spec_file = _spec_file(root, _spec_case())
    before = spec_file.read_bytes()
    assert main(["fixtures", "generate", "--root", str(root), "--vectors", str(shared_vectors)]) == 0
    assert spec_file.read_bytes() == before
    assert main(["fixtures", "generate", "--root", str(root), "--vectors", str(shared_vectors), "--check"]) == 0
    assert main(["fixtures", "verify", "--root", str(root)]) == 0


@pytest.mark.parametrize("bad", [
    {"output": {"bytes": "01000000"}},  # a wrong hand derivation is replayed and reported
    {"evidence": "reference"},  # a spec file's case claiming another evidence
    {"id": "reference.primitives.int32_one"},
])
def test_verify_replays_and_checks_hand_written_cases(repo_root: Path, tmp_path: Path, bad: dict[str, object]) -> None:
    root = tmp_path / "fixtures"
    root.mkdir()
    (root / "fixture.schema.json").write_text((repo_root / "fixtures" / "fixture.schema.json").read_text())
    _spec_file(root, _spec_case(**bad))
    assert main(["fixtures", "verify", "--root", str(root)]) == 1


def test_generation_is_deterministic() -> None:
    assert reference_fixture_documents() == reference_fixture_documents()


def test_every_recorded_vector_is_imported(repo_root: Path, shared_vectors: Path) -> None:
    total = json.loads(shared_vectors.read_text())["total_vectors"]
    # The recorded_*.json files are Kafka's answers to the spec and reference inputs, not imported vectors.
    imported = sum(len(json.loads(p.read_text())["cases"]) for p in (repo_root / "fixtures" / "kafka-jvm").glob("*.json")
                   if not p.name.startswith("recorded_"))
    assert imported == total


def test_generate_check_reports_a_changed_byte(repo_root: Path, tmp_path: Path, shared_vectors: Path) -> None:
    root = tmp_path / "fixtures"
    root.mkdir()
    (root / "fixture.schema.json").write_text((repo_root / "fixtures" / "fixture.schema.json").read_text())
    assert main(["fixtures", "generate", "--root", str(root), "--vectors", str(shared_vectors)]) == 0
    assert main(["fixtures", "generate", "--root", str(root), "--vectors", str(shared_vectors), "--check"]) == 0
    victim = next(root.glob("reference/*.json"))
    victim.write_text(victim.read_text().replace('"required"', '"tentative"', 1))
    assert main(["fixtures", "generate", "--root", str(root), "--vectors", str(shared_vectors), "--check"]) == 1


def test_schema_refuses_a_case_without_rules(repo_root: Path, tmp_path: Path) -> None:
    document = json.loads(next((repo_root / "fixtures" / "reference").glob("*.json")).read_text())
    del document["cases"][0]["rules"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(document))
    with pytest.raises(FixtureError, match="rules"):
        load_fixture_file(bad, schema_validator(repo_root / "fixtures"))


def test_verify_reports_a_wrong_expected_output(repo_root: Path, tmp_path: Path) -> None:
    root = tmp_path / "fixtures"
    (root / "reference").mkdir(parents=True)
    (root / "fixture.schema.json").write_text((repo_root / "fixtures" / "fixture.schema.json").read_text())
    document = json.loads((repo_root / "fixtures" / "reference" / "primitives.json").read_text())
    document["cases"] = [dict(document["cases"][0], output={"segment_id": 12345})]
    (root / "reference" / "primitives.json").write_text(json.dumps(document))
    assert main(["fixtures", "verify", "--root", str(root)]) == 1


def test_verify_keeps_store_log_lines_out_of_its_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    import logging

    import kstate.fixtures_tool

    def verify(root: Path, progress: object = None) -> tuple[int, list[object]]:
        logging.getLogger("kstate.stores").warning("Skipping record for expired put.")
        return 1, []

    monkeypatch.setattr(kstate.fixtures_tool, "verify", verify)
    log = tmp_path / "store.log"
    assert main(["fixtures", "verify", "--log", str(log)]) == 0
    captured = capsys.readouterr()
    assert "Skipping record" not in captured.out + captured.err
    assert f"1 store log lines (what Kafka logs too for the inputs the cases feed) written to {log}" in captured.out
    assert "WARNING kstate.stores: Skipping record for expired put." in log.read_text()
    assert main(["fixtures", "verify"]) == 0
    assert "Skipping record" not in capsys.readouterr().err


def test_a_scenario_case_declares_what_it_requires_and_generate_fills_it(repo_root: Path, tmp_path: Path) -> None:
    """A store scenario's ``requires`` (store type, backend, features) is checked against its input by ``verify``
    and filled by ``generate`` in a hand-written file, its other bytes kept."""
    root = tmp_path / "fixtures"
    (root / "spec").mkdir(parents=True)
    (root / "fixture.schema.json").write_text((repo_root / "fixtures" / "fixture.schema.json").read_text())
    scenario = {"store_type": "kv", "backend": "memory", "open_input": {"caching": True},
                "steps": [{"op": "store.put", "input": {"key": "01", "value": "0a"}},
                          {"op": "store.get", "input": {"key": "01"}}]}
    case = {"id": "spec.kv_store.cached_put", "op": "store.scenario", "rules": ["CACHE-1"], "level": "required",
            "evidence": "spec", "input": scenario, "output": {"open": {}, "steps": [{}, {"value": "0a"}]}}
    path = root / "spec" / "kv_store.json"
    path.write_text('{\n "cases": [\n' + json.dumps(case, sort_keys=True) + '\n ],\n "description": "d",\n'
                    ' "evidence": "spec",\n "family": "kv_store",\n "fixture_format": 1\n}\n')
    assert main(["fixtures", "verify", "--root", str(root)]) == 1  # requires missing
    assert main(["fixtures", "generate", "--root", str(root)]) == 0
    written = json.loads(path.read_text())["cases"][0]
    assert written["requires"] == {"store_type": "kv", "backend": "memory", "features": ["caching"]}
    assert {k: v for k, v in written.items() if k != "requires"} == case
    assert main(["fixtures", "verify", "--root", str(root)]) == 0


@pytest.mark.parametrize(("also", "exit_code"), [
    ([{"output": {"bytes": "00000001"}, "why": "the reference's answer, accepted too"}], 0),
    ([{"output": {"bytes": "00000002"}, "why": "another answer"}], 1),
])
def test_verify_accepts_an_output_the_case_also_accepts(repo_root: Path, tmp_path: Path, also: list[object],
                                                        exit_code: int) -> None:
    """OPS-4: a case whose ``output`` is another accepted answer (Kafka's recorded one) matches the reference's
    answer when one of its ``also_accepted`` outputs is that answer; none matching is still a failure."""
    root = tmp_path / "fixtures"
    root.mkdir()
    (root / "fixture.schema.json").write_text((repo_root / "fixtures" / "fixture.schema.json").read_text())
    _spec_file(root, _spec_case(output={"bytes": "01000000"}, also_accepted=also))
    assert main(["fixtures", "verify", "--root", str(root)]) == exit_code
