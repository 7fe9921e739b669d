"""The test dev server does not outlive its test run: temporalio starts the ``temporal`` binary
as a child that nobody stops when the run is killed with SIGKILL, unless the watchdog takes it."""

from __future__ import annotations

import pytest

from harness_core.testing.processes import survivors_of_a_killed_starter, with_marker

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
    def dev_server(line: str) -> list[int]:
        port = line.rsplit(":", 1)[1]
        return with_marker(f"\0--port\0{port}\0")  # /proc cmdlines are NUL-separated

    try:
        left = survivors_of_a_killed_starter(STARTS_A_SERVER, dev_server)
    except LookupError as reason:
        pytest.skip(f"Temporal dev server unavailable: {reason}")
    assert left == [], "the dev server outlived the killed run"
