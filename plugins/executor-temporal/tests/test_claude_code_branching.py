"""Steer, fork and rewind of real Claude Code sessions (against the fake model) through Temporal:
the host's ``TemporalController`` asks the workflow, a ``harness worker --checkpoints`` process
runs the CLI. What the fake model receives says what reached the CLI."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import anyio
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from executor_temporal.client import TemporalController
from temporal_workers import WorkerProcess
from temporalio.client import Client
from test_cancel import replay_all

from harness_core.testing.clis import NPM_BIN
from harness_core.testing.fake_model import FakeModelServer, Match, Step, ToolCall

SECRET = "sk-ant-temporal-branching-4321"
TEAL = "also mention the colour teal"


def body(server: FakeModelServer, index: int = -1) -> str:
    return json.dumps(server.model_requests()[index].body)


@pytest.mark.cli
def test_claude_code_steer_fork_and_rewind_on_a_worker(
    temporal_address, postgresql_ledger_url, tmp_path: Path, workspace
):
    claude = NPM_BIN / "claude"
    if not claude.exists():
        pytest.skip(f"claude is not installed in {NPM_BIN} (run .ci/install-clis.sh)")
    queue = f"q-{uuid.uuid4().hex[:8]}"
    env = {"ANTHROPIC_API_KEY": SECRET, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    sessions: list[str] = []

    def config(server: FakeModelServer) -> dict[str, str]:
        return {"cli_path": str(claude), "base_url": server.base_url}

    async def steer(server: FakeModelServer):
        """A turn whose first model reply waits 3 s: steered meanwhile from the host."""
        async with TemporalController(
            await Client.connect(temporal_address), ledger=postgresql_ledger_url, task_queue=queue
        ) as c:
            ref = await c.open_session(harness="claude-code", workspace=workspace,
                                       model="claude-test", config=config(server))  # fmt: skip
            sessions.append(ref.session_id)
            async with c.turn(ref, "say hi") as turn:
                async for event in turn:
                    if event.type == "turn.started":
                        while not server.model_requests():
                            await anyio.sleep(0.05)
                        await c.steer(ref, TEAL, turn_id=turn.turn_id)
                summary = await turn.result()
            await c.close_session(ref)
            return summary, turn.events

    async def branch(server: FakeModelServer):
        async with TemporalController(
            await Client.connect(temporal_address), ledger=postgresql_ledger_url, task_queue=queue
        ) as c:
            parent = await c.open_session(harness="claude-code", workspace=workspace,
                                          model="claude-test", config=config(server))  # fmt: skip
            sessions.append(parent.session_id)
            bodies = {}
            for word in ("ALPHA", "BRAVO"):
                assert (await c.run_turn(parent, f"the word is {word}")).ok
            events = c.events(parent.session_id)
            ends = [e for e in events if e.type == "turn.completed"]
            starts = [
                e.payload.checkpoint_id
                for e in events
                if e.type == "checkpoint.created" and e.payload.reason == "turn-start"
            ]
            child = await c.fork(parent, at=ends[0].event_id)
            sessions.append(child.session_id)
            assert (await c.run_turn(child, "the word is CHARLIE")).ok
            bodies["child"] = body(server)
            assert (await c.run_turn(parent, "the word is DELTA")).ok
            bodies["parent"] = body(server)
            rewound = await c.rewind(parent, starts[1])  # before BRAVO
            assert (await c.run_turn(parent, "the word is ECHO")).ok
            bodies["rewound"] = body(server)
            for ref in (child, parent):
                await c.close_session(ref)
            return rewound, bodies, c.events(parent.session_id), c.events(child.session_id)

    steer_script = [
        Step(text="Looking.", tool_calls=[ToolCall("Bash", {"command": "echo hi"})], delay=3),
        Step(text="Done, teal.", match=Match(tool_result=True)),
    ]
    worker = None
    try:
        worker = WorkerProcess("w", temporal_address, queue, postgresql_ledger_url, tmp_path,
                               env=env, checkpoints=True)  # fmt: skip
        worker.wait_ready()
        with FakeModelServer(steer_script) as server:
            summary, steered_events = anyio.run(steer, server)
            steer_requests = [json.dumps(r.body) for r in server.model_requests()]
        with FakeModelServer([Step(text="noted", times=None)]) as server:
            rewound, bodies, parent_events, child_events = anyio.run(branch, server)
    finally:
        if worker is not None:
            worker.stop()
            print("worker log:", worker.log.read_text()[-3000:])
    replay_all(temporal_address, sessions)

    # steer: in the turn's next model request, not its first; one turn, one terminal
    assert summary.status == "completed", summary
    kinds = [e.type for e in steered_events]
    assert kinds.count("turn.steered") == 1 and kinds[-1] == "turn.completed"
    assert TEAL not in steer_requests[0] and TEAL in steer_requests[-1]
    assert len(steer_requests) == 2
    # fork at turn 1: the child's request holds ALPHA and CHARLIE, not BRAVO
    assert "ALPHA" in bodies["child"] and "CHARLIE" in bodies["child"]
    assert "BRAVO" not in bodies["child"]
    assert all(w in bodies["parent"] for w in ("ALPHA", "BRAVO", "DELTA"))
    assert "CHARLIE" not in bodies["parent"]
    for side in (parent_events, child_events):
        assert [e.type for e in side].count("session.forked") == 1
    # rewind to before BRAVO: ECHO's request holds ALPHA only of the earlier turns
    assert rewound.conversation and rewound.turns_kept == 1
    assert "ALPHA" in bodies["rewound"] and "ECHO" in bodies["rewound"]
    assert not any(w in bodies["rewound"] for w in ("BRAVO", "DELTA", "CHARLIE"))
    assert SECRET not in repr(parent_events)
