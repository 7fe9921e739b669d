"""The Codex harness as its tests drive it (fixtures ``workspace``/``make_controller`` come from
harness_cli_kit's pytest plugin)."""

from __future__ import annotations

import pytest
from harness_cli_kit.testing import CliUnderTest, StaticCredentials, installed_cli
from harness_codex import CodexAdapter

SECRET = "sk-test-secret-5678"


@pytest.fixture
def cli(workspace, make_controller) -> CliUnderTest:
    def controller(**kwargs):
        creds = StaticCredentials("OPENAI_API_KEY", SECRET)
        return make_controller(CodexAdapter(), creds, **kwargs)

    def config(url: str, **extra):
        return {"cli_path": installed_cli("codex"), "base_url": url, **extra}

    return CliUnderTest("codex", "gpt-5", workspace, controller, config)
