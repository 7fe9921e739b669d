"""Worker subprocesses (``harness worker``) for the failover and resume tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness_core.proctree import read_stat

HARNESS = str(Path(sys.executable).with_name("harness"))


class WorkerProcess:
    def __init__(
        self,
        name: str,
        address: str,
        queue: str,
        ledger: str,
        root: Path,
        env: dict[str, str] | None = None,
        **extra: str | bool,
    ):
        self.name = name
        self.log = root / f"{name}.log"
        argv = [HARNESS, "worker", "--address", address, "--task-queue", queue,
                "--ledger", ledger, "--state-dir", str(root / f"state-{name}")]  # fmt: skip
        for key, value in extra.items():  # a flag: True
            argv += ["--" + key.replace("_", "-")] + ([] if value is True else [value])
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}
            )
        self.pid = self.process.pid

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while "worker ready" not in self.log.read_text():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"worker {self.name} did not start: {self.log.read_text()}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def ancestors(pid: int) -> list[int]:
    """``pid``'s parent, grandparent, ... (from /proc)."""
    found = []
    while pid > 1:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = int(stat.rsplit(")", 1)[1].split()[1])
        found.append(pid)
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purpose
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def program_group(pid: int) -> int:
    """``pid``'s process group (a turn's processes run in a group of their own)."""
    info = read_stat(pid)
    assert info is not None, f"process {pid} is gone already"
    return info.pgid


def program_pid(pid_dir: Path) -> int:
    """The pid the steps program wrote to ``pid_dir`` (``<turn_id>.<pid>``) on its first turn."""
    return int(next(pid_dir.iterdir()).name.rsplit(".", 1)[1])
