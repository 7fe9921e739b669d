"""Killed with SIGKILL while 20 turns stream at once through one Controller, their producers
paced by ``max_backlog`` and their iterators sharing the ledger's commits: every event a turn's
iterator or an ``on_event`` observer received is in the ledger afterwards, gap-free (what
"durable before delivered" promises when many waits share one flush)."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

HOST = """
import sys
import anyio
from harness_core import Controller, harness, hookimpl, plugins_from

out = sys.stdout


@harness("endless")
async def endless(message, session):
    index = 0
    while True:
        yield f"d{index} "
        index += 1
        await anyio.sleep(0)


class Observer:
    @hookimpl
    def on_event(self, event):
        out.write(f"observer {event.session_id} {event.sequence}\\n")


async def main():
    async with Controller(
        plugins=plugins_from([endless, Observer()]),
        ledger=sys.argv[1],
        state_dir=sys.argv[2],
        max_backlog=50,
    ) as controller:
        refs = [
            await controller.open_session(harness="endless", workspace=sys.argv[2])
            for _ in range(20)
        ]

        async def one(ref):
            async with controller.turn(ref, "go") as turn:
                async for event in turn:
                    out.write(f"iterator {event.session_id} {event.sequence}\\n")
                    out.flush()

        async with anyio.create_task_group() as group:
            for ref in refs:
                group.start_soon(one, ref)


anyio.run(main)
"""


def test_kill_9_with_turns_streaming_at_once_loses_nothing_anyone_received(tmp_path: Path):
    host = tmp_path / "host.py"
    host.write_text(HOST)
    ledger = tmp_path / "ledger.sqlite"
    process = subprocess.Popen(
        [sys.executable, str(host), f"sqlite:///{ledger}", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    lines: list[bytes] = []
    for line in process.stdout:
        lines.append(line)
        if len(lines) >= 3000:
            break
    process.send_signal(signal.SIGKILL)
    lines.extend(process.stdout.readlines())  # what it wrote before it died
    process.wait()
    received = [line.decode().split() for line in lines if line.endswith(b"\n")]
    iterated = {(sid, int(seq)) for who, sid, seq in received if who == "iterator"}
    observed = {(sid, int(seq)) for who, sid, seq in received if who == "observer"}
    assert len({sid for sid, _ in iterated}) >= 10, "the turns did not stream at once"
    assert iterated and observed

    connection = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True)
    try:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = set(connection.execute("SELECT session_id, sequence FROM events").fetchall())
    finally:
        connection.close()
    assert not iterated - stored, sorted(iterated - stored)[:5]
    assert not observed - stored, sorted(observed - stored)[:5]
    # each session's stored events are gap-free from 1
    by_session: dict[str, list[int]] = {}
    for sid, seq in stored:
        by_session.setdefault(sid, []).append(seq)
    for seqs in by_session.values():
        assert sorted(seqs) == list(range(1, len(seqs) + 1))
