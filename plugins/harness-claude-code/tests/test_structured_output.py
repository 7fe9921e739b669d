"""Structured turn output through Claude Code's native ``--json-schema`` (the StructuredOutput
tool) against the fake model: the decision on the terminal event, Claude's own retry of a
malformed tool call, the runtime's retry of a text-only answer, ``invalid-output`` when retries
run out, and a three-iteration host loop."""

from __future__ import annotations

import pytest
from harness_cli_kit.structured_testing import TextAnswerScenarios
from harness_cli_kit.testing import DECISION_SCHEMA, one_terminal, three_iteration_loop

from harness_core.testing.fake_model import Match, Step, ToolCall


def answer(decision, **match):
    return Step(tool_calls=[ToolCall("StructuredOutput", decision)], match=Match(**match))


def used_native(requests):
    """Every model request offered the StructuredOutput tool (the native mechanism)."""
    return bool(requests) and all("StructuredOutput" in r.tool_names for r in requests)


@pytest.mark.cli
def test_the_decision_is_the_terminal_events_output(cli):
    result, events, requests = cli.structured_turn(
        [answer({"step": "done", "answer": "42"})], DECISION_SCHEMA
    )
    assert result.ok, result
    assert one_terminal(events).payload.output == {"step": "done", "answer": "42"}
    assert used_native(requests)
    # the schema was handed over, not pasted into the prompt
    assert "additionalProperties" not in requests[0].last_user_text


@pytest.mark.cli
def test_a_malformed_tool_call_is_retried_by_claude_then_accepted(cli):
    script = [
        answer({"step": "maybe"}),
        answer({"step": "actions", "actions": ["ls"]}, tool_result=True),
    ]
    result, events, requests = cli.structured_turn(script, DECISION_SCHEMA)
    assert result.ok, result
    assert one_terminal(events).payload.output == {"step": "actions", "actions": ["ls"]}
    assert [r.step_index for r in requests] == [0, 1] and used_native(requests)


@pytest.mark.cli
def test_a_text_only_answer_is_retried_by_the_runtime(cli):
    # Claude nudges once itself, then ends "success" without structured_output (the trap).
    script = [
        Step(text="plain words", times=2, match=Match(tools=None)),
        answer({"step": "done", "answer": "ok"}, contains="did not match"),
    ]
    result, events, requests = cli.structured_turn(script, DECISION_SCHEMA)
    assert result.ok, result
    assert one_terminal(events).payload.output == {"step": "done", "answer": "ok"}
    statuses = [e.payload.message for e in events if e.type == "status"]
    assert any("retrying (1 of 2)" in message for message in statuses)
    assert used_native(requests)


class TestTextAnswers(TextAnswerScenarios):
    pass


@pytest.mark.cli
def test_always_malformed_fails_invalid_output(cli):
    script = [answer({"step": "never"}, tools=None) for _ in range(1)]
    script[0].times = None
    result, events, _ = cli.structured_turn(script, DECISION_SCHEMA)
    assert result.status == "failed" and result.reason == "invalid-output", result
    one_terminal(events)
    assert "never" not in repr([e for e in events if e.type in ("status", "turn.failed")])


@pytest.mark.cli
def test_three_iteration_host_loop(cli):
    assert used_native(three_iteration_loop(cli, answer))
