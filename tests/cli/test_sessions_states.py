"""``harness sessions --status`` takes each state a session can be in (running, interrupted,
idle, closed) and ``open`` for any but closed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from harness_hookspecs import Event
from harness_hookspecs import events as ev

from harness_core.ledger import open_ledger
from harness_core.testing.many_sessions import expected, fill_ledger, session_id_of

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_run import harness

COUNT = 30
RUNNING = 2  # an idle session given a turn that a live writer (this test) holds


@pytest.fixture
def ledger(cli_env):
    url = cli_env["HARNESS_LEDGER"]
    fill_ledger(url, COUNT)
    store = open_ledger(url)
    session_id = session_id_of(RUNNING)
    store.claim(session_id)
    last = store.last_sequence(session_id)
    store.append(
        [
            Event(
                event_id="run-1",
                sequence=last + 1,
                session_id=session_id,
                turn_id="turn-live",
                harness="opencode",
                timestamp="2999-01-01T00:00:00.000000Z",
                type="turn.started",
                payload=ev.TurnStarted(prompt="still going"),
            )
        ]
    )
    store.flush()
    yield cli_env
    store.close()


def listed(env, *args):
    out = harness(env, "sessions", "--json", "--limit", "1000", *args)
    assert out.returncode == 0, out.stderr
    return [
        (row["ref"]["session_id"], row["state"]) for row in map(json.loads, out.stdout.splitlines())
    ]


def ids(indexes):
    return [session_id_of(i) for i in indexes]


def test_each_state_lists_exactly_its_sessions(ledger):
    idle = [i for i in expected(COUNT, state="idle") if i != RUNNING]
    assert listed(ledger, "--status", "running") == [(session_id_of(RUNNING), "running")]
    assert listed(ledger, "--status", "idle") == [(s, "idle") for s in ids(idle)]
    interrupted = ids(expected(COUNT, state="interrupted"))
    assert listed(ledger, "--status", "interrupted") == [(s, "interrupted") for s in interrupted]
    closed = ids(expected(COUNT, state="closed"))
    assert listed(ledger, "--status", "closed") == [(s, "closed") for s in closed]
    opened = listed(ledger, "--status", "open")
    assert [s for s, _ in opened] == ids(
        i for i in range(COUNT) if i not in expected(COUNT, state="closed")
    )
    assert {state for _, state in opened} == {"running", "idle", "interrupted"}


def test_the_state_filter_applies_before_the_limit(ledger):
    out = harness(ledger, "sessions", "--json", "--status", "interrupted", "--limit", "2")
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["ref"]["session_id"] for r in rows] == ids(expected(COUNT, state="interrupted")[:2])


def test_an_unknown_state_is_a_usage_error_listing_the_states(ledger):
    out = harness(ledger, "sessions", "--status", "sleeping")
    assert out.returncode == 2
    assert "running" in out.stderr and "interrupted" in out.stderr and "idle" in out.stderr


def test_the_unfiltered_table_shows_the_newest_and_each_state_once(ledger):
    out = harness(ledger, "sessions", "--limit", "3")
    assert out.returncode == 0, out.stderr
    rows = [line.split()[0] for line in out.stdout.splitlines()[1:]]
    assert rows == ids(range(3))  # newest first: session 0 was recorded last
    assert "interrupted (interrupted)" not in out.stdout  # session 1's state, said once
    assert "interrupted" in out.stdout
    assert "showing the newest 3" in out.stderr
    everything = harness(ledger, "sessions", "--limit", str(COUNT))
    assert "showing the newest" not in everything.stderr  # exactly COUNT: nothing more
