"""Structured turn output through the shipped answer-tool extension (pi has no native
mechanism; ``extensions/structured_output.ts`` registers a tool whose parameters are the schema
and which ends the turn) against the real CLI and the fake model: the decision on the terminal
event, pi's own retry of an invalid tool call, the runtime's retry of a text-only answer,
``invalid-output`` when retries run out, and a three-iteration host loop."""

from __future__ import annotations

import pytest
from harness_cli_kit.structured_testing import TextAnswerScenarios
from harness_cli_kit.testing import DECISION_SCHEMA, one_terminal, three_iteration_loop

from harness_core.testing.fake_model import Match, Step, ToolCall

TOOL = "structured_output"


def answer(decision, **match):
    return Step(tool_calls=[ToolCall(TOOL, decision)], match=Match(**match))


def offered(request):
    return next((t for t in request.body.get("tools", []) if t["function"]["name"] == TOOL), None)


def used_native(requests):
    """Every model request offered the answer tool (the extension's mechanism)."""
    return bool(requests) and all(offered(r) is not None for r in requests)


def decided(cli, script, expected, schema=DECISION_SCHEMA):
    """Run a structured turn that must be accepted with ``expected`` through the answer tool;
    returns its events and the model requests."""
    result, events, requests = cli.structured_turn(script, schema)
    assert result.ok, result
    assert one_terminal(events).payload.output == expected
    assert used_native(requests)
    return events, requests


@pytest.mark.cli
def test_the_decision_is_the_terminal_events_output(cli):
    decision = {"step": "done", "answer": "42"}
    _, requests = decided(cli, [answer(decision)], decision)
    assert len(requests) == 1  # the valid call ended the turn: no follow-up model call
    # the schema is the tool's parameters, not pasted into the prompt
    parameters = offered(requests[0])["function"]["parameters"]
    assert parameters["properties"]["step"] == {"enum": ["actions", "done"]}
    assert "additionalProperties" not in requests[0].last_user_text


@pytest.mark.cli
def test_a_malformed_tool_call_is_retried_by_pi_then_accepted(cli):
    accepted = {"step": "actions", "actions": ["ls"]}
    script = [answer({"step": "maybe"}), answer(accepted, tool_result=True)]
    events, requests = decided(cli, script, accepted)
    assert [r.step_index for r in requests] == [0, 1]
    # pi sent its validation error back as the tool result; nothing of it in the ledger
    assert "must be equal to one of the allowed values" in str(requests[1].body)
    assert "maybe" not in repr([e.payload for e in events if e.type != "turn.started"])


@pytest.mark.cli
def test_a_text_only_answer_is_retried_by_the_runtime(cli):
    accepted = {"step": "done", "answer": "ok"}
    script = [
        Step(text="plain words", match=Match(contains="decide")),
        answer(accepted, contains="did not match"),
    ]
    events, _ = decided(cli, script, accepted)
    statuses = [e.payload.message for e in events if e.type == "status"]
    assert any("retrying (1 of 2)" in message for message in statuses)


@pytest.mark.cli
def test_a_non_object_schema_is_wrapped_and_unwrapped(cli):
    schema = {"type": "integer", "minimum": 1}
    # pi coerces "2" to 2 against the parameters
    _, requests = decided(cli, [answer({"value": "2"})], 2, schema)
    assert offered(requests[0])["function"]["parameters"]["properties"]["value"] == schema


@pytest.mark.cli
def test_always_malformed_fails_invalid_output(cli):
    script = [answer({"step": "never"}, tools=None)]
    script[0].times = None
    result, events, requests = cli.structured_turn(script, DECISION_SCHEMA)
    assert result.status == "failed" and result.reason == "invalid-output", result
    assert one_terminal(events).payload.hint == "pi ran out of answer retries"
    # the third invalid call ends it (the fake model answers at once, so pi may have sent a
    # request or two more by the time its process group is killed)
    assert len(requests) >= 3 and used_native(requests)
    assert "never" not in repr([e for e in events if e.type in ("status", "turn.failed")])


class TestTextAnswers(TextAnswerScenarios):
    pass


@pytest.mark.cli
def test_three_iteration_host_loop(cli):
    assert used_native(three_iteration_loop(cli, answer))
