"""``--kstate-progress``: the running test and ticking clocks, live on a terminal, heartbeat lines elsewhere."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

import pytest

from kstate_conformance.progress import ProgressDisplay, short_test_name

SLOW_SUITE = textwrap.dedent("""
    import time

    def test_quick():
        pass

    def test_slow_one():
        time.sleep(1.2)
""")


def _run(tmp_path: Path, display: ProgressDisplay, monkeypatch: pytest.MonkeyPatch) -> int:
    (tmp_path / "test_slow_suite.py").write_text(SLOW_SUITE)
    # A fresh module each run: pytest would refuse a second test_slow_suite from another directory.
    monkeypatch.delitem(__import__("sys").modules, "test_slow_suite", raising=False)
    return int(pytest.main([str(tmp_path / "test_slow_suite.py"), "-q", "-p", "no:cacheprovider"], plugins=[display]))


def test_short_names_keep_module_test_and_parameters() -> None:
    assert short_test_name("conformance/x/tests/test_kv.py::test_put[rocksdb-kv]") == "test_kv::test_put[rocksdb-kv]"
    assert short_test_name("a/test_m.py::" + "t" * 100, width=20).endswith("…")


def test_the_status_line_names_the_running_test_and_its_clock() -> None:
    display = ProgressDisplay(stream=io.StringIO(), live=False)
    display.total, display.done, display.running = 10, 3, "test_kv::test_put[kv]"
    display.run_started, display.test_started = 100.0, 160.0
    display.counts.update(passed=3)
    assert display.status_line(now=205.0) == "[1:45] 3/10 running test_kv::test_put[kv] for 0:45 (3 passed)"


def test_outside_a_terminal_a_heartbeat_names_the_test_that_is_running(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    assert _run(tmp_path, ProgressDisplay(stream=stream, live=False, heartbeat=0.4), monkeypatch) == 0
    beats = stream.getvalue().splitlines()
    assert beats, "no heartbeat while a test ran for over a second"
    assert all("running test_slow_suite::test_slow_one for 0:0" in line for line in beats), beats


def test_on_a_terminal_the_display_shows_the_running_test_and_its_clock(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    assert _run(tmp_path, ProgressDisplay(stream=stream, live=True, width=140), monkeypatch) == 0
    shown = stream.getvalue()
    assert "test_slow_suite::test_slow_one" in shown and "this test 0:01" in shown
