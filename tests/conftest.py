"""Project tests (not the shipped conformance suite): the reference's units and the kit's tooling."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_VECTORS = REPO_ROOT.parent / "shared" / "jvm-vectors" / "kafka-jvm-vectors.json"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def shared_vectors() -> Path:
    if not SHARED_VECTORS.exists():
        pytest.fail(f"the recorded Kafka vectors are missing: {SHARED_VECTORS} (shared/ must sit beside the repo)")
    return SHARED_VECTORS
