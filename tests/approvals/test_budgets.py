"""Budgets, limit by limit: what each counts, where it stops, what a resumed session remembers.

The arithmetic through :class:`Budget` and :class:`SessionLimits`, the rest through a real
Controller with one-function harnesses (tools/mutation.py budgets runs this file)."""

from __future__ import annotations

import types
from datetime import UTC, datetime

import anyio
import pytest
from harness_hookspecs import HarnessError, Usage, UsageReported

from harness_core import Controller, harness, plugins_from
from harness_core.budgets import Budget, SessionLimits


@harness("reporter", features=("resume", "cancel", "usage"))
async def reporter(message, session):
    """One usage report per word of the prompt: ``in:N``, ``out:N`` or ``both:N``; ``nap``
    first sleeps a moment (a turn that takes time under a wall-clock budget)."""
    for word in message.content.split():
        side, _, count = word.partition(":")
        if side == "nap":
            await anyio.sleep(0.2)
        elif side == "in":
            yield UsageReported(usage=Usage(input_tokens=int(count)))
        elif side == "out":
            yield UsageReported(usage=Usage(output_tokens=int(count)))
        elif side == "both":
            yield UsageReported(usage=Usage(input_tokens=int(count), output_tokens=int(count)))
    yield "done"


def _controller(tmp_path) -> Controller:
    return Controller(
        plugins=plugins_from([reporter]),
        ledger=f"sqlite:///{tmp_path}/ledger.sqlite",
        state_dir=tmp_path / "state",
    )


async def _turns(c, ref, prompts):
    outcomes = []
    for prompt in prompts:
        try:
            result = await c.run_turn(ref, prompt)
            terminal = result.events[-1].payload
            outcomes.append((result.status, getattr(terminal, "hint", None)))
        except HarnessError as error:
            outcomes.append(("refused", error.hint))
    return outcomes


def _session(tmp_path, budget, prompts):
    async def main():
        async with _controller(tmp_path) as c:
            ref = await c.open_session(
                harness="reporter", workspace=str(tmp_path), posture="auto", budget=budget
            )
            return ref.session_id, await _turns(c, ref, prompts)

    return anyio.run(main)


def _resumed(tmp_path, session_id, budget, prompts):
    """The outcomes of ``prompts`` after a resume; a spent budget may refuse the resume itself
    (then that refusal is the one outcome)."""

    async def main():
        async with _controller(tmp_path) as c:
            before = len(c.ledger.events(session_id))
            try:
                ref = await c.resume_session(session_id, budget=budget)
            except HarnessError as error:  # spent already: refused before session.resumed
                assert error.reason == "limit-exceeded"
                assert len(c.ledger.events(session_id)) == before
                return [("refused", error.hint)]
            return await _turns(c, ref, prompts)

    return anyio.run(main)


# -- through the controller ----------------------------------------------------------------


@pytest.mark.parametrize("side", ["in", "out"])
def test_max_tokens_binds_a_harness_that_reports_one_side_only(tmp_path, side):
    _, outcomes = _session(tmp_path, {"max_tokens": 100}, [f"{side}:60", f"{side}:60", "x"])
    assert outcomes == [
        ("completed", None),
        ("failed", "max_tokens 100 reached"),
        ("refused", "max_tokens 100 reached"),
    ]


def test_a_resumed_session_remembers_every_usage_report_it_spent(tmp_path):
    # three reports, each far below the limit, that add up to it only together
    session_id, outcomes = _session(tmp_path, None, ["in:40 in:40", "in:40"])
    assert outcomes == [("completed", None), ("completed", None)]
    refused = _resumed(tmp_path, session_id, {"max_input_tokens": 120}, ["x"])
    assert refused == [("refused", "max_input_tokens 120 reached")]
    # a limit just above what it spent: one more turn, which its first report ends
    assert _resumed(tmp_path, session_id, {"max_input_tokens": 121}, ["in:1"]) == [
        ("failed", "max_input_tokens 121 reached")
    ]


def test_a_resumed_session_remembers_how_many_turns_it_took(tmp_path):
    session_id, outcomes = _session(tmp_path, None, ["a", "b"])
    assert outcomes == [("completed", None), ("completed", None)]
    assert _resumed(tmp_path, session_id, {"max_turns": 4}, ["c", "d", "e"]) == [
        ("completed", None),
        ("completed", None),
        ("refused", "max_turns 4 reached"),
    ]


