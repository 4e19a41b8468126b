"""A pytest plugin for a collection-only run of the suite (``-p applied_entries_probe``): once the kstate plugin has
selected the tests of ``--kstate-level`` and collected their ids, writes which entries of each expected-failure file
in ``$KSTATE_PROBE_FILES`` (``os.pathsep``-separated) that run applies, by the plugin's own matching
(``ExpectedFailures.applied`` over the expected-failure plugin's ``collected``), as JSON to ``$KSTATE_PROBE_OUT``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kstate_conformance.expectations import ExpectedFailures


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    # trylast: after the expected-failure plugin's own pytest_collection_finish has recorded the run's test ids.
    plugin = session.config.pluginmanager.get_plugin("kstate-expected-failures")
    assert plugin is not None, "run with --kstate-expected-failures"
    files = [Path(p) for p in os.environ["KSTATE_PROBE_FILES"].split(os.pathsep)]
    out = {"collected": len(plugin.collected), "level": session.config.getoption("--kstate-level"),
           "applied": {str(path): [[e.pattern, e.tag] for e in ExpectedFailures.load(path).applied(plugin.collected)]
                       for path in files},
           "plugin": [[e.pattern, e.tag] for e in plugin.applied_entries()]}
    Path(os.environ["KSTATE_PROBE_OUT"]).write_text(json.dumps(out), encoding="utf-8")
