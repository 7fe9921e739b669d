"""Codex reports tokens but no cost: the runtime estimates the cost from the price table,
records it as estimated, and a cost budget binds on it."""

from __future__ import annotations

import pytest

from harness_core.testing.fake_model import FakeModelServer, Step


@pytest.mark.cli
def test_a_cost_budget_binds_on_the_estimated_cost(cli):
    with FakeModelServer([Step(text="Hello there, a fairly long answer.")]) as server:
        result, _ = cli.turn(cli.config(cli.url(server)), budget={"max_cost_usd": 0.0001})
    usage = [e.payload.usage for e in result.events if e.type == "usage"]
    assert usage and all(u.cost_estimated and u.cost_usd > 0 for u in usage), usage
    assert usage[0].input_tokens  # what the estimate came from
    terminal = result.events[-1].payload
    assert (result.status, terminal.reason) == ("failed", "limit-exceeded")
    assert terminal.hint == "max_cost_usd 0.0001 reached"
    assert result.usage.cost_estimated and result.usage.cost_usd >= 0.0001


@pytest.mark.cli
def test_without_a_budget_the_turn_completes_with_an_estimated_cost(cli):
    with FakeModelServer([Step(text="Hi.")]) as server:
        result, _ = cli.turn(cli.config(cli.url(server)))
    assert result.status == "completed", result
    assert result.usage.cost_estimated and result.usage.cost_usd > 0
