"""Replay of vectors recorded from Apache Kafka's own classes against the reference operations.

The file layout is the one of ``shared/jvm-vectors/README.md``: a top-level object with
``schema_version`` and ``vectors``, each vector naming a ``group``, a ``case``, the Java ``op``, its
``input`` and Kafka's ``output``; a Java exception is ``{"exception": class, "message": text}``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kstate.errors import KStateError
from kstate.ops import REGISTRY, JsonDict, OpSpec, call, load_all, vector_input
from kstate.ops.compare import differences

STATUSES = ("matched", "lenient", "mismatched", "unsupported")


class VectorFileError(KStateError):
    """A vector file that is not in the documented layout."""


@dataclass(frozen=True)
class VectorResult:
    group: str
    case: str
    java_op: str
    status: str
    detail: str = ""
    neutral_op: str | None = None


@dataclass
class VectorReport:
    results: list[VectorResult] = field(default_factory=list)

    def counts(self) -> dict[tuple[str, str], dict[str, int]]:
        """Per ``(group, java op)``: checked and one count per status."""
        table: dict[tuple[str, str], dict[str, int]] = {}
        for result in self.results:
            row = table.setdefault((result.group, result.java_op), {"checked": 0, **dict.fromkeys(STATUSES, 0)})
            row["checked"] += 1
            row[result.status] += 1
        return dict(sorted(table.items()))

    def total(self, status: str) -> int:
        return sum(1 for r in self.results if r.status == status)

    @property
    def ok(self) -> bool:
        return self.total("mismatched") == 0 and self.total("unsupported") == 0


def load_vector_file(path: str | Path) -> JsonDict:
    """Read and check the layout of a vector file; a malformed file raises :class:`VectorFileError`."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise VectorFileError(f"{path}: cannot read a JSON vector file: {exc}") from exc
    if not isinstance(document, dict) or not isinstance(document.get("vectors"), list):
        raise VectorFileError(f"{path}: expected an object with a 'vectors' list")
    for index, vector in enumerate(document["vectors"]):
        missing = [k for k in ("group", "case", "op", "input", "output") if not isinstance(vector, dict) or k not in vector]
        if missing:
            raise VectorFileError(f"{path}: vector #{index} lacks {', '.join(missing)}")
    return document


def neutralize(output: Any) -> Any:
    """Kafka's ``{"exception": ...}`` markers become the neutral ``{"error": ...}`` form (OPS-3)."""
    if isinstance(output, dict):
        if "exception" in output:
            rest = {k: neutralize(v) for k, v in output.items() if k not in ("exception", "message")}
            return {"error": {"kafka_exception": output["exception"], "message": output.get("message")}, **rest}
        return {k: neutralize(v) for k, v in output.items()}
    if isinstance(output, list):
        return [neutralize(v) for v in output]
    return output


def java_op_index() -> dict[str, OpSpec]:
    """Java method name (as the vector files spell it) to the operation that mirrors it."""
    index: dict[str, OpSpec] = {}
    for spec in load_all().values():
        for java_op in spec.java_ops:
            index[java_op] = spec
    return index


def replay(vector: JsonDict, index: dict[str, OpSpec] | None = None) -> VectorResult:
    """Replay one vector against the reference operations."""
    index = java_op_index() if index is None else index
    group, case, java_op = str(vector["group"]), str(vector["case"]), str(vector["op"])
    spec = index.get(java_op)
    if spec is None:
        return VectorResult(group, case, java_op, "unsupported", "no operation mirrors this Java method")
    payload = vector_input(java_op, vector["input"])
    try:
        actual = call(spec.name, payload)
    except Exception as exc:  # a crash of the reference is a finding, never a crash of the checker
        return VectorResult(group, case, java_op, "mismatched", f"reference crashed: {exc!r}", spec.name)
    diffs = differences(neutralize(vector["output"]), actual)
    if diffs:
        return VectorResult(group, case, java_op, "mismatched", "; ".join(diffs[:5]), spec.name)
    reason = spec.lenient(payload) if spec.lenient else None
    if reason:
        return VectorResult(group, case, java_op, "lenient", reason, spec.name)
    return VectorResult(group, case, java_op, "matched", "", spec.name)


def check(vectors: Iterable[JsonDict], progress: Callable[[], None] | None = None) -> VectorReport:
    """Replay every vector; ``progress`` is called once per vector."""
    index = java_op_index()
    report = VectorReport()
    for vector in vectors:
        report.results.append(replay(vector, index))
        if progress:
            progress()
    return report


__all__ = ["REGISTRY", "VectorFileError", "VectorReport", "VectorResult", "check", "load_vector_file", "replay"]
