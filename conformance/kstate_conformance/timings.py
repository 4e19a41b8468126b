"""Where a suite run's time goes: each phase, the ten slowest tests and the CPU time of the process tree, printed
at the end of the run."""

from __future__ import annotations

import resource
import time
from collections import defaultdict

import pytest

from kstate_conformance.expectations import stable_test_id

#: How many of the slowest tests a run names.
SLOWEST = 10


def process_tree_cpu_seconds() -> tuple[float, float]:
    """(this process, its children waited for) user + system CPU seconds so far (issue 35: the CPU of the run,
    testee processes and mutation workers included once they have ended)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def cpu_line() -> str:
    """The run's CPU time as the timing summary prints it."""
    own, children = process_tree_cpu_seconds()
    return f"CPU time of the process tree: {own + children:.1f} s (this process {own:.1f} s, its ended children " \
           f"{children:.1f} s)"


class SuiteTimings:
    """Times collection and the test run, and each test's setup, call and teardown added up."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.collected_at: float | None = None
        self.finished_at: float | None = None
        self.per_test: dict[str, float] = defaultdict(float)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.collected_at = time.monotonic()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.per_test[report.nodeid] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.finished_at = time.monotonic()

    def phases(self) -> list[tuple[str, float]]:
        """(phase, seconds): start-up and collection, the tests, what came after them (reports)."""
        now = time.monotonic()
        collected = self.collected_at or now
        finished = self.finished_at or now
        return [("start-up and collection", collected - self.started), ("tests", finished - collected),
                ("reports and summary", now - finished)]

    def slowest(self, count: int = SLOWEST) -> list[tuple[str, float]]:
        return sorted(self.per_test.items(), key=lambda item: -item[1])[:count]

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.per_test:
            return
        write = terminalreporter.write_line
        write("time by phase: " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in self.phases()))
        write(f"the {min(SLOWEST, len(self.per_test))} slowest tests (setup, call and teardown):")
        for nodeid, seconds in self.slowest():
            write(f"  {seconds:6.2f} s  {stable_test_id(nodeid)}")
        write(cpu_line())
