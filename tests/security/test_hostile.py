"""Hostile input through the real CLI: harnesses that exit, interrupt, emit unencodable or
oversized text or claim runtime-only facts, damaged and foreign ledgers, non-UTF-8 argv and a
strict stdout. Each ends in one clear line with the right reason, exactly one terminal, and a
session that `events` and `export` still read."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

HARNESS = str(Path(sys.executable).with_name("harness"))

HOSTILE = """
import sys
from harness_core import harness


@harness("exits")
async def exits(message, session):
    yield "before "
    sys.exit(1)


@harness("interrupts")
async def interrupts(message, session):
    yield "before "
    raise KeyboardInterrupt


@harness("generator-exit")
async def generator_exit(message, session):
    yield "before "
    raise GeneratorExit


@harness("surrogate-delta")
async def surrogate_delta(message, session):
    yield "lone \\ud800 surrogate"


@harness("surrogate-return")
async def surrogate_return(message, session):
    return "returned \\udfff text"


@harness("huge")
async def huge(message, session):
    return "x" * 10_000_000
"""

NAMES = ["exits", "interrupts", "generator-exit", "surrogate-delta", "surrogate-return", "huge"]

# A stdio-jsonl program claiming what only the runtime knows.
CLAIMS = """
import json, sys
request = json.loads(sys.stdin.readline())
kind = request["prompt"]
if kind == "host-cancel":
    print(json.dumps({"type": "turn.cancelled", "by": "host"}))
else:
    print(json.dumps({"type": "turn.failed", "reason": kind}))
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The CLI's environment with the hostile harnesses installed as a plugin distribution."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "hostile_harnesses.py").write_text(HOSTILE)
    info = site / "hostile_harnesses-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hostile-harnesses\nVersion: 0\n")
    entry_points = "".join(f"{n} = hostile_harnesses:{n.replace('-', '_')}\n" for n in NAMES)
    (info / "entry_points.txt").write_text("[harness_core]\n" + entry_points)
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(site), environment.get("PYTHONPATH")) if p
    )
    environment["HARNESS_LEDGER"] = f"sqlite:///{tmp_path}/ledger.sqlite"
    environment["HARNESS_STATE_DIR"] = str(tmp_path / "state")
    environment["HARNESS_CORE_PLUGINS"] = ",".join([*NAMES, "stdio-jsonl", "local", "echo"])
    environment["PYTHONIOENCODING"] = "utf-8:strict"
    return environment


def harness(env, *args, timeout=60):
    return subprocess.run([HARNESS, *args], capture_output=True, env=env, timeout=timeout)


def run_json(env, name, prompt="go", *extra):
    out = harness(env, "run", name, prompt, "--json", *extra)
    events = [json.loads(line) for line in out.stdout.decode().splitlines()]
    return out, events


def one_terminal_and_readable(env, session_id):
    """Exactly one terminal per turn in the ledger; `events` and `export` work (strict stdout)."""
    listed = harness(env, "events", session_id, "--json")
    assert listed.returncode == 0, listed.stderr
    readable = harness(env, "events", session_id)
    assert readable.returncode == 0, readable.stderr
    exported = harness(env, "export", session_id)
    assert exported.returncode == 0, exported.stderr
    bundle = json.loads(exported.stdout)
    events = [json.loads(line) for line in listed.stdout.decode().splitlines()]
    terminal = [
        e for e in events if e["type"] in ("turn.completed", "turn.failed", "turn.cancelled")
    ]
    assert len(terminal) == len(bundle["turns"]) == 1
    return terminal[0], bundle


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("exits", "the harness raised SystemExit"),
        ("interrupts", "the harness raised KeyboardInterrupt"),
        ("generator-exit", None),
    ],
)
def test_a_harness_raising_a_base_exception_fails_its_turn(env, name, hint):
    out, events = run_json(env, name)
    assert out.returncode == 1, out.stderr  # a failed turn, not a crash (70) or an interrupt
    assert b"Traceback" not in out.stderr and b"internal error" not in out.stderr
    assert [e["type"] for e in events][-1] == "turn.failed"
    terminal, bundle = one_terminal_and_readable(env, events[0]["session_id"])
    assert terminal["payload"]["reason"] == "provider-failed"
    if hint is not None:
        assert terminal["payload"]["hint"] == hint
    assert bundle["turns"][0]["text"] == "before "


@pytest.mark.parametrize("name", ["surrogate-delta", "surrogate-return"])
def test_lone_surrogates_are_replaced_at_the_boundary(env, name):
    out, events = run_json(env, name)
    assert out.returncode == 0, out.stderr
    terminal, bundle = one_terminal_and_readable(env, events[0]["session_id"])
    assert terminal["type"] == "turn.completed"
    text = bundle["turns"][0]["text"]
    assert "\ufffd" in text and not any(0xD800 <= ord(c) <= 0xDFFF for c in text)
    readable = harness(env, "events", events[0]["session_id"])
    assert "\ufffd".encode() in readable.stdout


