"""Apache Kafka under test, ``--impl kafka-jvm:VERSION``: all the suite knows of it, in one package (issue 33).

Here: building the Maven testee of ``testees/kafka-jvm`` for a release, the command that starts it, the release a
name gives and the release's expected-failure file. :mod:`.recording` records its answers as fixtures (OPS-4),
:mod:`.verdicts` keeps its per-rule verdicts, :mod:`.commands` are ``kstate fixtures record`` and
``kstate kafka-verdicts``. The rest of the suite sees an implementation like any other: :mod:`loading` asks
:func:`load`, the report asks :func:`release_of`, and a test counts the mentions left outside this package.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

from kstate.java_store_types import shared_sources
from kstate.maven import run_maven
from kstate_conformance.adapter import ImplementationAdapter
from kstate_conformance.testee import ImplementationError, ImplementationNotFound, start_testee

PREFIX = "kafka-jvm:"
MAIN = "kstate.kafkajvm.Main"
# Building the testee the first time downloads Kafka and its dependencies from Maven Central.
BUILD_TIMEOUT = 1800.0
# A JVM that opens RocksDB needs longer than the Python testees for its first answer.
START_TIMEOUT = 120.0


def project() -> Path:
    """The Maven project of the Kafka testee: ``$KSTATE_KAFKA_JVM_DIR``, else ``testees/kafka-jvm`` of this tree,
    else of the working directory (an installed kit, a tox env's wheel, has no tree around its modules)."""
    override = os.environ.get("KSTATE_KAFKA_JVM_DIR")
    if override:
        return Path(override)
    from kstate.checkout import checkout_path

    return checkout_path(Path("testees") / "kafka-jvm")


def _stale(marker: Path, sources: Path, *shared: Path) -> bool:
    """Whether ``marker`` is missing or older than the pom beside ``sources``, or a Java file under ``sources`` or
    ``shared`` (the sources the pom adds from outside the project, :func:`kstate.java_store_types.shared_sources`)."""
    if not marker.exists():
        return True
    built = marker.stat().st_mtime
    java = [path for folder in (sources, *shared) for path in folder.rglob("*.java")]
    return any(path.stat().st_mtime > built for path in [sources.parent / "pom.xml", *java])


def command(version: str, *, project: Path | None = None, full_jit: bool = False) -> str:
    """The command that starts the Kafka testee of ``version``, building it with Maven first if needed.

    The conformance runs stop the JIT at C1 (short runs start sooner); ``full_jit`` leaves the JVM's default tiered
    compilation on, as a benchmark of Kafka's stores needs.

    Maven builds ``target/<version>/classes`` and ``target/<version>/classpath.txt`` (the jars in ``~/.m2``);
    it runs when they are missing or older than the sources, the shared ``java-shared/`` ones included. Java or Maven missing, or a failed build, is an
    :class:`ImplementationError` naming what to install or what Maven said.
    """
    if not version or any(c not in "0123456789.-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" for c in version):
        raise ImplementationNotFound(f"{PREFIX}{version!r}: name a Kafka release, e.g. kafka-jvm:4.4.0")
    root = project or _default_project()
    if not (root / "pom.xml").exists():
        raise ImplementationNotFound(f"no Kafka testee project at {root} (pom.xml missing)")
    java = shutil.which("java")
    if java is None:
        raise ImplementationError("kafka-jvm needs Java 17 or later on PATH (java not found)")
    target = root / "target" / version
    classpath_file = target / "classpath.txt"
    if _stale(classpath_file, root / "src", shared_sources(root)):
        mvn = shutil.which("mvn")
        if mvn is None:
            raise ImplementationError("kafka-jvm needs Maven on PATH to build the testee (mvn not found); "
                                      f"or build it once: mvn -q -B -f {root}/pom.xml -Dkafka.version={version} compile")
        try:
            done = run_maven(mvn, root / "pom.xml", f"-Dkafka.version={version}", "compile",
                             timeout=BUILD_TIMEOUT)
        except subprocess.TimeoutExpired as exc:
            raise ImplementationError(f"building the Kafka {version} testee took over {BUILD_TIMEOUT:.0f} s") from exc
        if done.returncode != 0 or not classpath_file.exists():
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
            raise ImplementationError(f"building the Kafka {version} testee failed (mvn exit {done.returncode}):\n{tail}")
    classpath = os.pathsep.join([str(target / "classes"), classpath_file.read_text(encoding="utf-8").strip()])
    jit = "" if full_jit else " -XX:TieredStopAtLevel=1"
    return f"{shlex.quote(java)} -Xss4m -XX:+UseSerialGC{jit} -cp {shlex.quote(classpath)} {MAIN}"


#: ``kafka-jvm:4.4.0``: the release a run's implementation name gives.
_RELEASE = re.compile(r"^kafka-jvm:(?P<version>[0-9A-Za-z.-]+)$")


def _default_project() -> Path:
    # command()'s ``project`` argument hides the function of that name inside it.
    return project()


def release_of(implementation: str) -> str | None:
    """The Kafka release ``implementation`` names (``4.4.0`` for ``kafka-jvm:4.4.0``), or None for any other."""
    match = _RELEASE.match(implementation)
    return match.group("version") if match else None


def names(spec: str) -> bool:
    """Whether ``spec`` (an ``--impl``) names Apache Kafka under test."""
    return spec.startswith(PREFIX)


def version_named(spec: str) -> str:
    """The version an ``--impl kafka-jvm:VERSION`` names, as the loader reads it."""
    return spec[len(PREFIX):].strip()


def expected_failures_file(version: str, root: Path | None = None) -> Path:
    """The release's expected-failure file in the testee project (``root``, else :func:`project`)."""
    return (root or project()) / f"expected-failures-{version}.txt"


def load(spec: str, *, timeout: float | None, validate: bool, start_timeout: float | None) -> ImplementationAdapter:
    """The Kafka testee ``spec`` names, built if needed and started; :class:`ImplementationError` when it cannot be."""
    command_line = command(version_named(spec))
    return start_testee(spec, command_line, timeout, START_TIMEOUT if start_timeout is None else start_timeout,
                        validate, "cannot start the Kafka testee")
