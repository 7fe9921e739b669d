"""Retried turns: a turn run again under its id after its writer died, on every durable store.

A real process runs the first attempt and is killed with SIGKILL mid-stream; the retry (attempt
2) in this process records one ``turn.restarted`` and one terminal, and readers keep only its
output. On PostgreSQL the retrying store first claims the session, which fences the dead writer.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from harness_hookspecs import TERMINAL_TYPES, HarnessError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ledger"))
from ledger_samples import open_store, url_for

from harness_core import Controller, harness, plugins_from
from harness_core.export import export_session
from harness_core.ledger import ClaimingStore

TURN_ID = "turn_caller_chosen_42"

FIRST_ATTEMPT = """
import sys
import anyio
from harness_core import Controller, harness, plugins_from
from harness_core.plugins import get_plugins

@harness("retry-demo")
async def slow(message, session):
    for n in range(5):
        yield f"first-{{n}} "
    await anyio.sleep(3600)  # the writer dies here
    yield "never"

async def main():
    from harness_core.ledger import open_ledger
    store = open_ledger({url!r}, schemes=get_plugins().ledger_schemes)
    async with Controller(plugins=plugins_from([slow]), ledger=store) as controller:
        ref = await controller.open_session(harness="retry-demo", workspace={workspace!r})
        print(ref.session_id, flush=True)
        async with controller.turn(ref, "do it", turn_id={turn_id!r}) as turn:
            seen = 0
            async for event in turn:
                seen += event.type == "message.delta"
                if seen == 5:
                    await anyio.to_thread.run_sync(store.flush)  # durable, then die
                    print("durable", flush=True)

anyio.run(main)
"""


@harness("retry-demo")
async def second_attempt(message: Any, session: Any) -> Any:
    yield "second "
    yield "attempt"


def turn_events(store: Any, session_id: str) -> list[Any]:
    return [e for e in store.events(session_id) if e.turn_id == TURN_ID]


@pytest.mark.parametrize("kind", ["jsonl", "sqlite", "postgresql"])
def test_retry_after_the_writer_died_restarts_the_turn_once(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = url_for(kind, tmp_path, request)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    code = textwrap.dedent(FIRST_ATTEMPT).format(url=url, workspace=str(workspace), turn_id=TURN_ID)
    first = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert first.stdout is not None
        session_id = first.stdout.readline().strip()
        assert first.stdout.readline().strip() == "durable", first.stderr.read()  # type: ignore[union-attr]
        time.sleep(0.1)
    finally:
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=30)

    store = open_store(url)
    try:
        abandoned = turn_events(store, session_id)
        assert [e.type for e in abandoned] == ["turn.started"] + ["message.delta"] * 5
        if isinstance(store, ClaimingStore):
            assert store.claim(session_id) >= 1  # fence whatever wrote before
            assert store.writer_epoch(session_id) >= 1

        async def retry() -> Any:
            async with Controller(
                plugins=plugins_from([second_attempt]), ledger=store, state_dir=tmp_path / "st"
            ) as controller:
                ref = await controller.resume_session(session_id)
                with pytest.raises(HarnessError) as caught:  # attempts must grow
                    await controller.run_turn(ref, "do it", turn_id=TURN_ID, attempt=1)
                assert caught.value.reason == "invalid-request"
                result = await controller.run_turn(ref, "do it", turn_id=TURN_ID, attempt=2)
                with pytest.raises(HarnessError) as caught:  # it ended: its result stands
                    await controller.run_turn(ref, "do it", turn_id=TURN_ID, attempt=3)
                assert caught.value.reason == "invalid-request"
                return result

        result = anyio.run(retry)
        assert result.ok and result.text == "second attempt"
        events = turn_events(store, session_id)
        types = [e.type for e in events]
        assert types.count("turn.started") == 1
        assert types.count("turn.restarted") == 1
        # The resume closed the dead attempt (crash recovery); the retry's attempt ends once.
        terminals = [e for e in events if e.type in TERMINAL_TYPES]
        assert [e.type for e in terminals] == ["turn.failed", "turn.completed"]
        assert terminals[0].payload.reason == "interrupted" and types[-1] == "turn.completed"
        assert terminals[0].sequence < events[types.index("turn.restarted")].sequence
        restarted = events[types.index("turn.restarted")]
        assert restarted.payload.attempt == 2
        [turn] = [t for t in export_session(store, session_id)["turns"] if t["turn_id"] == TURN_ID]
        assert turn["status"] == "completed" and turn["attempt"] == 2
        assert turn["text"] == "second attempt"  # nothing of the abandoned attempt
        sequences = [e.sequence for e in store.events(session_id)]
        assert sequences == list(range(1, len(sequences) + 1))
    finally:
        store.close()
