"""Wherever the CLI takes a session id it takes a unique prefix of one (git style), such as the
short id the viewer shows; an ambiguous prefix is refused listing the candidates."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_run import harness

FIRST = "abcd1111-0000-4000-8000-000000000001"
SECOND = "abcd1111-0000-4000-8000-000000000002"
THIRD = "abcd2222-0000-4000-8000-000000000003"


@pytest.fixture
def ledger(cli_env, tmp_path):
    from harness_core import Controller

    async def record() -> None:
        async with Controller(
            ledger=cli_env["HARNESS_LEDGER"], state_dir=cli_env["HARNESS_STATE_DIR"]
        ) as controller:
            for session_id in (FIRST, SECOND, THIRD):
                ref = await controller.open_session(
                    harness="echo", workspace=str(tmp_path), session_id=session_id
                )
                await controller.run_turn(ref, f"hello {session_id[-1]}")

    anyio.run(record)
    return cli_env


def test_a_unique_prefix_names_the_session_everywhere(ledger, tmp_path):
    env = ledger
    events = harness(env, "events", "abcd2222", "--json")
    assert events.returncode == 0, events.stderr
    assert {json.loads(line)["session_id"] for line in events.stdout.splitlines()} == {THIRD}
    exported = harness(env, "export", THIRD[:13])  # the viewer's short id
    assert exported.returncode == 0, exported.stderr
    assert json.loads(exported.stdout)["session"]["ref"]["session_id"] == THIRD
    assert harness(env, "logs", "abcd2222").returncode == 0
    assert harness(env, "replay", "abcd2222").returncode == 0
    resumed = harness(env, "run", "echo", "again", "--session", "abcd2222", "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout.splitlines()[-1])["session_id"] == THIRD
    closed = harness(env, "close", "abcd2222")
    assert closed.returncode == 0, closed.stderr
    assert closed.stdout == f"session {THIRD} closed\n"


def test_an_ambiguous_prefix_lists_the_candidates(ledger):
    out = harness(ledger, "events", "abcd1111")
    assert out.returncode == 2
    assert out.stderr == (
        "harness: error: invalid-request: the session id prefix 'abcd1111' is ambiguous: "
        f"{FIRST}, {SECOND}\n"
    )


def test_a_short_or_unknown_prefix_is_no_session(ledger):
    for text in ("abc", "ffff0000"):
        out = harness(ledger, "events", text)
        assert out.returncode == 2
        assert "session-not-found" in out.stderr
