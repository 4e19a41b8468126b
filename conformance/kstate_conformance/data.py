"""Where the shipped fixtures and spec live: inside the wheel, or in a source checkout."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_REPO = _PACKAGE.parent.parent


def _locate(name: str) -> Path:
    shipped = _PACKAGE / "_data" / name
    if shipped.is_dir():
        return shipped
    checkout = _REPO / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"cannot find the {name}/ directory (looked in {shipped} and {checkout})")


def fixtures_dir() -> Path:
    return _locate("fixtures")


def spec_dir() -> Path:
    return _locate("spec")
