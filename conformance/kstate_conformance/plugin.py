"""The pytest plugin (entry point ``pytest11``): options, the ``codec`` fixture, hypothesis profiles,
expected-failure files, reports and progress.

``pytest --pyargs kstate_conformance.tests --kstate-impl module:factory`` runs the suite against an
implementation; without ``--kstate-impl`` (or ``KSTATE_IMPL``) the reference implementation is used.
``--kstate-impl "cmd:COMMAND"`` runs an out-of-process testee (spec/testee-protocol.md).
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from kstate_conformance.adapter import CodecAdapter, JsonDict, Unsupported, load_implementation
from kstate_conformance.expectations import ExpectedFailures, stable_test_id

LEVEL_ORDER = {"required": 0, "recommended": 1, "tentative": 2}
PROFILES = {"quick": 15, "default": 60, "thorough": 1000}
ADAPTER_KEY = pytest.StashKey[CodecAdapter]()
#: Parameter values that name a store type or a backend, when a test's parameters are not named so.
BACKENDS = ("rocksdb", "memory", "in_memory")
STORE_TYPES = ("kv", "timestamped_kv", "timestamped_kv_headers", "versioned_kv", "window", "timestamped_window",
               "session")


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
                    help="implementation under test: reference, mutant:NAME, cmd:COMMAND (a testee) or module:factory")
    group.addoption("--kstate-level", default="tentative", choices=sorted(LEVEL_ORDER),
                    help="run rules up to this level (required < recommended < tentative)")
    group.addoption("--kstate-profile", default=None, choices=sorted(PROFILES),
                    help="hypothesis effort: quick, default or thorough")
    group.addoption("--kstate-report", default=None,
                    help="directory for report.md, report.html and results.json")
    group.addoption("--kstate-testee-timeout", type=float, default=None,
                    help="seconds a testee has to answer one request (default 10, or KSTATE_TESTEE_TIMEOUT)")
    group.addoption("--kstate-testee-validate", action="store_true",
                    help="check every testee answer against spec/testee-protocol.schema.json")
    group.addoption("--kstate-expected-failures", default=None, metavar="FILE",
                    help="strict expected-failure list: listed failures are xfail, listed passes fail the run")
    group.addoption("--kstate-fix", action="store_true",
                    help="rewrite the expected-failure file with this run's actual failures")
    group.addoption("--kstate-progress", action="store_true",
                    help="show a progress display on stderr instead of pytest's per-test letters")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "rules(*ids): the spec rules a conformance test checks")
    config.addinivalue_line("markers", "kstate_level(level): the conformance level of a test case")
    from hypothesis import HealthCheck, settings

    for name, examples in PROFILES.items():
        settings.register_profile(
            f"kstate-{name}", max_examples=examples, deadline=None, derandomize=name != "thorough",
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
    # Without a choice the suite runs its own default profile (derandomized, no deadline), so that
    # verdicts are reproducible and a slow out-of-process testee is not failed for its latency.
    # (Only for runs of the suite: the plugin is also loaded, by entry point, in unrelated test runs.)
    profile = config.getoption("--kstate-profile") or os.environ.get("KSTATE_PROFILE")
    if profile or any("kstate_conformance" in str(arg) for arg in config.args):
        settings.load_profile(f"kstate-{profile or 'default'}")
    expected = config.getoption("--kstate-expected-failures")
    if expected:
        config.pluginmanager.register(_ExpectedFailurePlugin(config, Path(expected)), "kstate-expected-failures")
    elif config.getoption("--kstate-fix"):
        raise pytest.UsageError("--kstate-fix needs --kstate-expected-failures FILE")
    if config.getoption("--kstate-progress"):
        from kstate_conformance.progress import ProgressDisplay

        config.pluginmanager.register(ProgressDisplay(), "kstate-progress")


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


def implementation_spec(config: pytest.Config) -> str:
    return str(config.getoption("--kstate-impl") or os.environ.get("KSTATE_IMPL") or "reference")


def item_dimensions(item: pytest.Item) -> tuple[str, str]:
    """The store type and backend a test runs on, from its parameters ('' where it has none)."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return "", ""
    params = callspec.params
    store_type = str(params["store_type"]) if isinstance(params.get("store_type"), str) else ""
    backend = str(params["backend"]) if isinstance(params.get("backend"), str) else ""
    tokens = str(callspec.id).split("-")
    store_type = store_type or next((t for t in tokens if t in STORE_TYPES), "")
    backend = backend or next((t for t in tokens if t in BACKENDS), "")
    return store_type, backend


def positional_ids(items: list[pytest.Item]) -> list[str]:
    """Parametrized tests whose id is a list position (``argname3``), not data: unstable when cases move."""
    found: list[str] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None:
            continue
        for part in str(callspec.id).split("-"):
            if any(part.startswith(name) and part[len(name):].isdigit() and part != name
                   for name in callspec.params):
                found.append(item.nodeid)
                break
    return found


# --- the implementation under test ------------------------------------------------------------------------


@pytest.fixture(scope="session")
def codec(request: pytest.FixtureRequest) -> Any:
    """The implementation under test, behind the adapter protocol."""
    config = request.config
    timeout = config.getoption("--kstate-testee-timeout")
    if timeout is None and os.environ.get("KSTATE_TESTEE_TIMEOUT"):
        timeout = float(os.environ["KSTATE_TESTEE_TIMEOUT"])
    adapter = load_implementation(implementation_spec(config), timeout=timeout,
                                  validate=bool(config.getoption("--kstate-testee-validate")))
    config.stash[ADAPTER_KEY] = adapter
    close = getattr(adapter, "close", None)
    if callable(close):
        request.addfinalizer(close)
    return SkippingAdapter(adapter)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # An out-of-process testee that failed in the previous test is restarted for this one.
    adapter = item.config.stash.get(ADAPTER_KEY, None)
    begin_test = getattr(adapter, "begin_test", None)
    if callable(begin_test):
        begin_test(item.nodeid)


