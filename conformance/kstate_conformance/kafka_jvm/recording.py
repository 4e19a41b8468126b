"""Recording ``kafka-jvm`` fixtures: the inputs of the spec and reference cases, answered by Apache Kafka (OPS-4).

Each case of ``fixtures/spec/`` and ``fixtures/reference/`` whose operation the testee offers is sent to it
(a ``store.scenario`` is expanded into the testee's own ``store.*`` calls, OPS-5); Kafka's answer becomes a
case of ``fixtures/kafka-jvm/recorded_<family>.json`` with ``provenance`` (the Kafka version, the source
case). An answer that departs from the source case is recorded all the same, marked ``deviation`` with the
reason the expected-failure file gives (or ``[UNCLASSIFIED]``): data for the report, never dropped. The
cases imported from the 2024 vectors are replayed too, and a disagreement is reported, never overwritten.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kstate.fixtures_tool import FIXTURE_FORMAT, case_requires, dumps_fixture
from kstate.ops import JsonDict
from kstate.ops.compare import differences
from kstate.ops.position_order import comparable_output
from kstate.ops.store_scenario_ops import ALL_BACKENDS, SCENARIO_OP, ScenarioError, run_scenario
from kstate_conformance.adapter import Unsupported
from kstate_conformance.capabilities import capabilities_of, feature_of_rules
from kstate_conformance.expectations import ExpectedFailures
from kstate_conformance.fixtures import golden_differences
from kstate_conformance.testee import TesteeError

#: The fixture directories whose inputs are recorded: the hand-written spec cases and the reference's.
SOURCE_DIRS = ("spec", "reference")
RECORDED_PREFIX = "recorded_"
RECORDER = "kstate fixtures record"
REPORT_FILE = "RECORDING.md"
_ROTATED_LOG = re.compile(r"(LOG\.old\.)[0-9]+$")
#: A scenario's temporary state directory, named at random: replaced so the report is the same on a rerun.
_TEMP_DIR = re.compile(re.escape(tempfile.gettempdir()) + r"/[^/\s]+")
#: Differences kept per deviating case: enough to see what Kafka does, short enough to read.
MAX_DIFFS = 3


class RecordingError(Exception):
    """A recording that cannot proceed: no source fixtures, or an implementation that is not Kafka's."""


@dataclass
class Outcome:
    """What recording one source case gave: a recorded case, or why none was recorded."""

    source_id: str
    status: str  # recorded | deviates | unsupported | testee_error
    detail: str = ""
    case: JsonDict | None = None


@dataclass
class Recording:
    """One Kafka version's answers to every source case, and its check of the 2024 vectors."""

    version: str
    outcomes: list[Outcome] = field(default_factory=list)
    #: ``(case id, differences)`` of the imported vector cases whose recorded output this version contradicts.
    vector_disagreements: list[tuple[str, str]] = field(default_factory=list)
    vectors_checked: int = 0
    #: Source cases sent; a scenario whose backends answer differently gives one outcome per backend.
    sources: int = 0
    vectors_unsupported: int = 0

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)


def source_cases(root: Path) -> list[tuple[str, JsonDict]]:
    """``(family, case)`` of every spec and reference case, in file then case order."""
    out: list[tuple[str, JsonDict]] = []
    for directory in SOURCE_DIRS:
        for path in sorted((root / directory).glob("*.json")):
            document = json.loads(path.read_text(encoding="utf-8"))
            out.extend((document["family"], case) for case in document["cases"])
    if not out:
        raise RecordingError(f"no spec or reference fixtures under {root}")
    return out


def vector_cases(root: Path) -> list[JsonDict]:
    """The ``kafka-jvm`` cases imported from the 2024 vectors (files without the recorded prefix)."""
    out: list[JsonDict] = []
    for path in sorted((root / "kafka-jvm").glob("*.json")):
        if not path.name.startswith(RECORDED_PREFIX):
            out.extend(json.loads(path.read_text(encoding="utf-8"))["cases"])
    return out


