"""The structured-output judge on its own: parsing answers, schema errors, retry budget, and the
ledger-safe summaries (keyword and path only, never the answer's text)."""

from __future__ import annotations

import json

import pytest
from harness_hookspecs import HarnessError, TurnCompleted

from harness_core.structured_output import StructuredTurn, compile_schema, parse_answer

SCHEMA = {
    "type": "object",
    "properties": {"step": {"enum": ["actions", "done"]}, "answer": {"type": "string"}},
    "required": ["step"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"step": "done"}', {"step": "done"}),
        ('```json\n{"step": "done"}\n```', {"step": "done"}),
        ('Here you go: {"step": "done"} - enjoy', {"step": "done"}),
        ("  [1, 2]  ", [1, 2]),
        ('"just a string"', "just a string"),
        ('Sure.\n```json\n{"step": "done"}\n```\nAnything else?', {"step": "done"}),
        ('```\n{"step": "done"}\n```', {"step": "done"}),
        # prose quoting JSON, then the answer: the last top-level value, not a cut between them
        ('You asked for {"step": "actions"}; my answer: {"step": "done"}.', {"step": "done"}),
        ('Use {braces} and [brackets], then {"step": "done"}', {"step": "done"}),
        ('{"step": {"nested": [1]}} and done', {"step": {"nested": [1]}}),
        ('```json\n{"a": 1}\n```\n```json\n{"b": 2}\n```', {"b": 2}),  # two blocks
    ],
)
def test_parse_answer_finds_the_json(text, value):
    assert parse_answer(text) == (True, value)


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "no json here",
        "{broken",
        # the old cut from the first { to the last } made these one object
        'The schema says {"step": "done" is wrong} ok',
        "```json\nnot json\n```",  # the one fenced block is what the model meant
    ],
)
def test_parse_answer_without_json(text):
    assert parse_answer(text) == (False, None)


def test_a_bad_schema_is_invalid_request():
    with pytest.raises(HarnessError) as raised:
        compile_schema({"type": "no-such-type"})
    assert raised.value.reason == "invalid-request"
    bundle = {"format": "harness-export", "session": {}, "events": []}
    with pytest.raises(HarnessError) as raised:
        compile_schema(bundle)
    assert raised.value.hint == "the output schema is not a JSON Schema (key 'events')"
    # schema keywords of every vocabulary, and x- extensions, are a schema's own
    compile_schema({"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "t",
                    "x-owner": "me", "$defs": {}, "type": "object", "examples": []})  # fmt: skip
    compile_schema({})
    with pytest.raises(HarnessError):
        StructuredTurn(SCHEMA, retries=-1)


def test_a_schema_refers_only_to_itself_and_nothing_is_fetched():
    # a $ref to another document was fetched from its URL at validation (jsonschema's default
    # retrieval), then the turn failed provider-failed; a dangling pointer failed the same way
    for reference, hint in [
        ("http://127.0.0.1:9/schema.json", "is another document"),
        ("other.json#/x", "is another document"),
        ("#/$defs/missing", "points at nothing in the schema"),
        ("#nowhere", "points at nothing in the schema"),
    ]:
        with pytest.raises(HarnessError) as raised:
            compile_schema({"type": "object", "properties": {"a": {"$ref": reference}}})
        assert raised.value.reason == "invalid-request"
        assert raised.value.hint == f"the output schema's $ref {reference!r} {hint}" + (
            " (only #... references are followed)" if "another" in hint else ""
        )
    local = compile_schema(
        {
            "$id": "https://example.com/answer",
            "$defs": {"n": {"type": "integer"}, "s": {"$anchor": "word", "type": "string"}},
            "properties": {"a": {"$ref": "#/$defs/n"}, "b": {"$ref": "#word"}},
        }
    )
    assert [e.message for e in local.iter_errors({"a": "x", "b": 1})] == [
        "'x' is not of type 'integer'",
        "1 is not of type 'string'",
    ]
    nested: dict = {"type": "object"}
    for _ in range(5000):
        nested = {"properties": {"a": nested}}
    with pytest.raises(HarnessError) as raised:
        compile_schema(nested)
    assert raised.value.hint == "the output schema is nested too deeply"


def test_judge_accepts_native_output_and_parsed_text():
    turn = StructuredTurn(SCHEMA)
    assert turn.check(TurnCompleted(output={"step": "done"}), ()).value == {"step": "done"}
    assert turn.check(TurnCompleted(text='{"step": "actions"}'), ()).ok


def test_judge_rejects_with_a_safe_summary_and_a_detailed_retry_prompt():
    turn = StructuredTurn(SCHEMA, retries=1)
    secret_ish = "sk-this-text-must-not-reach-the-ledger"
    verdict = turn.check(TurnCompleted(text=json.dumps({"step": secret_ish})), ())
    assert not verdict.ok
    assert verdict.summary == "enum at $.step"
    assert secret_ish not in turn.failure().hint
    assert secret_ish in turn.retry_prompt(verdict)  # the model is told what was wrong
    assert turn.check(TurnCompleted(text="plain words"), ()).summary == "the answer is not JSON"
    assert turn.can_retry()
    turn.attempt += 1
    assert not turn.can_retry()
    failed = turn.failure()
    assert failed.reason == "invalid-output"
    assert failed.hint == "2 attempts; last: the answer is not JSON"


def test_prompts_carry_the_schema_only_without_a_native_mechanism():
    native = StructuredTurn(SCHEMA, native=True)
    fallback = StructuredTurn(SCHEMA)
    assert native.first_prompt("decide") == "decide"
    assert fallback.first_prompt("decide").startswith("decide\n\n")
    assert '"required":["step"]' in fallback.first_prompt("decide")


def test_a_key_the_schema_does_not_declare_is_not_shown():
    schema = {"type": "object", "additionalProperties": {"type": "integer"}}
    turn = StructuredTurn(schema)
    verdict = turn.check(TurnCompleted(text='{"sk-model-key": "x"}'), ())
    assert verdict.summary == "type at $.?"
    assert "sk-model-key" not in turn.retry_status().message
