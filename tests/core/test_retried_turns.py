"""Retried turns: a turn run again under its id after its writer died, on every store.

A real process runs the first attempt and is killed with SIGKILL mid-stream; the retry (attempt
2) in this process resumes the session naming the turn it retries, and records one
``turn.restarted`` and the turn's one terminal; readers keep only its output. On PostgreSQL the
dead writer's claim ends with its connection, so the resume's claim goes through (a live
writer's would be refused). Then every way a retry may not come: the turn still ends once, as
``interrupted``.
"""

from __future__ import annotations

import hashlib
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
from harness_hookspecs import (
    TERMINAL_TYPES,
    Event,
    HarnessError,
    MessageDelta,
    SessionResumed,
    TurnStarted,
)

from harness_core import Controller, harness, plugins_from
from harness_core.clock import now
from harness_core.export import export_session, open_turn
from harness_core.retry import dangling_turn

from ..ledger.ledger_samples import DURABLE, KINDS, open_store, url_for, wait_unclaimed

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


@pytest.mark.parametrize("kind", DURABLE)
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
        wait_unclaimed(store, session_id)  # PostgreSQL: the dead writer's connection is gone

        async def retry() -> Any:
            async with Controller(
                plugins=plugins_from([second_attempt]), ledger=store, state_dir=tmp_path / "st"
            ) as controller:
                ref = await controller.resume_session(session_id, retrying=TURN_ID)
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
        # The resume kept the dead attempt open for its retry: the turn ends once, completed.
        assert [e.type for e in events if e.type in TERMINAL_TYPES] == ["turn.completed"]
        assert types[-1] == "turn.completed"
        restarted = events[types.index("turn.restarted")]
        assert restarted.payload.attempt == 2
        [turn] = [t for t in export_session(store, session_id)["turns"] if t["turn_id"] == TURN_ID]
        assert turn["status"] == "completed" and turn["attempt"] == 2
        assert turn["text"] == "second attempt"  # nothing of the abandoned attempt
        sequences = [e.sequence for e in store.events(session_id)]
        assert sequences == list(range(1, len(sequences) + 1))
    finally:
        store.close()


# -- a retry that does not come: the turn left open still ends once ---------------------------


def left_open(store: Any, tmp_path: Path, *, resumed_after: bool = False) -> str:
    """A session whose turn ``TURN_ID`` a dead process left open (``resumed_after``: and whose
    last event is a ``session.resumed``: a resume that kept it for a retry, then died)."""

    async def opened() -> str:
        async with Controller(
            plugins=plugins_from([second_attempt]), ledger=store, state_dir=tmp_path / "st"
        ) as controller:
            ref = await controller.open_session(harness="retry-demo", workspace=str(tmp_path))
            return ref.session_id  # left without closing: the session stays open

    session_id = anyio.run(opened)
    prefix = "ev_" + hashlib.sha1(session_id.encode()).hexdigest()[:16] + "_"
    written: list[tuple[str | None, Any]] = [
        (TURN_ID, TurnStarted(prompt="do it")),
        (TURN_ID, MessageDelta(text="first ")),
    ]
    if resumed_after:
        written.append((None, SessionResumed(provider="retry-demo", target="local")))
    first = store.last_sequence(session_id) + 1
    store.append([
        Event(event_id=f"{prefix}{n}", sequence=n, session_id=session_id, turn_id=turn_id,
              harness="retry-demo", timestamp=now(), type=payload.TYPE, payload=payload)
        for n, (turn_id, payload) in enumerate(written, start=first)
    ])  # fmt: skip
    store.flush()
    return session_id


async def plain_resume_then_retry(controller: Controller, session_id: str) -> None:
    await controller.resume_session(session_id)  # crash recovery ends the turn
    with pytest.raises(HarnessError) as caught:
        await controller.run_turn(session_id, "do it", turn_id=TURN_ID, attempt=2)
    assert caught.value.reason == "invalid-request"  # interrupted is its result


async def another_turn_instead(controller: Controller, session_id: str) -> None:
    await controller.resume_session(session_id, retrying=TURN_ID)
    assert (await controller.run_turn(session_id, "something else")).ok


async def closed_instead(controller: Controller, session_id: str) -> None:
    await controller.resume_session(session_id, retrying=TURN_ID)
    await controller.close_session(session_id)


async def left_instead(controller: Controller, session_id: str) -> None:
    await controller.resume_session(session_id, retrying=TURN_ID)  # and the controller exits


async def retrying_another_turn(controller: Controller, session_id: str) -> None:
    await controller.resume_session(session_id, retrying="turn_not_the_open_one")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "script",
    [plain_resume_then_retry, another_turn_instead, closed_instead, left_instead,
     retrying_another_turn],
)  # fmt: skip
def test_a_turn_kept_for_a_retry_that_does_not_come_ends_once_as_interrupted(
    kind: str, script: Any, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = open_store(url_for(kind, tmp_path, request))
    try:
        session_id = left_open(store, tmp_path)
        assert open_turn(store, session_id) == "interrupted"

        async def main() -> None:
            async with Controller(
                plugins=plugins_from([second_attempt]), ledger=store, state_dir=tmp_path / "st"
            ) as controller:
                await script(controller, session_id)

        anyio.run(main)
        assert_ended_once_as_interrupted(store, session_id)
    finally:
        store.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_resume_that_kept_a_turn_then_died_leaves_it_to_the_next_resume(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = open_store(url_for(kind, tmp_path, request))
    try:
        session_id = left_open(store, tmp_path, resumed_after=True)
        last = store.last_sequence(session_id)
        assert store.events(session_id)[-1].type == "session.resumed"
        assert dangling_turn(store, session_id, last) == TURN_ID  # found behind session events
        assert open_turn(store, session_id) == "interrupted"

        async def main() -> None:
            async with Controller(
                plugins=plugins_from([second_attempt]), ledger=store, state_dir=tmp_path / "st"
            ) as controller:
                await controller.resume_session(session_id)

        anyio.run(main)
        assert_ended_once_as_interrupted(store, session_id)
        assert dangling_turn(store, session_id, store.last_sequence(session_id)) is None
    finally:
        store.close()


def assert_ended_once_as_interrupted(store: Any, session_id: str) -> None:
    events = store.events(session_id)
    ours = [e for e in events if e.turn_id == TURN_ID]
    terminals = [e for e in ours if e.type in TERMINAL_TYPES]
    assert [(e.type, e.payload.reason) for e in terminals] == [("turn.failed", "interrupted")]
    assert "turn.restarted" not in [e.type for e in ours]
    for event in events:  # every other turn ends once too, and after ours ended
        if event.turn_id not in (None, TURN_ID) and event.type == "turn.started":
            assert event.sequence > terminals[0].sequence
    ends: dict[str, int] = {}
    for event in events:
        if event.turn_id is not None and event.type in TERMINAL_TYPES:
            ends[event.turn_id] = ends.get(event.turn_id, 0) + 1
    assert set(ends.values()) == {1}
    [turn] = [t for t in export_session(store, session_id)["turns"] if t["turn_id"] == TURN_ID]
    assert (turn["status"], turn.get("reason")) == ("failed", "interrupted")
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