def normalized(output: Any) -> Any:
    """Kafka's answer made repeatable: no error messages (they name temporary paths and object ids), and
    RocksDB's rotated info logs (``LOG.old.<microseconds>``) named without their time."""
    if isinstance(output, dict):
        return {k: ({f: e for f, e in v.items() if f != "message"} if k == "error" and isinstance(v, dict)
                    else normalized(v)) for k, v in output.items()}
    if isinstance(output, list):
        return [normalized(v) for v in output]
    if isinstance(output, str):
        return _ROTATED_LOG.sub(r"\1<time>", output)
    return output


def answer(adapter: Any, case: JsonDict) -> JsonDict:
    """The adapter's answer to one case; a scenario runs on every backend it offers, or :class:`Unsupported`."""
    if case["op"] != SCENARIO_OP:
        result: JsonDict = adapter.call(case["op"], case["input"])
        return result
    payload = case["input"]
    caps = capabilities_of(adapter)
    # As test_golden: a scenario of an optional feature's rules alone (HV-10's lazy_headers) that store.capabilities
    # does not declare is absent; Kafka's answer to it is evidence of nothing.
    feature = feature_of_rules(case["rules"])
    lacked = caps.lacks(feature=feature) if feature is not None else None
    if lacked is not None:
        raise Unsupported(f"lacks {lacked}")
    if not caps.offers_store_type(payload.get("store_type", "kv")):
        raise Unsupported(f"store type {payload.get('store_type', 'kv')}")
    if (payload.get("open_input") or {}).get("caching") and not caps.caching:
        raise Unsupported("record cache")
    offered = [b for b in ALL_BACKENDS if b in caps.backends]
    backend = payload.get("backend")
    if (backend is not None and backend not in offered) or not offered:
        raise Unsupported(f"backend {backend}")
    return run_scenario(adapter.call, payload, None if backend is not None else offered)


def record(adapter: Any, version: str, root: Path, expected: ExpectedFailures | None = None,
           progress: Callable[[], None] | None = None) -> Recording:
    """Send every source case to ``adapter`` (Kafka ``version``) and replay the imported vectors through it."""
    recording = Recording(version)
    for family, case in source_cases(root):
        recording.sources += 1
        recording.outcomes.extend(_record_one(adapter, version, family, case, expected))
        if progress:
            progress()
    for vector in vector_cases(root):
        try:
            _begin(adapter, vector["id"])
            actual = answer(adapter, vector)
        except (Unsupported, TesteeError):
            recording.vectors_unsupported += 1
            continue
        except Exception as exc:  # reported with the disagreements: the vector could not be replayed
            recording.vector_disagreements.append((vector["id"], _stable(f"{type(exc).__name__}: {exc}")))
            continue
        recording.vectors_checked += 1
        diffs = differences(vector["output"], actual)
        if diffs:
            recording.vector_disagreements.append((vector["id"], "; ".join(diffs[:MAX_DIFFS])))
        if progress:
            progress()
    return recording


def _stable(text: str) -> str:
    return _TEMP_DIR.sub("<state dir>", text)


def _begin(adapter: Any, test_id: str) -> None:
    # A testee that failed on the previous case is replaced, as between two tests of the suite.
    begin = getattr(adapter, "begin_test", None)
    if begin is not None:
        begin(test_id)


