from __future__ import annotations

import os
from pathlib import Path

import pytest

# Re-exported for tests written before tests/ became a package (import them from tests.helpers).
from tests.helpers import ROOT, harness_cmd

__all__ = ["ROOT", "harness_cmd"]


@pytest.fixture
def workspace(tmp_path: Path) -> str:
    path = tmp_path / "workspace"
    path.mkdir()
    return str(path)


@pytest.fixture
def make_controller(tmp_path: Path):
    """Build a Controller over exactly the given plugin objects, on a ledger under tmp_path."""
    from harness_core import Controller, plugins_from

    def make(*objs, ledger: str | None = None, **kwargs):
        return Controller(
            plugins=plugins_from(objs),
            ledger=ledger or f"sqlite:///{tmp_path}/ledger.sqlite",
            state_dir=tmp_path / "state",
            **kwargs,
        )

    return make


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    """Environment for running the `harness` CLI in a subprocess with an isolated ledger."""
    env = dict(os.environ)
    env["HARNESS_LEDGER"] = f"sqlite:///{tmp_path}/cli-ledger.sqlite"
    env["HARNESS_STATE_DIR"] = str(tmp_path / "cli-state")
    env["HARNESS_CACHE_DIR"] = str(tmp_path / "cli-cache")  # the plugin listing's cache
    env.pop("HARNESS_CORE_PLUGINS", None)
    return env
