"""The kit's Maven runs take one lock, so that two of them never download into the local repository at once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kstate.maven import maven_lock

_TRY = "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR); fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)"


def _another_process_can_take(lock: Path) -> bool:
    return subprocess.run([sys.executable, "-c", _TRY, str(lock)], capture_output=True, check=False).returncode == 0


def test_a_second_maven_run_waits_while_the_first_holds_the_lock(tmp_path: Path) -> None:
    lock = tmp_path / "m2" / ".kstate-maven.lock"
    with maven_lock(lock):
        assert lock.exists()
        assert not _another_process_can_take(lock)
    assert _another_process_can_take(lock)


def test_the_instance_launcher_takes_the_same_lock() -> None:
    run = (Path(__file__).resolve().parents[2] / "instances" / "kafka-streams" / "run").read_text(encoding="utf-8")
    assert 'flock "$HOME/.m2/.kstate-maven.lock" mvn' in run
