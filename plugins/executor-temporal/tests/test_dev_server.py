"""The test dev server does not outlive its test run: temporalio starts the ``temporal`` binary
as a child that nobody stops when the run is killed with SIGKILL, unless the watchdog takes it."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from harness_core.testing.processes import alive, with_marker

STARTS_A_SERVER = """
import sys
from executor_temporal.testing import DevServer, TemporalUnavailable
try:
    server = DevServer().start()
except TemporalUnavailable as error:
    print("unavailable", error, flush=True)
    sys.exit(0)
print("started", server.address, flush=True)
sys.stdin.read()  # until the test kills us
"""


def test_a_killed_test_run_takes_its_dev_server_along() -> None:
    run = subprocess.Popen(
        [sys.executable, "-c", STARTS_A_SERVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert run.stdout is not None
    word, _, rest = run.stdout.readline().strip().partition(" ")
    if word != "started":
        run.kill()
        run.wait()
        pytest.skip(f"Temporal dev server unavailable: {rest}")
    port = rest.rsplit(":", 1)[1]
    servers = with_marker(f"\0--port\0{port}\0")  # /proc cmdlines are NUL-separated
    assert servers, "no dev server process found"
    run.send_signal(signal.SIGKILL)
    run.wait()
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in servers) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [pid for pid in servers if alive(pid)]
    for pid in left:
        subprocess.run(["kill", "-9", str(pid)], check=False)
    assert left == [], "the dev server outlived the killed run"
