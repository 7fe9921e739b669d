"""Fixtures for driving the real Claude Code CLI against the fake model server."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness_hookspecs import Credential, hookimpl

from harness_core.testing.clis import NPM_BIN

SECRET = "sk-ant-test-secret-1234"


class StaticCredentials:
    """A credentials plugin that injects one key as ANTHROPIC_API_KEY."""

    @hookimpl
    def credentials_resolve(self, request):
        async def resolve():
            return [Credential(env_var="ANTHROPIC_API_KEY", value=SECRET, source="test")]

        return resolve()


@pytest.fixture
def claude_bin() -> str:
    path = NPM_BIN / "claude"
    if not path.exists():
        pytest.skip(f"claude is not installed in {NPM_BIN} (run .ci/install-clis.sh)")
    return str(path)


@pytest.fixture
def workspace(tmp_path: Path) -> str:
    path = tmp_path / "workspace"
    path.mkdir()
    return str(path)


@pytest.fixture
def make_controller(tmp_path: Path):
    from harness_claude_code import ClaudeCodeAdapter

    from harness_core import Controller, plugins_from

    def make(**kwargs):
        return Controller(
            plugins=plugins_from([ClaudeCodeAdapter(), StaticCredentials()]),
            ledger=f"sqlite:///{tmp_path}/ledger.sqlite",
            state_dir=tmp_path / "state",
            **kwargs,
        )

    return make
