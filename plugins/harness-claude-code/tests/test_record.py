"""The full record from Claude Code: thinking blocks and model steps (one per API message)."""

from __future__ import annotations

import pytest
from harness_cli_kit.record_testing import (
    instructions_reach_the_model,
    reasoning_turns,
    vendor_session_id_kept,
)

from harness_core.testing.fake_model import ToolCall

SECRET = "sk-ant-test-secret-1234"  # injected by conftest


@pytest.mark.cli
def test_thinking_and_three_model_steps(cli):
    bash = ToolCall("Bash", {"command": "echo checked >> out.txt", "description": "check"})
    recorded, _ = reasoning_turns(cli, bash, SECRET)
    assert {e.payload.model for e in recorded.events if e.type == "model.requested"} == {cli.model}


@pytest.mark.cli
def test_instructions_reach_the_system_prompt(cli):
    instructions_reach_the_model(cli, native=True)


@pytest.mark.cli
def test_the_vendor_session_id_is_kept(cli):
    vendor = vendor_session_id_kept(cli)
    # claude runs under the controller's own id (--session-id): a UUID
    assert len(vendor) == 36 and vendor.count("-") == 4
