"""Loading the implementation under test: ``--impl reference | mutant:NAME | module:factory | cmd:COMMAND | kafka-jvm:VERSION``.

The one module that knows every kind of implementation, so that the adapter protocol, the out-of-process
testee and the mutants import one another in one direction only (adapter < testee, mutants < loading).
"""

from __future__ import annotations

import importlib
import os
import shlex
import shutil
import subprocess
from pathlib import Path

from kstate.errors import KStateError
from kstate.maven import run_maven
from kstate_conformance.adapter import ImplementationAdapter, ReferenceAdapter
from kstate_conformance.mutants import get_mutant
from kstate_conformance.mutants.paired_mutants import PAIRED_MUTANTS
from kstate_conformance.testee import DEFAULT_START_TIMEOUT, DEFAULT_TIMEOUT, SubprocessAdapter, TesteeError


class ImplementationError(KStateError):
    """An ``--impl`` that cannot be loaded, built or started: a setup error, not a conformance verdict."""


class ImplementationNotFound(ImplementationError, LookupError):
    """An ``--impl`` name that names no implementation."""


TESTEE_PREFIXES = ("cmd:", "testee:")
KAFKA_JVM_PREFIX = "kafka-jvm:"
KAFKA_JVM_MAIN = "kstate.kafkajvm.Main"
# Building the testee the first time downloads Kafka and its dependencies from Maven Central.
KAFKA_JVM_BUILD_TIMEOUT = 1800.0
# A JVM that opens RocksDB needs longer than the Python testees for its first answer.
KAFKA_JVM_START_TIMEOUT = 120.0


def kafka_jvm_project() -> Path:
    """The Maven project of the Kafka testee: ``$KSTATE_KAFKA_JVM_DIR``, else ``testees/kafka-jvm`` of this tree,
    else of the working directory (an installed kit, a tox env's wheel, has no tree around its modules)."""
    override = os.environ.get("KSTATE_KAFKA_JVM_DIR")
    if override:
        return Path(override)
    from kstate.checkout import checkout_path

    return checkout_path(Path("testees") / "kafka-jvm")


def _stale(marker: Path, sources: Path) -> bool:
    if not marker.exists():
        return True
    built = marker.stat().st_mtime
    return any(path.stat().st_mtime > built for path in [sources.parent / "pom.xml", *sources.rglob("*.java")])


def kafka_jvm_command(version: str, *, project: Path | None = None, full_jit: bool = False) -> str:
    """The command that starts the Kafka testee of ``version``, building it with Maven first if needed.

    The conformance runs stop the JIT at C1 (short runs start sooner); ``full_jit`` leaves the JVM's default tiered
    compilation on, as a benchmark of Kafka's stores needs.

    Maven builds ``target/<version>/classes`` and ``target/<version>/classpath.txt`` (the jars in ``~/.m2``);
    it runs when they are missing or older than the sources. Java or Maven missing, or a failed build, is an
    :class:`ImplementationError` naming what to install or what Maven said.
    """
    if not version or any(c not in "0123456789.-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" for c in version):
        raise ImplementationNotFound(f"{KAFKA_JVM_PREFIX}{version!r}: name a Kafka release, e.g. kafka-jvm:4.4.0")
    root = project or kafka_jvm_project()
    if not (root / "pom.xml").exists():
        raise ImplementationNotFound(f"no Kafka testee project at {root} (pom.xml missing)")
    java = shutil.which("java")
    if java is None:
        raise ImplementationError("kafka-jvm needs Java 17 or later on PATH (java not found)")
    target = root / "target" / version
    classpath_file = target / "classpath.txt"
    if _stale(classpath_file, root / "src"):
        mvn = shutil.which("mvn")
        if mvn is None:
            raise ImplementationError("kafka-jvm needs Maven on PATH to build the testee (mvn not found); "
                                      f"or build it once: mvn -q -B -f {root}/pom.xml -Dkafka.version={version} compile")
        try:
            done = run_maven(mvn, root / "pom.xml", f"-Dkafka.version={version}", "compile",
                             timeout=KAFKA_JVM_BUILD_TIMEOUT)
        except subprocess.TimeoutExpired as exc:
            raise ImplementationError(f"building the Kafka {version} testee took over {KAFKA_JVM_BUILD_TIMEOUT:.0f} s") from exc
        if done.returncode != 0 or not classpath_file.exists():
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
            raise ImplementationError(f"building the Kafka {version} testee failed (mvn exit {done.returncode}):\n{tail}")
    classpath = os.pathsep.join([str(target / "classes"), classpath_file.read_text(encoding="utf-8").strip()])
    jit = "" if full_jit else " -XX:TieredStopAtLevel=1"
    return f"{shlex.quote(java)} -Xss4m -XX:+UseSerialGC{jit} -cp {shlex.quote(classpath)} {KAFKA_JVM_MAIN}"


