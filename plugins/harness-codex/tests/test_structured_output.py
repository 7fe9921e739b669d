"""Structured turn output through Codex's native ``--output-schema`` (the Responses API's strict
``json_schema`` text format) against the fake model: the strict-compatible schema on the wire,
the decision on the terminal event, the runtime's retry of a malformed answer (Codex does not
validate), ``invalid-output`` when retries run out, and a three-iteration host loop."""

from __future__ import annotations

import json

import pytest
from harness_cli_kit.testing import DECISION_SCHEMA, one_terminal, three_iteration_loop

from harness_core.testing.fake_model import Match, Step


def answer(decision, **match):
    return Step(text=json.dumps(decision), match=Match(**match))


def text_format(request):
    text = request.body.get("text") if isinstance(request.body, dict) else None
    return text.get("format") if isinstance(text, dict) else None


def used_native(requests):
    formats = [text_format(r) for r in requests]
    return bool(formats) and all(f and f.get("type") == "json_schema" for f in formats)


@pytest.mark.cli
def test_the_decision_is_the_terminal_events_output(cli):
    # strict mode makes Codex give null for the optional properties: dropped again
    decision = {"step": "done", "actions": None, "answer": "42"}
    result, events, requests = cli.structured_turn([answer(decision)], DECISION_SCHEMA)
    assert result.ok, result
    assert one_terminal(events).payload.output == {"step": "done", "answer": "42"}
    assert used_native(requests)
    sent = text_format(requests[0])
    assert sent["strict"] is True
    schema = sent["schema"]
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["step", "actions", "answer"]
    assert {"type": "null"} in schema["properties"]["answer"]["anyOf"]


@pytest.mark.cli
def test_a_malformed_answer_is_retried_in_the_same_session_then_accepted(cli):
    script = [
        answer({"step": "maybe"}, contains="decide"),
        answer({"step": "actions", "actions": ["ls"], "answer": None}, contains="did not match"),
    ]
    result, events, requests = cli.structured_turn(script, DECISION_SCHEMA)
    assert result.ok, result
    assert one_terminal(events).payload.output == {"step": "actions", "actions": ["ls"]}
    assert [r.step_index for r in requests] == [0, 1] and used_native(requests)
    # the retry resumed the same Codex thread: the first answer is in its history
    assert '\\"maybe\\"' in json.dumps(requests[1].body) or "maybe" in json.dumps(requests[1].body)


@pytest.mark.cli
@pytest.mark.parametrize(
    "text", ['{"step": "never"}', "just some words"], ids=["always-malformed", "text-only"]
)
def test_retries_run_out_as_invalid_output(cli, text):
    script = [Step(text=text, times=None, match=Match(tools=None))]
    result, events, requests = cli.structured_turn(script, DECISION_SCHEMA, retries=2)
    assert result.status == "failed" and result.reason == "invalid-output", result
    terminal = one_terminal(events)
    assert terminal.payload.hint.startswith("3 attempts")
    assert len(requests) == 3 and used_native(requests)
    assert "never" not in terminal.payload.hint and "words" not in terminal.payload.hint


@pytest.mark.cli
def test_three_iteration_host_loop(cli):
    assert used_native(three_iteration_loop(cli, answer))