def _record_one(adapter: Any, version: str, family: str, source: JsonDict,
                expected: ExpectedFailures | None) -> list[Outcome]:
    source_id = source["id"]
    try:
        _begin(adapter, source_id)
        actual = normalized(answer(adapter, source))
    except Unsupported as exc:
        return [Outcome(source_id, "unsupported", str(exc))]
    except TesteeError as exc:
        return [Outcome(source_id, "testee_error", _stable(f"{exc.kind}: {exc.problem}"))]
    except ScenarioError as exc:
        if source["op"] == SCENARIO_OP and "backend" not in source["input"] and "answered differently" in str(exc):
            # Kafka's backends disagree where the spec says they answer alike: each backend's answer is evidence.
            return [outcome for backend in ALL_BACKENDS
                    for outcome in _record_one(adapter, version, family, _on_backend(source, backend), expected)]
        return [Outcome(source_id, "testee_error", _stable(f"{type(exc).__name__}: {exc}"))]
    except Exception as exc:  # a scenario that cannot run on Kafka's stores (files held, a lock not released)
        return [Outcome(source_id, "testee_error", _stable(f"{type(exc).__name__}: {exc}"))]
    source_id = source.get("recorded_from", source_id)
    evidence, _, name = source["id"].partition(".")
    case: JsonDict = {
        "id": f"kafka-jvm.{RECORDED_PREFIX}{family}.{evidence}.{name.partition('.')[2]}",
        "op": source["op"],
        "rules": list(source["rules"]),
        "level": source["level"],
        "evidence": "kafka-jvm",
        "input": source["input"],
        "output": actual,
        "provenance": {"kafka_version": version, "recorded_from": source_id},
    }
    for key in ("lenient", "note", "also_accepted"):
        if key in source:
            case[key] = source[key]
    if "also_accepted" in source and not golden_differences(source, actual) and differences(
            comparable_output(source["op"], source["output"]), comparable_output(source["op"], actual)):
        # Kafka answered one of the outputs the source also accepts: the recorded case accepts the source's own
        # output as well, so that an implementation answering it (the reference) still matches (OPS-4).
        case["also_accepted"] = [*source["also_accepted"],
                                 {"output": source["output"], "why": f"the output of {source['id']}, which its rules "
                                                                     "accept as well"}]
    requires = case_requires(case)  # what the case needs of an implementation, as every fixture declares it
    if requires is not None:
        case["requires"] = requires
    label = source["id"] if "recorded_from" not in source else f"{source_id} ({source['input']['backend']})"
    # Compared as test_golden compares (OFF-8: position bytes in any order); the case keeps Kafka's own answer.
    diffs = golden_differences(source, actual)
    if not diffs:
        return [Outcome(label, "recorded", case=case)]
    entry = expected.match(f"test_golden.py::test_golden[{source_id}]") if expected else None
    reason = entry.reason if entry and entry.reason else "[UNCLASSIFIED] not in the expected-failure file"
    case["deviation"] = {"from": source_id, "differences": diffs[:MAX_DIFFS], "reason": reason}
    return [Outcome(label, "deviates", reason, case)]


def _on_backend(source: JsonDict, backend: str) -> JsonDict:
    """The source scenario pinned to one backend, its id suffixed with the backend's name."""
    return {**source, "id": f"{source['id']}.{backend}", "input": {**source["input"], "backend": backend},
            "recorded_from": source["id"]}


def documents(recording: Recording) -> dict[str, str]:
    """The ``kafka-jvm/recorded_<family>.json`` files of a recording, as ``{relative path: text}``."""
    by_family: dict[str, list[JsonDict]] = {}
    for outcome in recording.outcomes:
        if outcome.case is not None:
            family = outcome.case["id"].split(".")[1]
            by_family.setdefault(family, []).append(outcome.case)
    out: dict[str, str] = {}
    for family, cases in sorted(by_family.items()):
        document = {
            "fixture_format": FIXTURE_FORMAT,
            "evidence": "kafka-jvm",
            "family": family,
            "description": (f"The inputs of the spec and reference cases of {family[len(RECORDED_PREFIX):]}, "
                            f"answered by Apache Kafka {recording.version} (testees/kafka-jvm)."),
            "provenance": {"kafka_version": recording.version, "recorded_by": RECORDER,
                           "testee": "testees/kafka-jvm", "sources": list(SOURCE_DIRS)},
            "cases": sorted(cases, key=lambda c: c["id"]),
        }
        out[f"kafka-jvm/{family}.json"] = dumps_fixture(document)
    return out


