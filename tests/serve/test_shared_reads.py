"""Followers of one session woken together share one ledger read and its encoded frames
(:class:`harness_core.serve.runner.SharedReads`, issue 34: 100 followers were 100 reads per
wake-up); each still gets every event once, in order, and a shared read whose follower leaves
does not strand the others."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from harness_core import Controller, plugins_from
from harness_core.serve.runner import Server
from harness_core.serve.sse import follow

from .conftest import scripted

FOLLOWERS = 10


async def _recorded_session(controller: Controller, workspace: Path) -> str:
    ref = await controller.open_session(harness="scripted", workspace=str(workspace))
    result = await controller.run_turn(ref, "tool call please")
    assert result.ok
    return ref.session_id


async def _frames(server: Server, session_id: str) -> list[str]:
    return [frame async for frame in follow(server, session_id, 0, live=False)]


def _sequences(frames: list[str]) -> list[int]:
    text = "".join(frames)
    return [int(line[4:]) for line in text.splitlines() if line.startswith("id: ")]


def test_followers_woken_together_share_one_read(tmp_path, monkeypatch):
    reads: list[int] = []
    real = Server.events

    async def counted(self: Server, session_id: str, after: int, limit: int | None = None):
        reads.append(after)
        return await real(self, session_id, after, limit)

    monkeypatch.setattr(Server, "events", counted)

    async def main() -> tuple[list[list[str]], int]:
        ledger = f"sqlite:///{tmp_path}/ledger.sqlite"
        async with Controller(plugins=plugins_from([scripted]), ledger=ledger) as controller:
            session_id = await _recorded_session(controller, tmp_path)
            recorded = len(controller.ledger.events(session_id))
            got: list[list[str]] = [[] for _ in range(FOLLOWERS)]
            async with anyio.create_task_group() as group:
                server = Server(controller=controller, task_group=group, token="t")

                async def one(index: int) -> None:
                    got[index] = await _frames(server, session_id)

                for index in range(FOLLOWERS):
                    group.start_soon(one, index)
        return got, recorded

    got, recorded = anyio.run(main)
    assert reads == [0]  # one read served all ten
    expected = list(range(1, recorded + 1))
    for frames in got:
        assert frames == got[0]  # the same frames, encoded once
        assert _sequences(frames) == expected  # every event once, in order
        assert frames[-1].startswith("event: end")


def test_a_follower_that_leaves_mid_read_does_not_strand_the_others(tmp_path, monkeypatch):
    gate = None
    reads: list[int] = []
    real = Server.events

    async def held(self: Server, session_id: str, after: int, limit: int | None = None):
        reads.append(after)
        if len(reads) == 1:
            assert gate is not None
            await gate.wait()  # the first read hangs until its follower is cancelled
        return await real(self, session_id, after, limit)

    monkeypatch.setattr(Server, "events", held)

    async def main() -> tuple[list[str], int]:
        nonlocal gate
        gate = anyio.Event()
        ledger = f"sqlite:///{tmp_path}/ledger.sqlite"
        async with Controller(plugins=plugins_from([scripted]), ledger=ledger) as controller:
            session_id = await _recorded_session(controller, tmp_path)
            recorded = len(controller.ledger.events(session_id))
            joined: list[str] = []
            async with anyio.create_task_group() as group:
                server = Server(controller=controller, task_group=group, token="t")
                leaving = anyio.CancelScope()

                async def leaver() -> None:
                    with leaving:
                        await _frames(server, session_id)

                async def joiner() -> None:
                    joined.extend(await _frames(server, session_id))

                group.start_soon(leaver)
                while not reads:
                    await anyio.sleep(0.01)
                group.start_soon(joiner)
                await anyio.sleep(0.1)  # the joiner waits on the leaver's read
                assert reads == [0] and not joined
                leaving.cancel()
        return joined, recorded

    joined, recorded = anyio.run(main)
    assert reads == [0, 0]  # the joiner read again, alone
    assert _sequences(joined) == list(range(1, recorded + 1))


@pytest.fixture(autouse=True)
def _state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_STATE_DIR", str(tmp_path / "state"))
