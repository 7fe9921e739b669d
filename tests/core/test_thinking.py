"""Thinking events: recorded in order, redacted like messages, and kept out of the ledger (a
count only) for a session opened with ``record_thinking=False`` - also after a resume."""

from __future__ import annotations

import json

import anyio
from harness_hookspecs import ThinkingCompleted, ThinkingDelta

from harness_core import harness
from harness_core.export import export_session

KEY = "sk-ant-" + "t" * 24
THOUGHT = f"the key is {KEY}, so "


@harness("thinker")
async def thinker(message, session):
    yield ThinkingDelta(text="the key is ")
    yield ThinkingDelta(text=f"{KEY}, so ")
    yield ThinkingCompleted(text=THOUGHT)
    yield "done"


def _run(make_controller, workspace, **options):
    async def main():
        async with make_controller(thinker) as controller:
            ref = await controller.open_session(harness="thinker", workspace=workspace, **options)
            first = await controller.run_turn(ref, "think")
            await controller.close_session(ref)
            return ref, first, export_session(controller.ledger, ref.session_id)

    return anyio.run(main)


def test_thinking_is_recorded_in_order_and_redacted(make_controller, workspace):
    _, result, bundle = _run(make_controller, workspace)
    types = [e.type for e in result.events]
    assert types[:4] == ["turn.started", "thinking.delta", "thinking.delta", "thinking.completed"]
    assert types.index("thinking.completed") < types.index("message.delta")
    completed = result.events[3].payload
    assert completed.text == "the key is [REDACTED], so "
    assert completed.characters == len(THOUGHT)  # counted before redaction: the CLI's length
    dumped = json.dumps(bundle)
    assert KEY not in dumped
    assert "[REDACTED]" in dumped and "thinking.delta" in dumped


def test_record_thinking_off_keeps_only_a_count(make_controller, workspace):
    _, result, bundle = _run(make_controller, workspace, record_thinking=False)
    thinking = [e for e in result.events if e.type.startswith("thinking.")]
    assert [e.type for e in thinking] == ["thinking.completed"]
    assert thinking[0].payload.text is None
    assert thinking[0].payload.characters == len(THOUGHT)
    dumped = json.dumps(bundle)
    assert "the key is" not in dumped and "thinking.delta" not in dumped
    opened = bundle["events"][0]
    assert opened["type"] == "session.opened"
    assert opened["payload"]["record_thinking"] is False


def test_record_thinking_off_holds_after_resume(make_controller, workspace, tmp_path):
    ledger = f"sqlite:///{tmp_path}/resume.sqlite"

    async def main():
        async with make_controller(thinker, ledger=ledger) as controller:
            ref = await controller.open_session(
                harness="thinker", workspace=workspace, record_thinking=False
            )
            await controller.run_turn(ref, "one")
        async with make_controller(thinker, ledger=ledger) as controller:
            await controller.resume_session(ref.session_id)
            second = await controller.run_turn(ref, "two")
            return [e.payload for e in second.events if e.type.startswith("thinking.")]

    thinking = anyio.run(main)
    assert thinking == [ThinkingCompleted(text=None, characters=len(THOUGHT))]
