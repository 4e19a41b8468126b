"""Fixtures the benchmark modules share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kstate.kafka.broker import TansuBroker


@pytest.fixture(scope="module")
def bench_broker() -> Iterator[TansuBroker]:
    """An embedded Tansu broker for one benchmark module, stopped when the module ends."""
    broker = TansuBroker.start()
    try:
        yield broker
    finally:
        broker.close()
