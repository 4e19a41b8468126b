"""System-test fixtures: one real broker per session (embedded Tansu by default)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from kstate.kafka.broker import Broker, start_broker


@pytest.fixture(scope="session")
def broker() -> Iterator[Broker]:
    """The broker under test: ``KSTATE_BOOTSTRAP``, else ``KSTATE_BROKER`` (tansu default)."""
    instance = start_broker()
    try:
        yield instance
    finally:
        instance.close()


@pytest.fixture
def topic_name() -> str:
    return f"kstate-{uuid.uuid4().hex[:12]}"
