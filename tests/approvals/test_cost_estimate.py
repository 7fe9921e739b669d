"""Budgets that always bind: a cost estimated from tokens where a harness reports none, and a
cost or token budget refused at open on a harness that reports no usage at all."""

from __future__ import annotations

import anyio
import pytest
from harness_hookspecs import HarnessError, Usage, UsageReported

from harness_core import Controller, harness, plugins_from
from harness_core.budgets import add_usage
from harness_core.pricing import estimate_cost, priced


def test_the_estimate_comes_from_the_price_table():
    # gpt-5: $1.25 per million input tokens, $10 per million output tokens
    assert estimate_cost(Usage(input_tokens=1000, output_tokens=100), "gpt-5") == pytest.approx(
        0.00225
    )
    assert estimate_cost(Usage(output_tokens=1000), "gpt-5", "openai") == pytest.approx(0.01)
    assert estimate_cost(Usage(input_tokens=10), "no-such-model-anywhere") is None
    assert estimate_cost(Usage(requests=1), "gpt-5") is None  # no tokens, no estimate


def test_a_reported_cost_is_never_replaced():
    reported = UsageReported(usage=Usage(input_tokens=1000, cost_usd=0.5))
    assert priced(reported, "gpt-5", "openai") is reported
    tokens = UsageReported(usage=Usage(input_tokens=1000))
    assert priced(tokens, None, None) is tokens  # no model named: unknown stays unknown
    estimated = priced(tokens, "gpt-5", "openai").usage
    assert estimated.cost_estimated and estimated.cost_usd == pytest.approx(0.00125)


def test_a_total_with_an_estimated_part_is_an_estimate():
    exact = Usage(cost_usd=0.1)
    guessed = Usage(cost_usd=0.2, cost_estimated=True)
    assert add_usage(exact, exact).cost_estimated is False
    assert add_usage(exact, guessed).cost_estimated is True
    assert add_usage(guessed, exact).cost_usd == pytest.approx(0.3)
    with pytest.raises(TypeError):
        Usage(cost_estimated="yes")


@harness("mute", features=("resume", "cancel"))
async def mute(message, session):
    return "ok"


@harness("counter", features=("resume", "cancel", "usage"))
async def counter(message, session):
    return "ok"


@pytest.mark.parametrize(
    "budget", [{"max_cost_usd": 0.0001}, {"max_tokens": 10}, {"max_output_tokens": 5}]
)
def test_a_usage_budget_on_a_harness_without_usage_is_refused_at_open(tmp_path, budget):
    async def main():
        async with Controller(
            plugins=plugins_from([mute, counter]),
            ledger=f"sqlite:///{tmp_path}/ledger.sqlite",
            state_dir=tmp_path / "state",
        ) as c:
            with pytest.raises(HarnessError) as info:
                await c.open_session(harness="mute", workspace=str(tmp_path), budget=budget)
            assert c.sessions() == []
            await c.open_session(harness="counter", workspace=str(tmp_path), budget=budget)
            await c.open_session(harness="mute", workspace=str(tmp_path), budget={"max_turns": 1})
            return info.value

    error = anyio.run(main)
    assert error.reason == "unsupported-feature"
    assert error.hint == f"mute reports no usage, so {next(iter(budget))} cannot bind"
