"""Fork and conversation rewind on real OpenCode (``POST /session/{id}/fork`` before a user
message) against the fake model: what the next model request holds of the conversation."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.mark.cli
def test_fork_at_turn_one_holds_turn_one_and_nothing_after(cli: Any) -> None:
    cli.assert_forks()


@pytest.mark.cli
def test_rewind_drops_the_later_turns_from_the_model(cli: Any) -> None:
    cli.assert_rewinds_conversation()
