"""Run the shipped conformance suite in a child process, as a third party would, and read its results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kstate_conformance.pytest_args import suite_args

REPO_ROOT = Path(__file__).resolve().parents[1]


@dataclass
class SuiteRun:
    returncode: int
    stdout: str
    report_dir: Path

    @property
    def outcomes(self) -> list[dict[str, Any]]:
        data: list[dict[str, Any]] = json.loads((self.report_dir / "results.json").read_text())["outcomes"]
        return data

    def by_outcome(self, outcome: str) -> list[dict[str, Any]]:
        return [o for o in self.outcomes if o["outcome"] == outcome]

    def verdicts(self) -> tuple[dict[str, str], Any]:
        """The run's per-rule verdicts and its report (a ``report.RunReport``), read back from its results."""
        from kstate_conformance.kafka_jvm.verdicts import report_from_results

        report = report_from_results(self.report_dir / "results.json")
        return report.rule_verdicts(), report


def module_dir(factory: Any, name: str, source: str) -> Path:
    """A fresh directory (``factory``: pytest's tmp_path_factory) holding ``<name>.py`` with ``source``, for a child
    run to import an implementation from (:func:`child_env`)."""
    directory: Path = factory.mktemp(name)
    (directory / f"{name}.py").write_text(source, encoding="utf-8")
    return directory


def suite_command(impl: str, report_dir: Path, *extra: str, modules: tuple[str, ...] = ()) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "--no-header", "-rfE", *suite_args(modules), "--kstate-impl", impl,
            f"--kstate-report={report_dir}", *extra]


def child_env(*extra_paths: Path) -> dict[str, str]:
    paths = [str(p) for p in extra_paths] + [str(REPO_ROOT / "reference_impl"), str(REPO_ROOT / "conformance")]
    existing = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths + ([existing] if existing else [])),
            "PYTHONDONTWRITEBYTECODE": "1"}


def start_suite(impl: str, report_dir: Path, *extra: str, env: dict[str, str] | None = None,
                modules: tuple[str, ...] = ()) -> subprocess.Popen[str]:
    return subprocess.Popen(suite_command(impl, report_dir, *extra, modules=modules), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env or child_env(), cwd=REPO_ROOT)


def finish(proc: subprocess.Popen[str], report_dir: Path, timeout: float = 900) -> SuiteRun:
    stdout, _ = proc.communicate(timeout=timeout)
    return SuiteRun(proc.returncode, stdout, report_dir)


def run_suite(impl: str, report_dir: Path, *extra: str, env: dict[str, str] | None = None,
              timeout: float = 900, modules: tuple[str, ...] = ()) -> SuiteRun:
    """The suite (or only ``modules`` of it) on ``impl`` in a child process, its report in ``report_dir``."""
    return finish(start_suite(impl, report_dir, *extra, env=env, modules=modules), report_dir, timeout)