def test_ten_megabytes_returned_is_a_limit_not_a_bad_request(env):
    out, events = run_json(env, "huge")
    assert out.returncode == 1
    terminal, _ = one_terminal_and_readable(env, events[0]["session_id"])
    assert terminal["payload"]["reason"] == "limit-exceeded"


@pytest.mark.parametrize(
    ("prompt", "recorded"),
    [
        ("host-cancel", ("turn.cancelled", "harness")),
        ("timeout", ("turn.failed", "provider-failed")),
        ("limit-exceeded", ("turn.failed", "provider-failed")),
        ("interrupted", ("turn.failed", "provider-failed")),
    ],
)
def test_a_harness_cannot_claim_what_only_the_runtime_knows(env, tmp_path, prompt, recorded):
    program = tmp_path / "claims.py"
    program.write_text(CLAIMS)
    config = "command=" + json.dumps([sys.executable, str(program)])
    out, events = run_json(env, "stdio-jsonl", prompt, "--config", config)
    assert out.returncode == 1  # not 130: nobody interrupted the host
    terminal, _ = one_terminal_and_readable(env, events[0]["session_id"])
    field = "by" if terminal["type"] == "turn.cancelled" else "reason"
    assert (terminal["type"], terminal["payload"][field]) == recorded


def _damaged_ledger(path: Path) -> None:
    connection = sqlite3.connect(path)
    connection.close()
    from harness_hookspecs import Event, MessageDelta, SessionRecord, SessionRef

    from harness_core.ledger.sqlite import SqliteStore

    store = SqliteStore(str(path))
    ref = SessionRef(provider="echo", target="local", session_id="s1")
    store.create_session(SessionRecord(ref=ref, status="open", created_at="t", updated_at="t"))
    store.append(
        [
            Event(
                event_id=f"e{i}",
                sequence=i,
                session_id="s1",
                turn_id="t1",
                harness="echo",
                timestamp="2026-01-01T00:00:00Z",
                type="message.delta",
                payload=MessageDelta(text="y" * 200),
            )
            for i in range(1, 2001)
        ]
    )
    store.close()
    size = path.stat().st_size
    assert size > 40 * 4096
    with open(path, "r+b") as handle:  # a garbage page in the middle of the file
        handle.seek((size // 4096 // 2) * 4096)
        handle.write(os.urandom(4096))


def _foreign_database(path: Path) -> None:
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    connection.execute("INSERT INTO notes (body) VALUES ('not a ledger')")
    connection.commit()
    connection.close()


@pytest.mark.parametrize("make", [_damaged_ledger, _foreign_database])
def test_a_damaged_or_foreign_sqlite_file_fails_every_command_and_stays_unchanged(
    env, tmp_path, make
):
    path = tmp_path / "ledger.sqlite"
    make(path)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    commands = [
        ["sessions"],
        ["events", "s1"],
        ["export", "s1"],
        ["run", "echo", "hi"],
        ["run", "echo", "hi", "--session", "s1"],
    ]
    for command in commands:
        out = harness(env, *command)
        lines = out.stderr.decode().splitlines()
        assert out.returncode != 0 and out.stdout == b"", command
        assert len(lines) == 1 and lines[0].startswith("harness: error: ledger-failed"), (
            command,
            lines,
        )
        assert hashlib.sha256(path.read_bytes()).hexdigest() == before, command


def test_non_utf8_argv_and_a_strict_stdout_never_crash_events_or_export(env):
    out, events = run_json(env, "echo", "hello")
    assert out.returncode == 0, out.stderr
    bad = os.fsencode("s\udcff\udcfe")  # the bytes b"s\xff\xfe"
    for command in (["events", bad], ["export", bad], ["events", bad, "--json"]):
        result = subprocess.run([HARNESS, *command], capture_output=True, env=env, timeout=60)
        assert result.returncode == 2, result.stderr
        assert result.stderr.splitlines() == [b"harness: error: session-not-found: no such session"]
    one_terminal_and_readable(env, events[0]["session_id"])


def test_cancel_never_signals_a_process_that_reused_the_pid(env, tmp_path):
    innocent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        active = tmp_path / "state" / "active"
        active.mkdir(parents=True)
        session_id = "crashed-session"
        name = hashlib.sha256(session_id.encode()).hexdigest()[:32] + ".json"
        # What a run killed with -9 left behind, its PID since reused by the innocent process.
        (active / name).write_text(json.dumps({"pid": innocent.pid, "start": "1", "turn_id": "t"}))
        out = harness(env, "cancel", session_id)
        assert out.returncode == 2
        assert out.stderr.decode().splitlines() == [
            "harness: error: turn-not-found: no harness run is running a turn in that session"
        ]
        assert innocent.poll() is None  # not signalled
        assert not (active / name).exists()  # the stale file is gone
    finally:
        innocent.kill()
        innocent.wait()