def load_implementation(spec: str, *, timeout: float | None = None, validate: bool = False,
                        start_timeout: float | None = None) -> ImplementationAdapter:
    """Resolve ``reference``, ``mutant:NAME``, ``cmd:COMMAND`` (a testee) or ``module:factory`` to an adapter.

    ``timeout`` (seconds per request), ``start_timeout`` (seconds for the start and the ``hello``) and
    ``validate`` (check every answer against the protocol schema) apply to out-of-process testees only
    (spec/testee-protocol.md). Anything that keeps the implementation from being built or from completing
    its handshake raises :class:`ImplementationError`.
    """
    if spec == "reference":
        return ReferenceAdapter()
    if spec.startswith(KAFKA_JVM_PREFIX):
        command = kafka_jvm_command(spec[len(KAFKA_JVM_PREFIX):].strip())
        return _start_testee(spec, command, timeout, KAFKA_JVM_START_TIMEOUT if start_timeout is None else start_timeout,
                             validate, "cannot start the Kafka testee")
    if spec.startswith(TESTEE_PREFIXES):
        command = spec.split(":", 1)[1].strip()
        if not command:
            raise ImplementationNotFound(f"{spec!r} names no command")
        return _start_testee(spec, command, timeout, DEFAULT_START_TIMEOUT if start_timeout is None else start_timeout,
                             validate, "cannot start the testee")
    if spec.startswith("mutant:"):
        name = spec.split(":", 1)[1]
        if name in PAIRED_MUTANTS:  # caught only beside a model (kstate conformance --model), not by kstate mutants
            return PAIRED_MUTANTS[name].adapter()
        try:
            mutant = get_mutant(name)
        except LookupError as exc:
            raise ImplementationNotFound(str(exc)) from exc
        return mutant.adapter()
    if ":" in spec:
        return _build_factory(spec)
    raise ImplementationNotFound(
        f"unknown implementation {spec!r}: use reference, mutant:NAME, cmd:COMMAND, kafka-jvm:VERSION or module:factory")


def _start_testee(spec: str, command: str, timeout: float | None, start_timeout: float, validate: bool,
                  failure: str) -> ImplementationAdapter:
    """An out-of-process testee started and its handshake done; a failure is an :class:`ImplementationError`."""
    try:
        return SubprocessAdapter(command, timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
                                 start_timeout=start_timeout, validate=validate, label=spec)
    except TesteeError as exc:
        raise ImplementationError(f"{failure}: {exc}") from exc


def _build_factory(spec: str) -> ImplementationAdapter:
    """Import ``module:factory`` and build the adapter; every way this can go wrong is an :class:`ImplementationError`."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ImplementationNotFound(f"{spec!r} is not of the form module:factory")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        where = "" if exc.name == module_name else f" (importing it needs {exc.name!r})"
        raise ImplementationNotFound(f"cannot load implementation {spec!r}: no module named {exc.name!r}{where}; "
                                     "is its directory on PYTHONPATH?") from exc
    except Exception as exc:  # any failure of a third party's import is a setup error
        raise ImplementationError(f"cannot load implementation {spec!r}: importing {module_name} raised "
                                  f"{type(exc).__name__}: {exc}") from exc
    try:
        factory = getattr(module, attr)
    except AttributeError as exc:
        raise ImplementationNotFound(f"cannot load implementation {spec!r}: module {module_name} has no "
                                     f"attribute {attr!r}") from exc
    if isinstance(factory, ImplementationAdapter):
        adapter: object = factory
    elif callable(factory):
        try:
            adapter = factory()
        except Exception as exc:  # a factory that fails is a setup error, named as such
            raise ImplementationError(f"cannot build implementation {spec!r}: {module_name}.{attr}() raised "
                                      f"{type(exc).__name__}: {exc}") from exc
    else:
        raise ImplementationError(f"cannot build implementation {spec!r}: {module_name}.{attr} is a "
                                  f"{type(factory).__name__}, neither callable nor an adapter")
    if not isinstance(adapter, ImplementationAdapter):
        raise ImplementationError(f"{spec!r} gave a {type(adapter).__name__}, not an adapter: it must subclass "
                                  "kstate_conformance.adapter.ImplementationAdapter (name, supports(op), "
                                  "call(op, input))")
    return adapter
