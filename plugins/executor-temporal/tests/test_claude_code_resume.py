"""A real CLI across workers: Claude Code (against the fake model) runs turn 1 on worker A;
worker A stops; turn 2 runs on worker B, which restores the session's state_dir (the CLI's
transcript) from the shared directory both workers mount (``harness worker --shared-state``)."""

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

from harness_core.testing.clis import NPM_BIN
from harness_core.testing.fake_model import FakeModelServer, Match, Step, Usage

SECRET = "sk-ant-temporal-secret-5678"


@pytest.mark.cli
def test_claude_code_turn_on_worker_a_then_turn_two_on_worker_b(
    temporal_address, postgresql_ledger_url, tmp_path: Path, workspace
):
    claude = NPM_BIN / "claude"
    if not claude.exists():
        pytest.skip(f"claude is not installed in {NPM_BIN} (run .ci/install-clis.sh)")
    script = [
        Step(text="First answer.", usage=Usage(100, 20)),
        Step(text="Second answer.", match=Match(contains="again"), usage=Usage(120, 10)),
    ]
    queue = f"q-{uuid.uuid4().hex[:8]}"
    env = {"ANTHROPIC_API_KEY": SECRET, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    shared = str(tmp_path / "shared-state")

    def worker(name: str) -> WorkerProcess:
        started = WorkerProcess(name, temporal_address, queue, postgresql_ledger_url, tmp_path,
                                env=env, shared_state=shared)  # fmt: skip
        started.wait_ready()
        return started

    with FakeModelServer(script) as server:
        config = {"cli_path": str(claude), "base_url": server.base_url}

        async def open_and_turn():
            async with await connect(temporal_address, postgresql_ledger_url, queue) as c:
                ref = await c.open_session(
                    harness="claude-code", workspace=workspace, model="claude-test", config=config
                )
                return ref, await c.run_turn(ref, "say something")

        async def turn_two(ref):
            async with await connect(temporal_address, postgresql_ledger_url, queue) as c:
                summary = await c.run_turn(ref, "say it again")
                events = c.events(ref.session_id)
                await c.close_session(ref)
                return summary, events

        a = worker("a")
        try:
            ref, first = anyio.run(open_and_turn)
        finally:
            a.stop()
        assert first.status == "completed", first
        b = worker("b")
        try:
            second, events = anyio.run(turn_two, ref)
        finally:
            b.stop()
        assert second.status == "completed", second
        assert second.usage and second.usage["input_tokens"] == 120
        # worker B's CLI resumed the transcript worker A's CLI wrote: the first turn's prompt
        # is in the second request, and B's state dir holds the restored transcript
        assert "say something" in json.dumps(server.model_requests()[-1].body)
        assert [r.step_index for r in server.model_requests()] == [0, 1]
        assert list((tmp_path / "state-b").rglob(f"projects/*/{ref.session_id}.jsonl"))
        assert server.model_requests()[0].headers.get("x-api-key")
    completed = [e.payload.text for e in events if e.type == "message.completed"]
    assert completed[-2:] == ["First answer.", "Second answer."]
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    # the credential was resolved on the workers: it is in no event and in no workflow history
    assert SECRET not in repr(events)
    assert SECRET not in anyio.run(history_json, temporal_address, ref.session_id)


async def connect(address: str, ledger: str, queue: str) -> TemporalController:
    return TemporalController(await Client.connect(address), ledger=ledger, task_queue=queue)


async def history_json(address: str, workflow_id: str) -> str:
    client = await Client.connect(address)
    texts = []
    async for run in client.list_workflows(f"WorkflowId = '{workflow_id}'"):
        history = await client.get_workflow_handle(workflow_id, run_id=run.run_id).fetch_history()
        texts.append(history.to_json())
    return "\n".join(texts)
