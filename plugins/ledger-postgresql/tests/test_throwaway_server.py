"""The throwaway test server does not outlive its test run: ``pg_ctl`` daemonizes the
postmaster, so a run killed with SIGKILL (no fixture teardown) would leave it running, holding a
port and memory, unless the watchdog takes it."""

from __future__ import annotations

import shutil

import pytest

from harness_core.testing.processes import survivors_of_a_killed_starter

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
    roots: list[str] = []

    def postmaster(line: str) -> list[int]:
        _, pid, root = line.split()
        roots.append(root)
        return [int(pid)]

    try:
        left = survivors_of_a_killed_starter(STARTS_A_SERVER, postmaster)
    except LookupError as reason:
        pytest.skip(f"PostgreSQL server unavailable: {reason}")
    finally:
        for root in roots:
            shutil.rmtree(root, ignore_errors=True)
    assert left == [], "the server outlived the killed run"
