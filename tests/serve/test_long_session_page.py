"""A long session's page renders its latest turns; the earlier ones come on demand. On a
SQLite ledger the page reads only the events of the turns it shows (its totals are computed in
SQL); any other store (JSONL here) reads them all: the page is the same."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from harness_hookspecs import Event, SessionRecord, SessionRef, Usage
from harness_hookspecs import events as ev

from harness_core import harness
from harness_core.ledger import open_ledger
from harness_core.serve.viewer import TURNS_MORE, TURNS_SHOWN
from harness_core.testing.many_sessions import stamp
from harness_core.testing.serve import ServeThread

TURNS = TURNS_SHOWN + TURNS_MORE + 7
SESSION = "long-session"


def record_long_session(url: str) -> None:
    start = datetime(2026, 1, 2, tzinfo=UTC)
    store = open_ledger(url)
    try:
        created = stamp(start)
        store.create_session(
            SessionRecord(
                ref=SessionRef("scripted", "local", SESSION),
                status="open",
                created_at=created,
                updated_at=created,
                workspace="/tmp/ws",
            )
        )
        payloads = [(None, ev.SessionOpened(provider="scripted", target="local"))]
        for number in range(1, TURNS + 1):
            turn = f"turn-{number:04d}"
            payloads += [
                (turn, ev.TurnStarted(prompt=f"prompt number {number}")),
                (turn, ev.MessageDelta(text=f"answer number {number}")),
                (turn, ev.UsageReported(usage=Usage(input_tokens=10, output_tokens=2))),
                (turn, ev.TurnCompleted(text=f"answer number {number}")),
            ]
        store.append(
            [
                Event(
                    event_id=f"e{sequence}",
                    sequence=sequence,
                    session_id=SESSION,
                    turn_id=turn_id,
                    harness="scripted",
                    timestamp=stamp(start + timedelta(seconds=sequence)),
                    type=payload.TYPE,
                    payload=payload,
                )
                for sequence, (turn_id, payload) in enumerate(payloads, start=1)
            ]
        )
    finally:
        store.close()


@harness("long-page")
async def long_page(message, session):
    yield "unused: the session is recorded before the server starts"


@pytest.fixture(params=["sqlite", "jsonl"])
def serve_long(request, tmp_path):
    url = (
        f"sqlite:///{tmp_path}/serve.sqlite"
        if request.param == "sqlite"
        else f"jsonl:///{tmp_path}/ledger"
    )
    record_long_session(url)
    return lambda: ServeThread(long_page, ledger=url, state_dir=tmp_path / "state")


def shown_turns(html: str) -> list[int]:
    return [int(n) for n in re.findall(r"prompt number (\d+)</div>", html)]


def test_the_page_renders_the_latest_turns_and_links_to_the_earlier_ones(serve_long):
    with serve_long() as server:
        status, html = server.call("GET", f"/sessions/{SESSION}")
        assert status == 200
        assert shown_turns(html) == list(range(TURNS - TURNS_SHOWN + 1, TURNS + 1))
        assert f"turn {TURNS - TURNS_SHOWN + 1} · " in html  # numbered as in the whole session
        assert f'data-first="{TURNS - TURNS_SHOWN + 1}"' in html
        assert f"{TURNS - TURNS_SHOWN:,} earlier turns not shown" in html
        more = TURNS_SHOWN + TURNS_MORE
        assert f'href="/sessions/{SESSION}?turns={more}"' in html
        # the totals count every turn, not the rendered ones
        assert f'<span id="session-turns">{TURNS} turns</span>' in html
        assert f'<span id="session-tokens">{TURNS * 10} / {TURNS * 2}</span>' in html
        status, body = server.call("GET", f"/api/sessions/{SESSION}")
        assert (body["turns"], body["last_turn"], body["state"]) == (TURNS, "completed", "idle")
        assert body["last_sequence"] == 1 + 4 * TURNS

        _, html = server.call("GET", f"/sessions/{SESSION}?turns={more}")
        assert shown_turns(html) == list(range(TURNS - more + 1, TURNS + 1))
        assert "7 earlier turns not shown" in html
        assert f'href="/sessions/{SESSION}?turns={TURNS}"' in html  # only 7 more there are

        _, html = server.call("GET", f"/sessions/{SESSION}?turns=all")
        assert shown_turns(html) == list(range(1, TURNS + 1))
        assert 'id="earlier-turns"' not in html and 'data-first="1"' in html


def test_a_bad_turns_parameter_is_invalid_request(serve_long):
    with serve_long() as server:
        for bad in ("0", "-3", "many"):
            status, body = server.call("GET", f"/sessions/{SESSION}?turns={bad}")
            assert status == 400, bad
            assert body["error"]["reason"] == "invalid-request" and "turns" in body["error"]["hint"]
        status, body = server.call("GET", "/sessions/no-such-session?turns=all")
        assert status == 404 and body["error"]["reason"] == "session-not-found"
