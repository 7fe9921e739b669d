"""A long session's page renders its latest turns; the earlier ones come on demand."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from harness_hookspecs import Event, SessionRecord, SessionRef
from harness_hookspecs import events as ev

from harness_core.ledger import open_ledger
from harness_core.serve.viewer import TURNS_MORE, TURNS_SHOWN
from harness_core.testing.many_sessions import stamp

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


def shown_turns(html: str) -> list[int]:
    return [int(n) for n in re.findall(r"prompt number (\d+)</div>", html)]


def test_the_page_renders_the_latest_turns_and_links_to_the_earlier_ones(serve, tmp_path):
    record_long_session(f"sqlite:///{tmp_path}/serve.sqlite")
    with serve() as server:
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

        _, html = server.call("GET", f"/sessions/{SESSION}?turns={more}")
        assert shown_turns(html) == list(range(TURNS - more + 1, TURNS + 1))
        assert "7 earlier turns not shown" in html
        assert f'href="/sessions/{SESSION}?turns={TURNS}"' in html  # only 7 more there are

        _, html = server.call("GET", f"/sessions/{SESSION}?turns=all")
        assert shown_turns(html) == list(range(1, TURNS + 1))
        assert 'id="earlier-turns"' not in html and 'data-first="1"' in html


def test_a_bad_turns_parameter_is_invalid_request(serve, tmp_path):
    record_long_session(f"sqlite:///{tmp_path}/serve.sqlite")
    with serve() as server:
        for bad in ("0", "-3", "many"):
            status, body = server.call("GET", f"/sessions/{SESSION}?turns={bad}")
            assert status == 400, bad
            assert body["error"]["reason"] == "invalid-request" and "turns" in body["error"]["hint"]
        status, body = server.call("GET", "/sessions/no-such-session?turns=all")
        assert status == 404 and body["error"]["reason"] == "session-not-found"