# --- expected failures (strict) ------------------------------------------------------------------------------


class _ExpectedFailurePlugin:
    """Listed failures become xfail; a listed test that passes fails the run; ``--kstate-fix`` rewrites."""

    def __init__(self, config: pytest.Config, path: Path) -> None:
        self.config = config
        self.expectations = ExpectedFailures.load(path)
        self.fix = bool(config.getoption("--kstate-fix"))
        self.ran: set[str] = set()
        self.failed: set[str] = set()
        self.unexpected_passes: list[str] = []
        self.collected: set[str] = set()

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.collected = {stable_test_id(item.nodeid) for item in session.items}

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
        report: pytest.TestReport = yield
        test_id = stable_test_id(item.nodeid)
        if (report.when == "call" and not report.skipped) or report.failed:
            self.ran.add(test_id)
        if report.failed:
            self.failed.add(test_id)
        entry = self.expectations.match(test_id)
        if entry is None:
            return report
        where = f"{self.expectations.path}" + (f" ({entry.reason})" if entry.reason else "")
        if report.failed and report.when in ("setup", "call"):
            report.outcome = "skipped"
            report.wasxfail = f"expected failure, listed in {where}"
        elif report.when == "call" and report.passed:
            self.unexpected_passes.append(test_id)
            report.outcome = "failed"
            report.longrepr = (f"[unexpected pass] {test_id} is listed as an expected failure in {where} but passed; "
                               "remove it from the list (or rerun with --fix)")
        return report

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        stale = self.expectations.unmatched(self.collected)
        if self.unexpected_passes:
            terminalreporter.write_sep("=", f"{len(self.unexpected_passes)} expected failures passed", red=True)
            for test_id in self.unexpected_passes:
                terminalreporter.write_line(f"UNEXPECTED PASS {test_id}")
        if stale:
            terminalreporter.write_sep("-", f"{len(stale)} expected-failure entries match no test of this run")
            for entry in stale:
                terminalreporter.write_line(f"  {entry.pattern}")
        if self.fix:
            before = {e.pattern for e in self.expectations.entries}
            fixed = self.expectations.fixed(self.failed, self.ran)
            after = {e.pattern for e in fixed.entries}
            fixed.write()
            terminalreporter.write_line(f"rewrote {fixed.path}: {len(after - before)} added, "
                                        f"{len(before - after)} removed, {len(after)} entries")
        elif self.unexpected_passes or (self.failed - self.listed_failures()):
            terminalreporter.write_line(f"to update the list: rerun with --kstate-fix "
                                        f"(kstate conformance --expected-failures {self.expectations.path} --fix)")

    def listed_failures(self) -> set[str]:
        return {t for t in self.failed if self.expectations.match(t)}


# --- reports -------------------------------------------------------------------------------------------------


class _ReportCollector:
    """Records each conformance test's outcome with its rules, level, store type and backend, for the reports."""

    def __init__(self, config: pytest.Config) -> None:
        from kstate_conformance.report import RunReport

        self.config = config
        self.report = RunReport(implementation=implementation_spec(config))
        self._meta: dict[str, tuple[list[str], str, str, str]] = {}
        self._outcomes: dict[str, Any] = {}

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            marker = item.get_closest_marker("rules")
            level = item.get_closest_marker("kstate_level")
            store_type, backend = item_dimensions(item)
            self._meta[item.nodeid] = (list(marker.args) if marker else [], level.args[0] if level else "required",
                                       store_type, backend)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        from kstate_conformance.report import TestOutcome, minimal_example

        if report.nodeid not in self._meta:
            return
        wasxfail = hasattr(report, "wasxfail")
        if report.when == "call" or (report.when == "setup" and not report.passed) or report.failed:
            outcome = "xfailed" if report.skipped and wasxfail else report.outcome
            detail = str(report.longrepr) if outcome in ("failed", "skipped", "xfailed") and report.longrepr else ""
            if report.skipped and isinstance(report.longrepr, tuple):
                detail = str(report.longrepr[2])
            existing = self._outcomes.get(report.nodeid)
            if existing is not None and report.when == "teardown":
                existing.outcome = "failed"
                existing.detail = (existing.detail + "\n--- teardown ---\n" + detail).strip()
                return
            rules, level, store_type, backend = self._meta[report.nodeid]
            outcome_record = TestOutcome(
                report.nodeid, outcome, rules, level, detail, test_id=stable_test_id(report.nodeid),
                store_type=store_type, backend=backend, expected_failure=wasxfail,
                example=minimal_example(detail) if outcome in ("failed", "xfailed") else "",
                seconds=round(report.duration, 4),
            )
            self._outcomes[report.nodeid] = outcome_record
            self.report.outcomes.append(outcome_record)

    def pytest_sessionfinish(self) -> None:
        from kstate_conformance.report import write_reports
        from kstate_conformance.spec_rules import load_rules

        titles = {r.id: (r.title, r.level) for r in load_rules().values()}
        expected = self.config.getoption("--kstate-expected-failures")
        self.report.expected_failures_file = str(expected or "")
        write_reports(self.report, Path(self.config.getoption("--kstate-report")), titles)


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    if session.config.getoption("--kstate-report"):
        session.config.pluginmanager.register(_ReportCollector(session.config), "kstate-report-collector")
