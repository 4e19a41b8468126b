"""Where the kit's non-Python parts (Maven projects, scripts) are: in the checkout around its modules, else in the
checkout it is run from (an installed kit, a wheel in a tox env, has no tree around its modules)."""

from __future__ import annotations

from pathlib import Path


def checkout_path(relative: str | Path) -> Path:
    """``relative`` beside the kit's modules where it exists there, else in the working directory where it exists
    there, else beside the modules (a caller's error then names where it looked first)."""
    beside = Path(__file__).resolve().parents[2] / relative
    here = Path.cwd() / relative
    return beside if beside.exists() or not here.exists() else here
