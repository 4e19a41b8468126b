"""Maven runs of the kit's Java parts (the Apache Kafka broker's classpath, the Kafka testee, the Kafka Streams
instance), one at a time on a machine.

Maven 3.8 takes no lock on its local repository: two builds that download one artefact at once (tox environments
run side by side, say) can leave a torn jar behind. Every Maven run of the kit holds an exclusive ``flock`` on one
file beside the repository; ``instances/kafka-streams/run`` takes the same lock with flock(1).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

#: The lock every Maven run of the kit holds (the local repository's default place is ``~/.m2/repository``).
MAVEN_LOCK = Path.home() / ".m2" / ".kstate-maven.lock"


@contextlib.contextmanager
def maven_lock(path: Path = MAVEN_LOCK) -> Iterator[None]:
    """Hold the kit's Maven lock for the duration (waits while another Maven run of the kit holds it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def run_maven(mvn: str, pom: Path, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """``mvn -q -B -f POM ARGS`` under the kit's Maven lock, its output captured as text; raises
    ``subprocess.TimeoutExpired`` past ``timeout`` seconds (callers turn both outcomes into their own typed errors)."""
    with maven_lock():
        return subprocess.run([mvn, "-q", "-B", "-f", str(pom), *args], capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL, check=False)
