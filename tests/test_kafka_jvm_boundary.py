"""Apache Kafka under test lives in one package, ``kstate_conformance.kafka_jvm`` (issue 33): building, starting,
releases, expected-failure files, recording and verdicts. The rest of the kit sees an implementation like any other,
so the mentions of Kafka-JVM left outside the package are counted here and may only go down.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "conformance/kstate_conformance/kafka_jvm/"
#: The kit's code: the reference and its CLI, the suite (its own tests included), the benchmarks, the system tests.
CODE = ("reference_impl", "conformance", "benchmarks", "system_tests")
MENTION = re.compile(r"kafka[-_]?jvm", re.IGNORECASE)

#: The mentions each module outside the package may keep, and why: the name of a kind of fixture evidence
#: (``kafka-jvm``, the fixture format's, spec/fixtures), an example in a help text or docstring, or the one
#: place that hands a ``kafka-jvm:`` name to the package.
BUDGET = {
    "reference_impl/kstate/cli.py": 14,  # the evidence, the shared vector file's name, --impl help; 1 import
    "reference_impl/kstate/fixtures_tool/__init__.py": 8,  # the evidence: importing the 2024 vectors
    "reference_impl/kstate/ops/index.py": 4,  # the evidence an operation's example comes from
    "reference_impl/kstate/java_store_types.py": 1,  # the testee beside the shared StoreTypes.java (issue 33, item 5)
    "conformance/kstate_conformance/loading.py": 8,  # the kind of implementation: hands the name to the package
    "conformance/kstate_conformance/traceability.py": 4,  # the evidence that is independent of the reference
    "conformance/kstate_conformance/report.py": 1,  # the import of release_of (the label, the headline's bugs)
    "conformance/kstate_conformance/plugin.py": 2,  # examples in --kstate-model and --kstate-only help
    "conformance/kstate_conformance/paired.py": 1,  # an example --model in the docstring
    "conformance/kstate_conformance/mutants/paired_mutants.py": 1,  # an example --model in the docstring
    "conformance/kstate_conformance/tests/test_paired_machines.py": 1,  # an example --model in the docstring
    "benchmarks/bench_tools.py": 3,  # the Kafka side of the benchmarks starts the package's testee
    "benchmarks/test_kafka_side_bench.py": 1,  # the docstring names the testee
}


def mentions(text: str) -> int:
    """How often ``text`` names Kafka-JVM (``kafka-jvm``, ``kafka_jvm``, ``KafkaJvm``, ``KSTATE_KAFKA_JVM_DIR``)."""
    return len(MENTION.findall(text))


def mentions_outside() -> dict[str, int]:
    """The kit's modules outside the package that mention Kafka-JVM, with their counts."""
    found: dict[str, int] = {}
    for folder in CODE:
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            count = mentions(path.read_text(encoding="utf-8"))
            if count and not relative.startswith(PACKAGE):
                found[relative] = count
    return found


def test_kafka_jvm_is_mentioned_outside_its_package_only_within_the_budget() -> None:
    over = {path: (count, BUDGET.get(path, 0)) for path, count in mentions_outside().items()
            if count > BUDGET.get(path, 0)}
    assert not over, ("Kafka-JVM knowledge outside kstate_conformance/kafka_jvm (file: found, allowed); move it into "
                      f"the package: {over}")


def test_the_count_catches_a_new_mention_and_the_package_holds_the_rest() -> None:
    """The counter sees every spelling, so a new ``if impl.startswith("kafka-jvm:")`` outside the package fails."""
    assert mentions('if spec.startswith("kafka-jvm:"): kafka_jvm.load(spec)  # KafkaJvm, KSTATE_KAFKA_JVM_DIR') == 4
    assert mentions('evidence = "kafka jvm"') == 0
    package = ROOT / PACKAGE
    assert sorted(p.name for p in package.glob("*.py")) == ["__init__.py", "commands.py", "recording.py", "verdicts.py"]
    inside = sum(mentions(p.read_text(encoding="utf-8")) for p in package.glob("*.py"))
    assert inside > sum(mentions_outside().values()), "most of what the kit knows of Kafka-JVM is in its package"
