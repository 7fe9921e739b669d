"""The throwaway test server does not outlive its test run: ``pg_ctl`` daemonizes the
postmaster, so a run killed with SIGKILL (no fixture teardown) would leave it running, holding a
port and memory, unless the watchdog takes it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from harness_core.testing.processes import alive

STARTS_A_SERVER = """
import sys
from ledger_postgresql import testing
try:
    server = testing.start(durable=False)
except testing.PostgresUnavailable as error:
    print("unavailable", error, flush=True)
    sys.exit(0)
with open(server.data + "/postmaster.pid") as handle:
    print("started", handle.readline().strip(), server.root, flush=True)
sys.stdin.read()  # until the test kills us
"""


def test_a_killed_test_run_takes_its_server_along() -> None:
    run = subprocess.Popen(
        [sys.executable, "-c", STARTS_A_SERVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert run.stdout is not None
    word, *rest = run.stdout.readline().split(" ", 1)
    if word != "started":
        run.kill()
        run.wait()
        pytest.skip(f"PostgreSQL server unavailable: {rest}")
    postmaster, root = rest[0].split()
    assert alive(int(postmaster))
    run.send_signal(signal.SIGKILL)
    run.wait()
    deadline = time.monotonic() + 10
    while alive(int(postmaster)) and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        assert not alive(int(postmaster)), "the server outlived the killed run"
    finally:
        if alive(int(postmaster)):
            os.kill(int(postmaster), signal.SIGKILL)
        subprocess.run(["rm", "-rf", root], check=False)
