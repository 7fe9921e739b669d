"""Structured turn output through OpenCode's native mechanism (``opencode serve``: the message's
``format: json_schema`` adds a ``StructuredOutput`` tool the model must call; the reply's
``info.structured`` is the call's input, not validated) against the real CLI and the fake
model: the decision on the terminal event, the runtime's retry of a malformed or text-only
answer, ``invalid-output`` when retries run out, and a three-iteration host loop."""

from __future__ import annotations

import pytest
from harness_cli_kit.structured_testing import TextAnswerScenarios
from harness_cli_kit.testing import DECISION_SCHEMA, one_terminal, three_iteration_loop

from harness_core.testing.fake_model import Match, Step, ToolCall


def answer(decision, **match):
    return Step(tool_calls=[ToolCall("StructuredOutput", decision)], match=Match(**match))


def used_native(requests):
    """Every model request offered the StructuredOutput tool and required a tool call (the
    native mechanism), and none carried the schema in the prompt (the fallback)."""
    return bool(requests) and all(
        "StructuredOutput" in r.tool_names
        and r.body.get("tool_choice") == "required"
        and "additionalProperties" not in r.last_user_text
        for r in requests
    )


def statuses(events):
    return [e.payload.message for e in events if e.type == "status"]


@pytest.mark.cli
def test_the_decision_is_the_terminal_events_output(cli):
    result, events, requests = cli.structured_turn(
        [answer({"step": "done", "answer": "42"})], DECISION_SCHEMA
    )
    assert result.ok, result
    assert one_terminal(events).payload.output == {"step": "done", "answer": "42"}
    assert result.output == {"step": "done", "answer": "42"}
    assert used_native(requests) and len(requests) == 1
    # the tool's schema is the host's
    tool = next(t for t in requests[0].body["tools"] if t["function"]["name"] == "StructuredOutput")
    assert (
        tool["function"]["parameters"]["properties"]["step"]
        == DECISION_SCHEMA["properties"]["step"]
    )


@pytest.mark.cli
def test_a_malformed_answer_is_retried_by_the_runtime_then_accepted(cli):
    # OpenCode does not validate the call's input: the runtime does, and retries
    script = [
        answer({"step": "maybe"}),
        answer({"step": "actions", "actions": ["ls"]}, contains="did not match"),
    ]
    result, events, requests = cli.structured_turn(script, DECISION_SCHEMA)
    assert result.ok, result
    assert one_terminal(events).payload.output == {"step": "actions", "actions": ["ls"]}
    assert [r.step_index for r in requests] == [0, 1] and used_native(requests)
    assert any("retrying (1 of 2)" in message for message in statuses(events))


@pytest.mark.cli
def test_a_text_only_answer_is_retried_by_the_runtime(cli):
    script = [
        Step(text="plain words", match=Match(tools=None)),
        answer({"step": "done", "answer": "ok"}, contains="did not match"),
    ]
    result, events, requests = cli.structured_turn(script, DECISION_SCHEMA)
    assert result.ok, result
    assert one_terminal(events).payload.output == {"step": "done", "answer": "ok"}
    assert any("retrying (1 of 2)" in message for message in statuses(events))
    assert used_native(requests)


@pytest.mark.cli
def test_always_malformed_fails_invalid_output(cli):
    script = [answer({"step": "never"}, tools=None)]
    script[0].times = None
    result, events, requests = cli.structured_turn(script, DECISION_SCHEMA, retries=1)
    assert result.status == "failed" and result.reason == "invalid-output", result
    terminal = one_terminal(events)
    assert terminal.payload.hint.startswith("2 attempts")
    assert "never" not in repr([e for e in events if e.type in ("status", "turn.failed")])
    assert len(requests) == 2 and used_native(requests)


class TestTextAnswers(TextAnswerScenarios):
    pass


@pytest.mark.cli
def test_three_iteration_host_loop(cli):
    assert used_native(three_iteration_loop(cli, answer))
