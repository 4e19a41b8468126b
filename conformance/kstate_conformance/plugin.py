"""The pytest plugin (entry point ``pytest11``): options, the ``codec`` fixture, hypothesis profiles.

``pytest --pyargs kstate_conformance.tests --kstate-impl module:factory`` runs the suite against an
implementation; without ``--kstate-impl`` (or ``KSTATE_IMPL``) the reference implementation is used.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from kstate_conformance.adapter import CodecAdapter, JsonDict, Unsupported, load_implementation

LEVEL_ORDER = {"required": 0, "recommended": 1, "tentative": 2}
PROFILES = {"quick": 15, "default": 60, "thorough": 1000}


class SkippingAdapter:
    """Wraps an adapter so that an unsupported operation skips the test, with the reason."""

    def __init__(self, inner: CodecAdapter) -> None:
        self.inner = inner
        self.name = inner.name

    def supports(self, op: str) -> bool:
        return self.inner.supports(op)

    def call(self, op: str, payload: JsonDict) -> JsonDict:
        try:
            return self.inner.call(op, payload)
        except Unsupported:
            pytest.skip(f"{self.name} does not support operation {op}")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kstate", "Kafka Streams state-store conformance")
    group.addoption("--kstate-impl", default=None,
                    help="implementation under test: reference, mutant:NAME or module:factory")
    group.addoption("--kstate-level", default="tentative", choices=sorted(LEVEL_ORDER),
                    help="run rules up to this level (required < recommended < tentative)")
    group.addoption("--kstate-profile", default=None, choices=sorted(PROFILES),
                    help="hypothesis effort: quick, default or thorough")
    group.addoption("--kstate-report", default=None,
                    help="directory for report.md, report.html and results.json")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "rules(*ids): the spec rules a conformance test checks")
    config.addinivalue_line("markers", "kstate_level(level): the conformance level of a test case")
    from hypothesis import HealthCheck, settings

    for name, examples in PROFILES.items():
        settings.register_profile(
            f"kstate-{name}", max_examples=examples, deadline=None, derandomize=name != "thorough",
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
    profile = config.getoption("--kstate-profile") or os.environ.get("KSTATE_PROFILE")
    if profile:
        settings.load_profile(f"kstate-{profile}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    limit = LEVEL_ORDER[config.getoption("--kstate-level")]
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        marker = item.get_closest_marker("kstate_level")
        level = marker.args[0] if marker else "required"
        (keep if LEVEL_ORDER.get(level, 0) <= limit else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


class _ReportCollector:
    """Records each conformance test's outcome with its rules and level, for the reports."""

    def __init__(self, config: pytest.Config) -> None:
        from kstate_conformance.report import RunReport

        self.config = config
        impl = config.getoption("--kstate-impl") or os.environ.get("KSTATE_IMPL") or "reference"
        self.report = RunReport(implementation=impl)
        self._meta: dict[str, tuple[list[str], str]] = {}

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            marker = item.get_closest_marker("rules")
            level = item.get_closest_marker("kstate_level")
            self._meta[item.nodeid] = (list(marker.args) if marker else [], level.args[0] if level else "required")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        from kstate_conformance.report import TestOutcome

        if report.nodeid not in self._meta:
            return
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            rules, level = self._meta[report.nodeid]
            detail = str(report.longrepr) if report.outcome != "passed" and report.longrepr else ""
            self.report.outcomes.append(TestOutcome(report.nodeid, report.outcome, rules, level, detail))

    def pytest_sessionfinish(self) -> None:
        from pathlib import Path

        from kstate_conformance.report import write_reports
        from kstate_conformance.spec_rules import load_rules

        titles = {r.id: (r.title, r.level) for r in load_rules().values()}
        write_reports(self.report, Path(self.config.getoption("--kstate-report")), titles)


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    if session.config.getoption("--kstate-report"):
        session.config.pluginmanager.register(_ReportCollector(session.config), "kstate-report-collector")


@pytest.fixture(scope="session")
def codec(request: pytest.FixtureRequest) -> Any:
    """The implementation under test, behind the adapter protocol."""
    spec = request.config.getoption("--kstate-impl") or os.environ.get("KSTATE_IMPL") or "reference"
    return SkippingAdapter(load_implementation(spec))
