"""Fixtures: a Temporal dev server per test session, a PostgreSQL ledger per test (the
PostgreSQL plugin's fixtures), and the deterministic slow harness program."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from executor_temporal.testing import DevServer, TemporalUnavailable

PROGRAM = Path(__file__).with_name("steps_program.py")


@pytest.fixture(scope="session")
def temporal_address() -> Iterator[str]:
    server = DevServer()
    try:
        server.start()
    except TemporalUnavailable as error:
        pytest.skip(f"Temporal dev server unavailable: {error}")
    try:
        yield server.address
        # every workflow history the tests recorded replays without a nondeterminism error
        failures = anyio.run(replay_every_history, server.address)
        assert not failures, failures
    finally:
        server.stop()


async def replay_every_history(address: str) -> dict[str, str]:
    from executor_temporal.workflow import SessionWorkflow
    from temporalio.client import Client
    from temporalio.worker import Replayer

    client = await Client.connect(address)
    runs = client.list_workflows("WorkflowType = 'SessionWorkflow'")
    histories = [history async for history in runs.map_histories()]
    results = await Replayer(workflows=[SessionWorkflow]).replay_workflows(
        histories, raise_on_replay_failure=False
    )
    print(f"replayed {len(histories)} workflow histories")
    return {run: repr(error) for run, error in results.replay_failures.items()}


@pytest.fixture
def pid_dir(tmp_path: Path) -> Path:
    path = tmp_path / "pids"
    path.mkdir()
    return path


@pytest.fixture
def steps_config(pid_dir: Path) -> dict[str, object]:
    return {"command": [sys.executable, str(PROGRAM), str(pid_dir)], "mode": "per-turn"}


@pytest.fixture
def workspace(tmp_path: Path) -> str:
    path = tmp_path / "workspace"
    path.mkdir()
    return str(path)
