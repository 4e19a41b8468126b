"""The suite proves its worth: it fails on every deliberately broken implementation."""

from __future__ import annotations

import sys

import pytest

from kstate_conformance.mutants import all_mutants
from kstate_conformance.mutation import MutantResult, describe_result, run_all


def _announce(config: pytest.Config) -> object:
    """A callback printing each mutant as it is decided, past pytest's output capture (issue 14)."""
    capture = config.pluginmanager.getplugin("capturemanager")
    reporter = config.pluginmanager.getplugin("terminalreporter")

    def announce(result: MutantResult) -> None:
        line = describe_result(result)
        if capture is not None and reporter is not None:
            with capture.global_and_fixture_disabled():
                reporter.write_line(line)
                reporter.flush()
        else:
            sys.__stderr__.write(line + "\n")
            sys.__stderr__.flush()

    return announce


def test_the_suite_kills_every_mutant(pytestconfig: pytest.Config) -> None:
    results = run_all(workers=2, on_result=_announce(pytestconfig))  # type: ignore[arg-type]
    survivors = [f"{r.name}: {r.description} ({r.first_failure})" for r in results if not r.killed]
    assert not survivors, "mutants the suite did not catch:\n" + "\n".join(survivors)
    assert len(results) == len(all_mutants()) >= 2


def test_the_reference_itself_passes_the_suite() -> None:
    # The control: the same harness on the unmutated reference must pass, or "killed" means nothing.
    import subprocess

    from kstate_conformance.mutation import _suite_command

    proc = subprocess.run(_suite_command("reference", []), capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:]
