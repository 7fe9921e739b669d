"""Fixtures for driving the real ACP agents against the fake model server."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness_hookspecs import Credential, hookimpl


class StaticCredentials:
    """A credentials plugin that injects one key as OPENAI_API_KEY."""

    def __init__(self, value: str, env_var: str = "OPENAI_API_KEY") -> None:
        self.env_var = env_var
        self.value = value

    @hookimpl
    def credentials_resolve(self, request):
        async def resolve():
            return [Credential(env_var=self.env_var, value=self.value, source="test")]

        return resolve()


@pytest.fixture
def workspace(tmp_path: Path) -> str:
    path = tmp_path / "workspace"
    path.mkdir()
    return str(path)


@pytest.fixture
def make_controller(tmp_path: Path):
    from harness_acp import AGENTS, AcpAdapter

    from harness_core import Controller, plugins_from

    def make(env_var: str = "OPENAI_API_KEY", **kwargs):
        creds = StaticCredentials("sk-test-secret-1234", env_var)
        return Controller(
            plugins=plugins_from([*(AcpAdapter(n) for n in AGENTS), creds]),
            ledger=f"sqlite:///{tmp_path}/ledger.sqlite",
            state_dir=tmp_path / "state",
            **kwargs,
        )

    return make
