"""Steer on real OpenCode (``POST /session/{id}/prompt_async`` while the prompt runs) against
the fake model: the host's text is in the model request that follows it, inside the same turn,
which ends with one terminal; with no running turn a steer is refused."""

from __future__ import annotations

from typing import Any

import pytest

from harness_core.testing.fake_model import ToolCall


@pytest.mark.cli
def test_steer_reaches_the_next_model_request_of_the_same_turn(cli: Any) -> None:
    cli.assert_steers(ToolCall("bash", {"command": "echo hi", "description": "say hi"}))
