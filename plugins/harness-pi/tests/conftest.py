"""The Pi harness as its tests drive it (fixtures ``workspace``/``make_controller`` come from
harness_cli_kit's pytest plugin)."""

from __future__ import annotations

import pytest
from harness_cli_kit.testing import CliUnderTest, StaticCredentials, installed_cli
from harness_pi import PiAdapter

SECRET = "sk-test-secret-1234"


@pytest.fixture
def cli(workspace, make_controller) -> CliUnderTest:
    def controller(**kwargs):
        return make_controller(PiAdapter(), StaticCredentials("OPENAI_API_KEY", SECRET), **kwargs)

    def config(url: str, **extra):
        return {"command": [installed_cli("pi")], "base_url": url, **extra}

    return CliUnderTest("pi", "fake-model", workspace, controller, config)
