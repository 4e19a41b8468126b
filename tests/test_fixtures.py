"""Golden fixtures: schema-valid, all pass against the reference, and regeneration changes no byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kstate.cli import main
from kstate.fixtures_tool import (
    FixtureError,
    jvm_fixture_documents,
    load_fixture_file,
    reference_fixture_documents,
    schema_validator,
    stale_documents,
)


def test_every_fixture_passes_its_schema_and_the_reference(repo_root: Path) -> None:
    assert main(["fixtures", "verify", "--root", str(repo_root / "fixtures")]) == 0


def test_regeneration_changes_no_byte(repo_root: Path, shared_vectors: Path) -> None:
    documents = reference_fixture_documents()
    documents.update(jvm_fixture_documents(shared_vectors))
    assert stale_documents(documents, repo_root / "fixtures") == []
    # fixtures/spec/ is written by hand from the rule text (evidence spec); no generator produces it.
    on_disk = {str(p.relative_to(repo_root / "fixtures")) for p in (repo_root / "fixtures").glob("*/*.json")
               if p.parent.name != "spec"}
    assert on_disk == set(documents), "fixture files exist that no generator produces"


def test_generation_is_deterministic() -> None:
    assert reference_fixture_documents() == reference_fixture_documents()


def test_every_recorded_vector_is_imported(repo_root: Path, shared_vectors: Path) -> None:
    total = json.loads(shared_vectors.read_text())["total_vectors"]
    imported = sum(len(json.loads(p.read_text())["cases"]) for p in (repo_root / "fixtures" / "kafka-jvm").glob("*.json"))
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
