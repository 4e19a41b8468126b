"""Project tests (not the shipped conformance suite): the reference's units and the kit's tooling."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from kstate.scratch import scratch_temp_dir

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_VECTORS = REPO_ROOT.parent / "shared" / "jvm-vectors" / "kafka-jvm-vectors.json"


def pytest_configure(config: pytest.Config) -> None:
    # The stores these tests open go to tmpfs where there is one (kstate.scratch), removed when pytest ends.
    scratch = contextlib.ExitStack()
    scratch.enter_context(scratch_temp_dir("tests"))
    config.add_cleanup(scratch.close)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def shared_vectors() -> Path:
    if not SHARED_VECTORS.exists():
        pytest.fail(f"the recorded Kafka vectors are missing: {SHARED_VECTORS} (shared/ must sit beside the repo)")
    return SHARED_VECTORS
