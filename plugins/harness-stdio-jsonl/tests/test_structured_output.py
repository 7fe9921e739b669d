"""Structured turn output through a stdio-jsonl program: the schema arrives in the prompt; a
program may answer with ``output`` on its terminal line (validated like any answer) or with
JSON text; a malformed answer is retried in the same session."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_stdio_jsonl import controller, script

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}

# Answers by attempt: an "output" of the wrong type first, then JSON text that matches.
PROGRAM = """
import json, sys
attempt = 0
for line in sys.stdin:
    turn = json.loads(line)
    attempt += 1
    assert "JSON Schema" in turn["prompt"]
    if attempt == 1:
        out = {"type": "turn.completed", "text": "", "output": {"n": "seven"}}
    else:
        out = {"type": "turn.completed", "text": json.dumps({"n": 7})}
    print(json.dumps(out), flush=True)
"""


def test_output_is_validated_then_a_retry_is_accepted(tmp_path, workspace):
    command = script(tmp_path, PROGRAM)

    async def main():
        async with controller(tmp_path) as c:
            ref = await c.open_session(
                harness="stdio-jsonl",
                workspace=workspace,
                config={"command": command, "mode": "session"},
            )
            result = await c.run_turn(ref, "how many?", output_schema=SCHEMA)
            return result, c.events(ref.session_id)

    result, events = anyio.run(main)
    assert result.ok and result.output == {"n": 7}, result
    statuses = [e.payload.message for e in events if e.type == "status"]
    assert statuses == [
        "the answer did not match the output schema (type at $.n); retrying (1 of 2)"
    ]
    assert [e.type for e in events].count("turn.completed") == 1
