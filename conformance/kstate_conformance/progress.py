"""Progress that tells the truth while the suite runs (``--kstate-progress``): the test running now, how long
it has been running, and the run's own clock, both ticking; outside a terminal, a heartbeat line instead."""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from collections.abc import Generator
from typing import Any, TextIO

import pytest

#: Outside a terminal, one line at most this often while a test runs (CI logs stay short but alive).
HEARTBEAT_SECONDS = 30.0


def short_test_name(nodeid: str, width: int = 60) -> str:
    """``tests/test_kv_contract.py::test_put[rocksdb-kv]`` as ``test_kv_contract::test_put[rocksdb-kv]``."""
    path, _, rest = nodeid.partition("::")
    module = path.rsplit("/", 1)[-1].removesuffix(".py")
    name = f"{module}::{rest}" if rest else module
    return name if len(name) <= width else name[: width - 1] + "…"


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}:{secs:02d}"


class ProgressDisplay:
    """A pytest plugin: a live rich display on a terminal, heartbeat lines elsewhere; per-test letters silenced."""

    def __init__(self, stream: TextIO | None = None, live: bool | None = None,
                 heartbeat: float = HEARTBEAT_SECONDS, width: int | None = None) -> None:
        from rich.console import Console

        self.stream = stream or sys.stderr
        self.console = Console(file=self.stream, force_terminal=live, width=width)
        self.live = self.console.is_terminal if live is None else live
        self.heartbeat = heartbeat
        self.counts: Counter[str] = Counter()
        self.total = 0
        self.done = 0
        self.running = ""
        self.run_started = self.test_started = time.monotonic()
        self.active = False
        self.progress: Any = None
        self.task: Any = None
        self._stop = threading.Event()
        self._beater: threading.Thread | None = None

    # --- what is shown ---------------------------------------------------------------------------------------

    def counts_text(self) -> str:
        return ", ".join(f"{n} {k}" for k, n in sorted(self.counts.items()))

    def status_line(self, now: float | None = None) -> str:
        """The heartbeat: ``[12:04] 2301/6005 running test_x::test_y[...] for 0:41 (2290 passed, 11 skipped)``."""
        now = time.monotonic() if now is None else now
        line = (f"[{_clock(now - self.run_started)}] {self.done}/{self.total} running {self.running or '-'} "
                f"for {_clock(now - self.test_started)}")
        counts = self.counts_text()
        return f"{line} ({counts})" if counts else line

    def _start_live(self) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
        from rich.text import Text

        display = self

        class TestClock(ProgressColumn):
            """How long the running test has run, re-rendered on every refresh so that it ticks."""

            def render(self, task: Any) -> Text:
                return Text(f"this test {_clock(time.monotonic() - display.test_started)}", style="cyan")

        self.progress = Progress(TextColumn("{task.description}"), BarColumn(bar_width=20), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TestClock(), TextColumn("{task.fields[counts]}"),
                                 console=self.console, transient=True, refresh_per_second=4)
        self.task = self.progress.add_task("collecting", total=self.total, counts="")
        self.progress.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat):
            print(self.status_line(), file=self.stream, flush=True)

    # --- pytest hooks ----------------------------------------------------------------------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.total = len(session.items)
        self.run_started = self.test_started = time.monotonic()
        if self.live:
            self._start_live()
        elif self.heartbeat > 0:
            self._beater = threading.Thread(target=self._beat, name="kstate-heartbeat", daemon=True)
            self._beater.start()
        self.active = True

    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        self.running = short_test_name(nodeid)
        self.test_started = time.monotonic()
        if self.active and self.progress is not None:
            # The other columns take about 75 characters; the name gets the rest, so that the line never wraps.
            self.progress.update(self.task, description=short_test_name(nodeid, max(20, self.console.width - 75)))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self.counts["xfailed" if hasattr(report, "wasxfail") and report.skipped else report.outcome] += 1
        if report.when == "teardown":
            self.done += 1
            if self.active and self.progress is not None:
                self.progress.update(self.task, advance=1, counts=self.counts_text())

    @pytest.hookimpl(wrapper=True)
    def pytest_report_teststatus(self, report: pytest.TestReport, config: pytest.Config) -> Generator[None, Any, Any]:
        result = yield
        if self.active and self.live and isinstance(result, tuple) and len(result) == 3:
            return (result[0], "", result[2])
        return result

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, Any, Any]:
        try:
            return (yield)
        finally:
            self.stop()

    def stop(self) -> None:
        self._stop.set()
        if self._beater is not None:
            self._beater.join(timeout=1)
            self._beater = None
        if self.progress is not None:
            self.progress.stop()
            self.progress = None
        self.active = False
