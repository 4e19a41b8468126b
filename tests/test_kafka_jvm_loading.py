"""``--impl kafka-jvm:VERSION``: how the loader finds, builds and starts the Kafka testee, without a JVM."""

from __future__ import annotations

import os
import re
import shutil
import time
from collections import Counter
from pathlib import Path

import pytest

from kstate_conformance import kafka_jvm
from kstate_conformance.expectations import ExpectedFailures
from kstate_conformance.loading import ImplementationError, ImplementationNotFound


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "kafka-jvm"
    (root / "src" / "main" / "java").mkdir(parents=True)
    (root / "pom.xml").write_text("<project/>", encoding="utf-8")
    (root / "src" / "main" / "java" / "Main.java").write_text("class Main {}", encoding="utf-8")
    return root


def _built(root: Path, version: str) -> None:
    target = root / "target" / version
    (target / "classes").mkdir(parents=True)
    (target / "classpath.txt").write_text("/jars/kafka-streams.jar:/jars/kafka-clients.jar\n", encoding="utf-8")
    later = time.time() + 10
    os.utime(target / "classpath.txt", (later, later))


def test_a_version_that_is_not_a_release_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ImplementationNotFound, match="name a Kafka release"):
        kafka_jvm.command("4.4.0; rm -rf /", project=_project(tmp_path))


def test_a_missing_project_is_named(tmp_path: Path) -> None:
    with pytest.raises(ImplementationNotFound, match=r"pom\.xml missing"):
        kafka_jvm.command("4.4.0", project=tmp_path / "nowhere")


def test_without_java_the_error_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(ImplementationError, match="Java 17"):
        kafka_jvm.command("4.4.0", project=_project(tmp_path))


def test_without_maven_an_unbuilt_testee_says_how_to_build_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/java" if name == "java" else None)
    with pytest.raises(ImplementationError, match="mvn not found"):
        kafka_jvm.command("4.4.0", project=_project(tmp_path))


def test_a_built_testee_starts_without_maven_with_its_classes_and_classpath(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project(tmp_path)
    _built(root, "4.3.1")
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/java" if name == "java" else None)
    command = kafka_jvm.command("4.3.1", project=root)
    assert command.startswith("/usr/bin/java ")
    assert f"{root}/target/4.3.1/classes:/jars/kafka-streams.jar:/jars/kafka-clients.jar" in command
    assert command.endswith(kafka_jvm.MAIN)


def test_conformance_runs_stop_the_jit_at_c1_and_benchmarks_do_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project(tmp_path)
    _built(root, "4.4.0")
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/java" if name == "java" else None)
    assert "-XX:TieredStopAtLevel=1" in kafka_jvm.command("4.4.0", project=root).split()
    assert "-XX:TieredStopAtLevel=1" not in kafka_jvm.command("4.4.0", project=root, full_jit=True).split()


def test_sources_newer_than_the_build_rebuild_it(tmp_path: Path) -> None:
    root = _project(tmp_path)
    _built(root, "4.4.0")
    assert not kafka_jvm._stale(root / "target" / "4.4.0" / "classpath.txt", root / "src")
    later = time.time() + 20
    os.utime(root / "src" / "main" / "java" / "Main.java", (later, later))
    assert kafka_jvm._stale(root / "target" / "4.4.0" / "classpath.txt", root / "src")


def test_shared_sources_newer_than_the_build_rebuild_it(tmp_path: Path) -> None:
    """The generated ``StoreTypes.java`` of ``java-shared/`` is compiled into the testee too (its pom adds it)."""
    root = _project(tmp_path)
    shared = tmp_path / "java-shared" / "src" / "main" / "java"
    shared.mkdir(parents=True)
    (shared / "StoreTypes.java").write_text("class StoreTypes {}", encoding="utf-8")
    _built(root, "4.4.0")
    marker = root / "target" / "4.4.0" / "classpath.txt"
    assert not kafka_jvm._stale(marker, root / "src", shared)
    later = time.time() + 20
    os.utime(shared / "StoreTypes.java", (later, later))
    assert kafka_jvm._stale(marker, root / "src", shared)
    assert not kafka_jvm._stale(marker, root / "src")


_REPO = Path(__file__).resolve().parents[1]
_CLASSES = ("KAFKA-BUG", "KAFKA", "SPEC", "TESTEE", "UNCLASSIFIED")


def _readme_counts() -> dict[str, tuple[int, dict[str, int]]]:
    """The contributor's guide's stated counts per release: ``**4.4.0**: 68 entries: `[KAFKA]` 43, ...``."""
    text = (_REPO / "docs" / "contributor.md").read_text(encoding="utf-8")
    section = text[text.index("## Apache Kafka under test"):]
    section = section[:section.index("\n## ")]
    stated: dict[str, tuple[int, dict[str, int]]] = {}
    for version, total, classes in re.findall(
            r"\*\*(\d+\.\d+\.\d+)\*\*: (\d+) entries: ((?:`\[[A-Z-]+\]` \d+(?:,\s+)?)+)", section):
        stated[version] = (int(total), {name: int(count) for name, count in re.findall(r"`\[([A-Z-]+)\]` (\d+)", classes)})
    return stated


def _file_counts(version: str) -> tuple[int, dict[str, int]]:
    entries = ExpectedFailures.load(_REPO / "testees" / "kafka-jvm" / f"expected-failures-{version}.txt").entries
    classes: Counter[str] = Counter()
    for entry in entries:
        match = re.match(r"\s*\[([A-Z-]+)\]", entry.reason)
        assert match and match.group(1) in _CLASSES, f"{entry.pattern}: the reason names no class: {entry.reason!r}"
        classes[match.group(1)] += 1
    return len(entries), {name: classes[name] for name in _CLASSES}


def test_the_readme_states_the_deviation_counts_of_the_expected_failure_files() -> None:
    """The "Apache Kafka under test" counts (docs/contributor.md, the README's before issue 34) are those of the
    files, per release and per class."""
    stated = _readme_counts()
    versions = sorted(path.name[len("expected-failures-"):-len(".txt")]
                      for path in (_REPO / "testees" / "kafka-jvm").glob("expected-failures-*.txt"))
    assert versions and sorted(stated) == versions, f"docs/contributor.md states {sorted(stated)}, the files are {versions}"
    for version in versions:
        total, classes = _file_counts(version)
        assert stated[version][0] == total, f"{version}: docs/contributor.md states {stated[version][0]} entries, the file has {total}"
        assert stated[version][1] == classes, f"{version}: docs/contributor.md states {stated[version][1]}, the file has {classes}"