def test_a_turn_that_takes_time_under_a_wall_clock_budget_completes(tmp_path):
    _, outcomes = _session(tmp_path, {"max_wall_clock": 60}, ["nap", "nap in:1"])
    assert outcomes == [("completed", None), ("completed", None)]


# -- the arithmetic ------------------------------------------------------------------------


def test_each_limit_names_itself_when_reached():
    budget = Budget(max_input_tokens=5, max_output_tokens=7, max_tokens=100, max_cost_usd=0.5)
    assert budget.spent(0, Usage(input_tokens=5)) == "max_input_tokens 5 reached"
    assert budget.spent(0, Usage(output_tokens=7)) == "max_output_tokens 7 reached"
    assert budget.spent(0, Usage(input_tokens=4, output_tokens=6)) is None
    assert budget.spent(0, Usage(cost_usd=0.5)) == "max_cost_usd 0.5 reached"
    assert Budget(max_wall_clock=60).spent(59.9, None) is None


def test_max_tokens_counts_what_is_known_and_nothing_more():
    budget = Budget(max_tokens=100)
    assert budget.spent(0, Usage(input_tokens=99)) is None
    assert budget.spent(0, Usage(output_tokens=99)) is None
    assert budget.spent(0, Usage(input_tokens=100)) == "max_tokens 100 reached"
    assert budget.spent(0, Usage(output_tokens=100)) == "max_tokens 100 reached"
    assert budget.spent(0, Usage(cost_usd=1.0)) is None  # no tokens known: nothing to count


def test_the_wall_clock_is_spent_at_the_moment_the_turn_deadline_falls():
    limits = SessionLimits(budget=Budget(max_wall_clock=60), started=100.0)
    assert limits.deadline(None) == (160.0, "max_wall_clock 60s exceeded")
    assert limits.deadline(150.0) == (150.0, None)  # the turn's own deadline comes first
    assert limits.deadline(160.0) == (160.0, None)  # the same moment: the turn's own
    assert limits.deadline(170.0) == (160.0, "max_wall_clock 60s exceeded")
    assert SessionLimits(started=100.0).deadline(170.0) == (170.0, None)
    # reaching the deadline refuses the next turn, as crossing it does
    assert limits.budget.spent(60, None) == "max_wall_clock 60s exceeded"
    limits.before_turn(159.9)
    with pytest.raises(HarnessError) as info:
        limits.before_turn(160.0)
    assert (info.value.reason, info.value.hint) == ("limit-exceeded", "max_wall_clock 60s exceeded")


def _opened(at: float) -> object:
    stamp = datetime.fromtimestamp(at, UTC).isoformat()
    return types.SimpleNamespace(type="session.opened", timestamp=stamp, payload=None)


def test_a_resumed_sessions_clock_starts_at_its_opening_never_later():
    limits = SessionLimits()
    limits.load([_opened(1000.0)], clock=lambda: 50.0, wall=lambda: 1000.5)
    assert limits.started == pytest.approx(49.5)  # opened half a second ago
    future = SessionLimits()  # a wall clock that stepped back: no time in the future
    future.load([_opened(1010.0)], clock=lambda: 50.0, wall=lambda: 1000.0)
    assert future.started == 50.0


def test_bad_budgets_say_which_limit_and_why():
    def hint(value):
        with pytest.raises(HarnessError) as info:
            Budget.of(value)
        assert info.value.reason == "invalid-request"
        return info.value.hint

    assert hint({"max_turns": 1.5}) == "max_turns must be a whole number"
    assert hint({"max_cost_usd": "x"}) == "max_cost_usd must be a number"
    assert hint({"max_cost_usd": -1}) == "max_cost_usd must be positive"
    assert hint({"max_apples": 3, "max_bananas": 1}) == "unknown budget limit max_apples"
    long_name = "max_" + "x" * 300
    assert hint({long_name: 1}) == f"unknown budget limit {long_name}"[:200]


def test_a_total_with_an_estimated_part_is_an_estimate():
    from harness_core.budgets import add_usage

    reported, estimated = Usage(cost_usd=0.1), Usage(cost_usd=0.2, cost_estimated=True)
    assert add_usage(reported, estimated).cost_estimated
    assert add_usage(estimated, reported).cost_estimated
    assert not add_usage(reported, reported).cost_estimated
