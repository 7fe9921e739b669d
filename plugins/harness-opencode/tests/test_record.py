"""The full record from OpenCode: reasoning parts and model steps (``step-start`` /
``step-finish`` parts)."""

from __future__ import annotations

import pytest
from harness_cli_kit.record_testing import (
    instructions_reach_the_model,
    reasoning_turns,
    vendor_session_id_kept,
)

from harness_core.testing.fake_model import ToolCall

SECRET = "sk-test-secret-1234"  # injected by conftest


@pytest.mark.cli
def test_thinking_and_three_model_steps(cli):
    bash = ToolCall("bash", {"command": "echo checked >> out.txt", "description": "check"})
    reasoning_turns(cli, bash, SECRET)


@pytest.mark.cli
def test_instructions_reach_the_system_prompt(cli):
    instructions_reach_the_model(cli, native=True)


@pytest.mark.cli
def test_the_vendor_session_id_is_kept(cli):
    vendor_session_id_kept(cli)
