"""A clean run has no warnings of the kit's own making (issue 14): pytest's assertion rewriting."""

from __future__ import annotations

import pytest
from _pytest.assertion.rewrite import AssertionRewritingHook


def test_marking_the_installed_packages_for_rewrite_after_import_does_not_warn(
        pytestconfig: pytest.Config, monkeypatch: pytest.MonkeyPatch) -> None:
    # What pytest does for an installed pytest11 plugin: mark its distribution's top-level packages, which
    # ``kstate conformance`` has imported already; a package that is not opted out is warned about.
    import kstate  # noqa: F401
    import kstate_conformance  # noqa: F401

    hook = AssertionRewritingHook(pytestconfig)
    warned: list[str] = []
    monkeypatch.setattr(hook, "_warn_already_imported", warned.append)
    hook.mark_rewrite("kstate", "kstate_conformance")
    assert warned == []
