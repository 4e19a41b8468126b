"""How to point pytest at the shipped suite, whether or not the plugin's entry point is installed."""

from __future__ import annotations

from importlib.metadata import entry_points


def plugin_args() -> list[str]:
    """``-p kstate_conformance.plugin`` unless the ``pytest11`` entry point already loads it."""
    installed = any(ep.value.startswith("kstate_conformance.plugin") for ep in entry_points(group="pytest11"))
    return [] if installed else ["-p", "kstate_conformance.plugin"]


def suite_args(modules: tuple[str, ...] = ()) -> list[str]:
    """The arguments that select the shipped conformance tests: all of them, or only the named modules
    (``test_primitives_properties``), which skips collecting the rest."""
    packages = [f"kstate_conformance.tests.{m}" for m in modules] or ["kstate_conformance.tests"]
    return [*plugin_args(), "--pyargs", *packages, "-p", "no:cacheprovider"]
