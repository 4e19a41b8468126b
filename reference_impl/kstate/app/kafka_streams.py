"""The Kafka Streams application instance of the kit (``instances/kafka-streams/run``, INST-1): found in the
checkout, built with Maven when its jar is missing or older than its sources, and described (INST-2). The system
tests, ``kstate instance run`` and ``kstate demo`` all start it through :func:`kafka_streams_instance`."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

from kstate.app.process import InstanceCommand
from kstate.errors import KStateError
from kstate.java_store_types import shared_sources

#: The Kafka Streams release the instance is built against unless told otherwise.
KAFKA_STREAMS_VERSION = "4.4.0"
#: Overrides where the Kafka Streams instance's ``run`` script is (a checkout's ``instances/kafka-streams/run``).
KAFKA_STREAMS_RUN_ENV = "KSTATE_KAFKA_STREAMS_RUN"
#: Seconds a build of the Kafka Streams instance may take (Maven resolves Kafka's jars on the first).
BUILD_TIMEOUT_S = 900.0


class InstanceUnavailable(KStateError):
    """The instance cannot be run here (no Java or Maven, a failed build); the message says why."""


def kafka_streams_run_script() -> Path:
    """``instances/kafka-streams/run`` of the checkout the kit runs from, or ``KSTATE_KAFKA_STREAMS_RUN``."""
    override = os.environ.get(KAFKA_STREAMS_RUN_ENV)
    if override:
        return Path(override)
    from kstate.checkout import checkout_path

    return checkout_path(Path("instances") / "kafka-streams" / "run")


def jar_is_fresh(version: str) -> bool:
    """The jar of ``version`` exists and is newer than every source of the instance, the shared ``java-shared/``
    ones included (``.ci/run`` prebuilds it)."""
    root = kafka_streams_run_script().parent
    jar = root / "target" / f"kafka-{version}" / "kstate-streams-instance.jar"
    if not jar.is_file():
        return False
    folders = (root / "src", shared_sources(root))  # its own sources, and those its pom adds from java-shared/
    sources = [root / "pom.xml", *(f for folder in folders for f in folder.rglob("*") if f.is_file())]
    return all(f.stat().st_mtime <= jar.stat().st_mtime for f in sources)


def kafka_streams_instance(version: str = KAFKA_STREAMS_VERSION, *, build: bool = True) -> InstanceCommand:
    """The Kafka Streams instance of ``version``, its jar built first when missing (a build takes longer than
    ``--describe`` may), then described (INST-2). :class:`InstanceUnavailable` says why it cannot be run."""
    run = kafka_streams_run_script()
    if not run.is_file():
        raise InstanceUnavailable(f"the Kafka Streams instance is not here ({run}): run from a checkout of the kit")
    if shutil.which("java") is None:
        raise InstanceUnavailable("the Kafka Streams instance needs Java 17: no java on the PATH")
    if build and not jar_is_fresh(version):
        if shutil.which("mvn") is None:
            raise InstanceUnavailable(f"the Kafka Streams instance for Kafka {version} is not built, or older than "
                                      "its sources, and there is no mvn on the PATH to build it")
        try:
            done = subprocess.run([str(run), "--kafka-version", version, "--build"], capture_output=True,
                                  timeout=BUILD_TIMEOUT_S, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise InstanceUnavailable(f"building the Kafka Streams instance for Kafka {version} took over "
                                      f"{BUILD_TIMEOUT_S:.0f} s") from None
        if done.returncode != 0:
            raise InstanceUnavailable(f"building the Kafka Streams instance for Kafka {version} failed: "
                                      f"{done.stderr.decode('utf-8', 'replace')[-300:]}")
    return InstanceCommand.from_command_line(shlex.join([str(run), "--kafka-version", version]))