def stale_recorded(root: Path, produced: Iterable[str]) -> list[str]:
    """Recorded files on disk that the recording no longer produces (a family with no case left)."""
    keep = set(produced)
    return sorted(str(p.relative_to(root)) for p in (root / "kafka-jvm").glob(f"{RECORDED_PREFIX}*.json")
                  if str(p.relative_to(root)) not in keep)


# --- the report ----------------------------------------------------------------------------------------


def version_differences(older: Recording, newer: Recording) -> list[tuple[str, str]]:
    """``(source case, what differs)`` for every case the two versions answer differently."""
    def key(o: Outcome) -> str:
        if o.case is None:
            return o.status
        return json.dumps(o.case["output"], sort_keys=True)

    old = {o.source_id: o for o in older.outcomes}
    out = []
    for outcome in newer.outcomes:
        before = old.get(outcome.source_id)
        if before is not None and key(before) != key(outcome):
            out.append((outcome.source_id, _what_differs(before, outcome)))
    return out


def _summary(outcome: Outcome) -> str:
    if outcome.case is None:
        return outcome.status
    text = json.dumps(outcome.case["output"], sort_keys=True)
    return text if len(text) <= 100 else text[:97] + "..."


def _what_differs(before: Outcome, after: Outcome) -> str:
    if before.case is None or after.case is None:
        return f"{_summary(before)} then {_summary(after)}"
    return "; ".join(differences(before.case["output"], after.case["output"])[:MAX_DIFFS])


def report_markdown(primary: Recording, others: Iterable[Recording] = ()) -> str:
    """The generated account of a recording: counts, deviations from the spec, vector disagreements, versions."""
    lines = [
        "# Recorded Kafka fixtures",
        "",
        f"Generated by `{RECORDER} --impl kafka-jvm:{primary.version}"
        + "".join(f" --compare kafka-jvm:{o.version}" for o in others) + "`; do not edit. The inputs are "
        "those of `fixtures/spec/` and `fixtures/reference/`, the outputs Kafka's (`fixtures/kafka-jvm/"
        f"{RECORDED_PREFIX}*.json`).",
        "",
        "| Kafka | source cases | recorded, agreeing | recorded, deviating | unsupported | testee errors | "
        "2024 vectors replayed | disagreeing with the vectors |",
        "|---|---|---|---|---|---|---|---|",
    ]
    everything = [primary, *others]
    for rec in everything:
        lines.append(f"| {rec.version} | {rec.sources} | {rec.count('recorded')} | {rec.count('deviates')} | "
                     f"{rec.count('unsupported')} | {rec.count('testee_error')} | {rec.vectors_checked} | "
                     f"{len(rec.vector_disagreements)} |")
    lines += ["", f"## Where Kafka {primary.version} departs from the spec and reference cases", ""]
    deviating = [o for o in primary.outcomes if o.status == "deviates"]
    if not deviating:
        lines.append("None.")
    for outcome in deviating:
        lines.append(f"- `{outcome.source_id}`: {outcome.detail}")
    for rec in everything:
        lines += ["", f"## Kafka {rec.version} against the 2024 vectors (second source)", ""]
        if not rec.vector_disagreements:
            lines.append(f"No disagreement: {rec.vectors_checked} vector cases replayed, "
                         f"{rec.vectors_unsupported} not offered by the testee.")
        for case_id, detail in rec.vector_disagreements:
            lines.append(f"- `{case_id}`: {detail}")
    for rec in everything:
        errors = [o for o in rec.outcomes if o.status == "testee_error"]
        if errors:
            lines += ["", f"## Testee errors under Kafka {rec.version} (nothing recorded)", ""]
            lines += [f"- `{o.source_id}`: {o.detail}" for o in errors]
    for other in others:
        diffs = version_differences(other, primary)
        lines += ["", f"## Kafka {other.version} against {primary.version}", ""]
        if not diffs:
            lines.append(f"Every source case gets the same answer from {other.version} and {primary.version}.")
        for source_id, detail in diffs:
            lines.append(f"- `{source_id}` ({other.version} expected, {primary.version} got): {detail}")
    return "\n".join(lines) + "\n"
