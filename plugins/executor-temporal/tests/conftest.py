"""Fixtures: a Temporal dev server per test session, a PostgreSQL ledger per test (the
PostgreSQL plugin's fixtures), and the deterministic slow harness program."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from executor_temporal.testing import DevServer

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the helper modules beside it
from temporal_serving import serving

PROGRAM = Path(__file__).with_name("steps_program.py")


@pytest.fixture(scope="session")
def temporal_address() -> Iterator[str]:
    yield from serving(DevServer())


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
