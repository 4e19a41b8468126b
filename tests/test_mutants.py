"""The suite proves its worth: it fails on every deliberately broken implementation."""

from __future__ import annotations

from kstate_conformance.mutants import all_mutants
from kstate_conformance.mutation import run_all


def test_the_suite_kills_every_mutant() -> None:
    results = run_all(workers=2)
    survivors = [f"{r.name}: {r.description} ({r.first_failure})" for r in results if not r.killed]
    assert not survivors, "mutants the suite did not catch:\n" + "\n".join(survivors)
    assert len(results) == len(all_mutants()) >= 2


def test_the_reference_itself_passes_the_suite() -> None:
    # The control: the same harness on the unmutated reference must pass, or "killed" means nothing.
    import subprocess

    from kstate_conformance.mutation import _suite_command

    proc = subprocess.run(_suite_command("reference", []), capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:]
