"""``Controller.rewind`` killed with SIGKILL: the next controller to resume the session finds
the workspace whole (as before the rewind, or as the checkpoint has it), finishes a journaled
rewind (files, conversation) and records its ``session.rewound`` once; the ledger loses
nothing."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest

from harness_core import Controller, plugins_from
from harness_core.checkpoints import JOURNAL, store_directory

#: The harness both processes use: it answers with the conversation it sees.
HARNESS = textwrap.dedent(
    """
    from harness_core import harness

    @harness("memo", features=("resume", "checkpoint"))
    async def memo(message, session):
        seen = ";".join(text for role, text in session.history if role == "user")
        return f"seen [{seen}]"
    """
)

#: Resumes the session, says "go", rewinds to the checkpoint given (killed meanwhile).
REWINDER = HARNESS + textwrap.dedent(
    """
    import sys
    import anyio
    from harness_core import Controller, plugins_from

    async def main():
        ledger, state, session, checkpoint = sys.argv[1:5]
        controller = Controller(plugins=plugins_from([memo]), ledger=ledger, state_dir=state)
        async with controller:
            await controller.resume_session(session)
            print("go", flush=True)
            await controller.rewind(session, checkpoint)
            print("done", flush=True)

    anyio.run(main)
    """
)


def _memo():
    namespace: dict = {}
    exec(HARNESS, namespace)
    return namespace["memo"]


def tree_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(f"{path.relative_to(root).as_posix()}\0{os.lstat(path).st_mode:o}\0".encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _fill(ws: Path, generation: str) -> None:
    for n in range(1500):
        path = ws / f"d{n % 30}" / f"f{n}.txt"
        path.parent.mkdir(exist_ok=True)
        if generation == "second" and n % 3 == 0:
            path.unlink(missing_ok=True)
        else:
            path.write_text(f"{generation} {n}\n" * 20)
    if generation == "second":
        (ws / "added").mkdir(exist_ok=True)
        for n in range(500):
            (ws / "added" / f"g{n}").write_text("added")


@pytest.mark.parametrize("kill_at", ["journal", 0.0, 0.4, 0.9])
def test_a_rewind_killed_midway_is_finished_and_recorded_on_resume(tmp_path, kill_at):
    ws = tmp_path / "ws"
    ws.mkdir()
    ledger, state = f"sqlite:///{tmp_path}/ledger.sqlite", tmp_path / "state"
    memo = _memo()

    def controller() -> Controller:
        return Controller(
            plugins=plugins_from([memo]), ledger=ledger, state_dir=state, checkpoints=True
        )

    async def setup():
        async with controller() as c:
            ref = await c.open_session(harness="memo", workspace=str(ws))
            _fill(ws, "first")
            first = tree_hash(ws)  # what turn 1's start checkpoint holds
            await c.run_turn(ref, "ONE")
            _fill(ws, "second")
            await c.run_turn(ref, "TWO")
            await c.run_turn(ref, "THREE")
            return ref, first, c.events(ref.session_id)

    ref, first_hash, before = anyio.run(setup)
    starts = [
        e for e in before if e.type == "checkpoint.created" and e.payload.reason == "turn-start"
    ]
    journal = store_directory(state.absolute(), ref.session_id) / JOURNAL
    before_hash = tree_hash(ws)
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            REWINDER,
            ledger,
            str(state),
            ref.session_id,
            starts[0].payload.checkpoint_id,
        ],
        stdout=subprocess.PIPE,
    )
    assert child.stdout is not None
    assert child.stdout.readline() == b"go\n"
    if kill_at == "journal":  # the moment the rewind has started on the files
        deadline = time.monotonic() + 30
        while not journal.exists() and time.monotonic() < deadline:
            time.sleep(0.0005)
        assert journal.exists(), "the rewind never journaled"
    else:
        time.sleep(kill_at)
    child.send_signal(signal.SIGKILL)
    child.wait()
    journaled = journal.exists()

    async def resume():
        async with controller() as c:
            await c.resume_session(ref.session_id)
            after = await c.run_turn(ref, "FOUR")
            return after, c.events(ref.session_id)

    after, every = anyio.run(resume)
    print(f"\nkilled at {kill_at}: journal {'present' if journaled else 'absent'}")
    assert not journal.exists()
    assert every[: len(before)] == before  # nothing recorded is lost
    rewound = [e for e in every if e.type == "session.rewound"]
    assert len(rewound) <= 1
    workspace = tree_hash(ws)
    if journaled or rewound:
        # finished: the files, the conversation and its one event
        assert workspace == first_hash and len(rewound) == 1
        assert rewound[0].payload.conversation and rewound[0].payload.turns_kept == 0
        assert after.text == "seen [FOUR]"
    else:  # killed before the rewind touched anything
        assert workspace == before_hash
        assert after.text == "seen [ONE;TWO;THREE;FOUR]"
    if kill_at == "journal":
        assert journaled and rewound[0].sequence > before[-1].sequence
