"""A stdio-jsonl program speaking seed 001's event names (SuperQode's Harness Protocol v1 and its
older underscore names) runs and conforms: the names are normalized at the boundary."""

from __future__ import annotations

import sys
import textwrap

import anyio
import pytest
from harness_hookspecs import ConformanceProfile
from harness_hookspecs.names import SEED_001_NAMES, normalize_event

from harness_core.conformance import run_conformance

#: The reference program's behaviour, in seed 001's vocabulary.
SEED_PROGRAM = textwrap.dedent(
    """
    import json, sys, time

    def emit(**fields):
        sys.stdout.write(json.dumps(fields) + "\\n")
        sys.stdout.flush()

    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if request.get("type") != "turn":
            continue
        words = str(request.get("prompt", "")).split()
        emit(type="model_request", model="seed-model")
        if len(words) == 2 and words[0] == "sleep":
            time.sleep(float(words[1]))
        emit(type="model.thinking", content="weighing the words")
        emit(type="tool.requested", tool_call_id="c1", tool_name="echo")
        emit(type="tool_result", tool_call_id="c1", tool_name="echo", ok=True)
        for i, word in enumerate(words):
            emit(type="model_delta", content=(" " if i else "") + word)
        emit(type="model.completed", model="seed-model")
        emit(type="message.created", role="assistant", content=" ".join(words))
        emit(type="run.completed", content=" ".join(words))
    """
)


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "seed_agent.py"
    path.write_text(SEED_PROGRAM)
    return [sys.executable, str(path)]


def test_a_program_speaking_seed_001_names_runs(make_controller, workspace, program):
    from harness_stdio_jsonl import StdioJsonlAdapter

    async def run():
        async with make_controller(StdioJsonlAdapter()) as c:
            ref = await c.open_session(
                harness="stdio-jsonl", workspace=workspace, config={"command": program}
            )
            return await c.run_turn(ref, "hello there")

    result = anyio.run(run)
    assert result.ok and result.text == "hello there", result
    types = [e.type for e in result.events]
    assert types == [
        "turn.started",
        "model.requested",
        "thinking.completed",
        "tool.started",
        "tool.completed",
        "message.delta",
        "message.delta",
        "model.completed",
        "message.completed",
        "turn.completed",
    ]
    tool = result.events[3].payload
    assert (tool.call_id, tool.name) == ("c1", "echo")


def test_a_program_speaking_seed_001_names_conforms(program):
    profile = ConformanceProfile(
        prompt="reply ok", slow_prompt="sleep 30", config={"command": program}
    )
    report = run_conformance("stdio-jsonl", timeout=30, profile=profile)
    failed = [(c.name, c.detail) for c in report.checks if not c.passed]
    assert report.passed, failed


def test_the_table_maps_only_to_our_types():
    from harness_hookspecs import EVENT_TYPES

    assert set(SEED_001_NAMES.values()) <= EVENT_TYPES
    assert normalize_event("run_end", {"status": "failed"})[0] == "turn.failed"
    assert normalize_event("run.cancelled", {})[0] == "turn.cancelled"
    # ours pass through; an unknown name stays unknown (the closed union refuses it)
    assert normalize_event("message.delta", {"text": "x"}) == ("message.delta", {"text": "x"})
    assert normalize_event("adapter.custom", {})[0] == "adapter.custom"
