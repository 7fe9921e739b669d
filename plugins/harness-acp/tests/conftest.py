"""The ACP harnesses as their tests drive them (fixtures ``workspace``/``make_controller`` come
from harness_cli_kit's pytest plugin)."""

from __future__ import annotations

import pytest
from harness_acp import AGENTS, AcpAdapter
from harness_cli_kit.testing import StaticCredentials

SECRET = "sk-test-secret-1234"


@pytest.fixture
def controller(make_controller):
    """``controller(env_var="OPENAI_API_KEY", **kwargs)``: every ACP agent, one injected key."""

    def make(env_var: str = "OPENAI_API_KEY", **kwargs):
        adapters = [AcpAdapter(name) for name in AGENTS]
        return make_controller(*adapters, StaticCredentials(env_var, SECRET), **kwargs)

    return make
