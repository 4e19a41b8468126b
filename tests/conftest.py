"""Project tests (not the shipped conformance suite): the reference's units and the kit's tooling."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from kstate.scratch import scratch_temp_dir

REPO_ROOT = Path(__file__).resolve().parents[1]
#: The raw vector file: $KSTATE_VECTORS (tox sets it), else the shared material beside the repository.
SHARED_VECTORS = Path(os.environ.get("KSTATE_VECTORS") or REPO_ROOT.parent / "shared" / "jvm-vectors" / "kafka-jvm-vectors.json")


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
    # A public clone has no shared material; what these tests read is imported in fixtures/kafka-jvm/, which
    # `kstate fixtures verify` and the suite replay.
    if not SHARED_VECTORS.exists():
        pytest.skip(f"the raw Kafka vector file is absent: {SHARED_VECTORS} (../shared is not beside this clone; "
                    "set KSTATE_VECTORS to run these tests)")
    return SHARED_VECTORS
