"""Structured-output scenarios for adapters without a native mechanism (prompt-and-validate):
the runtime puts the schema in the prompt and validates the answer text. A suite runs them
with ``class TestStructured(PromptedStructuredScenarios): pass`` next to its ``cli`` fixture.
An adapter with a native mechanism runs :class:`TextAnswerScenarios` the same way."""

from __future__ import annotations

import json
from typing import Any

import pytest

from .testing import DECISION_SCHEMA, CliUnderTest, one_terminal

#: The start of what the runtime appends to the prompt (then the schema as compact JSON).
SCHEMA_IN_PROMPT = "End your turn with a final answer that is only a JSON value"


def _text(decision: Any, **match: Any) -> Any:
    from harness_core.testing.fake_model import Match, Step

    text = decision if isinstance(decision, str) else json.dumps(decision)
    return Step(text=text, match=Match(**match))


def _asked(requests: list[Any]) -> list[Any]:
    """The requests that carried the turn's prompt (not a CLI's side requests)."""
    return [r for r in requests if r.tool_names]


@pytest.mark.cli
class PromptedStructuredScenarios:
    def test_the_decision_is_the_terminal_events_output(self, cli: CliUnderTest) -> None:
        script = [_text({"step": "done", "answer": "42"})]
        result, events, requests = cli.structured_turn(script, DECISION_SCHEMA)
        assert result.ok, result
        assert one_terminal(events).payload.output == {"step": "done", "answer": "42"}
        # the fallback: the schema went to the model in the prompt
        assert SCHEMA_IN_PROMPT in _asked(requests)[0].last_user_text
        started = next(e for e in events if e.type == "turn.started")
        assert started.payload.prompt == "decide"  # the ledger keeps the host's prompt

    def test_a_malformed_answer_is_retried_then_accepted(self, cli: CliUnderTest) -> None:
        script = [
            _text({"step": "maybe"}),
            _text({"step": "actions", "actions": ["ls"]}, contains="did not match"),
        ]
        result, events, requests = cli.structured_turn(script, DECISION_SCHEMA)
        assert result.ok, result
        assert one_terminal(events).payload.output == {"step": "actions", "actions": ["ls"]}
        assert [r.step_index for r in _asked(requests)] == [0, 1]
        assert any(e.type == "status" and "retrying (1 of 2)" in e.payload.message for e in events)
        verdicts = [e.payload for e in events if e.type == "output.validated"]
        assert [(v.attempt, v.verdict, v.reason) for v in verdicts] == [
            (1, "failed", "enum at $.step"),
            (2, "passed", None),
        ]

    @pytest.mark.parametrize("answer", ['{"step": "never"}', "just words"])
    def test_retries_run_out_as_invalid_output(self, cli: CliUnderTest, answer: str) -> None:
        from harness_core.testing.fake_model import Match, Step

        script = [Step(text=answer, times=None, match=Match(tools=None))]
        result, events, _ = cli.structured_turn(script, DECISION_SCHEMA, retries=1)
        assert result.status == "failed" and result.reason == "invalid-output", result
        hint = one_terminal(events).payload.hint
        assert hint.startswith("2 attempts") and answer not in hint


@pytest.mark.cli
class TextAnswerScenarios:
    """For an adapter with a native mechanism: an answer in text, never through it - the
    runtime's retries run out (the same whatever the CLI's mechanism)."""

    test_retries_run_out_as_invalid_output = (
        PromptedStructuredScenarios.test_retries_run_out_as_invalid_output
    )
