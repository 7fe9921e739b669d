"""Nothing lost on a crash, one writer per session: `harness run` killed with SIGKILL mid-turn
(SQLite, JSONL and PostgreSQL ledgers), and several processes resuming one session at once."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from harness_core import Controller
from harness_core.export import export_session, open_turn
from harness_core.serialize import event_to_dict

from ..ledger.ledger_samples import open_store as open_ledger
from ..ledger.ledger_samples import url_for, wait_unclaimed

HARNESS = [str(Path(sys.executable).with_name("harness"))]
RUNS = 20

# A fast stream that never ends its turn (the run is killed); "finish" ends at once.
STREAM = """
import json, sys
request = json.loads(sys.stdin.readline())
out = sys.stdout
if request["prompt"] == "finish":
    out.write('{"type": "message.delta", "text": "done"}\\n{"type": "turn.completed"}\\n')
    out.flush()
    sys.exit(0)
i = 0
while True:
    out.write('{"type": "message.delta", "text": "d%d "}\\n' % i)
    i += 1
    if i % 16 == 0:
        out.flush()
"""


def _env(tmp_path: Path, ledger: str) -> dict[str, str]:
    env = dict(os.environ)
    env["HARNESS_LEDGER"] = ledger
    env["HARNESS_STATE_DIR"] = str(tmp_path / "state")
    env["HARNESS_CORE_PLUGINS"] = "stdio-jsonl,local" + (
        ",ledger-postgresql" if ledger.startswith("postgresql") else ""
    )
    return env


def _command(program: Path, marker: str) -> str:
    return "command=" + json.dumps([sys.executable, str(program), marker])


def _leftovers(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline.split(b"\0"):
                found.append(int(entry))
    return found


def _killed_run(env: dict[str, str], program: Path, marker: str, after: int) -> list[dict]:
    """Start `harness run`, read ``after`` printed events, SIGKILL it, return all it printed."""
    process = subprocess.Popen(
        [*HARNESS, "run", "stdio-jsonl", "go", "--json", "--config", _command(program, marker)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        lines.append(line)
        if len(lines) >= after:
            break
    process.send_signal(signal.SIGKILL)
    lines.extend(process.stdout.readlines())  # what it printed before it died
    process.wait()
    return [json.loads(line) for line in lines if line.endswith(b"\n")]


def _check_integrity(ledger: str, tmp_path: Path) -> None:
    if ledger.startswith("sqlite"):
        path = "/" + ledger.split("///", 1)[1].lstrip("/")
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        connection.close()
    store = open_ledger(ledger)  # JSONL: every line parses, every session gap-free
    store.close()


async def _resume_and_finish(ledger: str, tmp_path: Path, session_id: str, program: Path):
    os.environ["HARNESS_STATE_DIR"] = str(tmp_path / "state")
    async with Controller(ledger=ledger, state_dir=tmp_path / "state") as controller:
        await controller.resume_session(
            session_id, config={"command": [sys.executable, str(program), "next"]}
        )
        return await controller.run_turn(session_id, "finish")


def _ledger_for_run(kind: str, tmp_path: Path, run: int, request) -> str:
    # A ledger per run for the file stores: the JSONL store reads its whole file on open, and
    # 20 runs' worth would make this test quadratic without testing anything more. PostgreSQL
    # reads by session: one ledger (schema) for all runs.
    if kind == "postgresql":
        return url_for(kind, tmp_path, request)
    return (
        f"sqlite:///{tmp_path}/{run}.sqlite" if kind == "sqlite" else f"jsonl:///{tmp_path}/{run}"
    )


@pytest.mark.parametrize("kind", ["sqlite", "jsonl", "postgresql"])
def test_kill_9_mid_turn_loses_nothing_and_the_next_run_closes_the_turn(kind, tmp_path, request):
    program = tmp_path / "stream.py"
    program.write_text(STREAM)
    rng = random.Random(12)
    printed_total = 0
    started = time.monotonic()
    for run in range(RUNS):
        ledger = _ledger_for_run(kind, tmp_path, run, request)
        env = _env(tmp_path, ledger)
        marker = f"h6-crash-{kind}-{run}-{os.getpid()}"
        printed = _killed_run(env, program, marker, after=rng.randint(3, 1500))
        printed_total += len(printed)
        session_id = printed[0]["session_id"]
        assert printed[0]["type"] == "session.opened"

        store = open_ledger(ledger)
        stored = {e.event_id: event_to_dict(e) for e in store.events(session_id)}
        wait_unclaimed(store, session_id)  # PostgreSQL: until the server saw the connection go
        # Before anyone resumes it, readers show the killed turn as interrupted.
        assert open_turn(store, session_id) == "interrupted"
        assert [t["status"] for t in export_session(store, session_id)["turns"]] == ["interrupted"]
        store.close()
        if run == 0:
            listed = subprocess.run(
                [*HARNESS, "sessions"], capture_output=True, text=True, env=env, timeout=60
            )
            (row,) = [line.split() for line in listed.stdout.splitlines() if session_id in line]
            assert row[:3] == [session_id, "stdio-jsonl", "interrupted"]
        missing = [e["event_id"] for e in printed if stored.get(e["event_id"]) != e]
        assert not missing, f"run {run}: {len(missing)} printed events not in the ledger"
        _check_integrity(ledger, tmp_path)

        result = anyio.run(_resume_and_finish, ledger, tmp_path, session_id, program)
        assert result.status == "completed" and result.text == "done"

        store = open_ledger(ledger)
        events = store.events(session_id)
        store.close()
        terminals: dict[str, list] = {}
        for event in events:
            if event.turn_id is not None:
                terminals.setdefault(event.turn_id, [])
                if event.type in ("turn.completed", "turn.failed", "turn.cancelled"):
                    terminals[event.turn_id].append(event)
        assert all(len(ends) == 1 for ends in terminals.values()), run  # one terminal per turn
        killed_turn = printed[1]["turn_id"]
        (end,) = terminals[killed_turn]
        assert (end.type, end.payload.reason) == ("turn.failed", "interrupted")
        assert [e.type for e in events].count("session.resumed") == 1
        # The killed run's harness program dies on its broken pipe.
        deadline = time.monotonic() + 5
        while _leftovers(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _leftovers(marker) == []
    assert printed_total > RUNS * 3
    print(f"{kind}: {RUNS} runs, {printed_total} printed events, {time.monotonic() - started:.1f}s")


@pytest.mark.parametrize("kind", ["sqlite", "jsonl", "postgresql"])
def test_four_processes_resuming_one_session_one_runs_three_are_refused(kind, tmp_path, request):
    ledger = url_for(kind, tmp_path, request)
    env = _env(tmp_path, ledger)
    reference = "command=" + json.dumps([sys.executable, "-m", "harness_stdio_jsonl.reference"])
    opened = subprocess.run(
        [*HARNESS, "run", "stdio-jsonl", "hello", "--json", "--config", reference],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert opened.returncode == 0, opened.stderr
    session_id = json.loads(opened.stdout.splitlines()[0])["session_id"]
    store = open_ledger(ledger)
    before = store.last_sequence(session_id)
    store.close()

    resume = ["run", "stdio-jsonl", "sleep 4", "--session", session_id, "--json"]
    runs = [
        subprocess.Popen(
            [*HARNESS, *resume, "--config", reference],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(4)
    ]
    outcomes = [(run.wait(timeout=60), *run.communicate()) for run in runs]
    codes = sorted(code for code, _, _ in outcomes)
    assert codes == [0, 2, 2, 2], outcomes
    for code, out, err in outcomes:
        if code:
            assert out == ""
            # Refused by the ledger's claim, or earlier by the CLI seeing the winner's turn.
            (line,) = err.splitlines()
            assert line in (
                "harness: error: session-busy: another process is running this session",
                f"harness: error: turn-active: a harness run is running a turn in it "
                f"(harness cancel {session_id})",
            )

    store = open_ledger(ledger)
    added = store.events(session_id, after=before)
    assert not store.claimed(session_id)  # the winner released it when it exited
    store.close()
    types = [e.type for e in added]
    assert types.count("session.resumed") == 1
    assert types[:2] == ["session.resumed", "turn.started"] and types[-1] == "turn.completed"
    assert "session.opened" not in types
