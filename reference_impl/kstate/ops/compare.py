"""Comparison of an expected operation output with an actual one (spec/ops.md, OPS-4).

An expected ``{"error": ...}`` matches any actual error: the error's details are informative,
only the fact of refusal is normative. Every other field must be equal.
"""

from __future__ import annotations

from typing import Any

ERROR_KEY = "error"


def is_error(value: Any) -> bool:
    return isinstance(value, dict) and ERROR_KEY in value


def differences(expected: Any, actual: Any, path: str = "$") -> list[str]:
    """Every place where ``actual`` departs from ``expected``, as ``path: reason`` strings."""
    if isinstance(expected, dict) and ERROR_KEY in expected:
        if not is_error(actual):
            return [f"{path}: expected an error, got {_short(actual)}"]
        rest_expected = {k: v for k, v in expected.items() if k != ERROR_KEY}
        rest_actual = {k: v for k, v in actual.items() if k != ERROR_KEY and k in rest_expected}
        return differences(rest_expected, rest_actual, path) if rest_expected else []
    if is_error(actual):
        return [f"{path}: expected {_short(expected)}, got error {actual[ERROR_KEY]}"]
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: expected an object, got {_short(actual)}"]
        out: list[str] = []
        for key in expected:
            if key not in actual:
                out.append(f"{path}.{key}: missing")
            else:
                out.extend(differences(expected[key], actual[key], f"{path}.{key}"))
        out.extend(f"{path}.{key}: unexpected field" for key in actual if key not in expected)
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [f"{path}: expected a list, got {_short(actual)}"]
        if len(expected) != len(actual):
            return [f"{path}: expected {len(expected)} items, got {len(actual)}: {_short(actual)}"]
        out = []
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            out.extend(differences(e, a, f"{path}[{i}]"))
        return out
    if type(expected) is not type(actual) or expected != actual:
        return [f"{path}: expected {_short(expected)}, got {_short(actual)}"]
    return []


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
