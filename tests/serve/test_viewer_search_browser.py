"""The viewer over 1,000 recorded sessions and over live turns, in headless Chromium: search,
filters, facet counts and paging; a tool call's detail; a turn's raw events; live timing and
relative timestamps. Each test keeps a screenshot of what it checked (see ``browser.py``)."""

from __future__ import annotations

import json
import re
import time

import pytest

from harness_core.testing.many_sessions import (
    WORDS,
    expected,
    fill_ledger,
    kind_of,
    session_id_of,
)

from .browser import keep_screenshot, needs_chromium

pytest.importorskip("playwright.sync_api", reason="needs pip playwright (dev extra)")
pytestmark = needs_chromium

COUNT = 1000


def shown_sessions(page):
    return [
        row.get_attribute("data-session")
        for row in page.locator("table.sessions tbody tr[data-session]").all()
    ]


def page_range(page):
    return page.locator("#page-range").inner_text().replace("\N{EN DASH}", "-")


def session_page(server, workspace_dir, browser, height):
    """A new session of the scripted harness, and a page showing it."""
    _, opened = server.call(
        "POST", "/api/sessions", {"harness": "scripted", "workspace": workspace_dir}
    )
    session_id = opened["ref"]["session_id"]
    page = browser.new_page(viewport={"width": 1100, "height": height})
    page.goto(f"{server.url}sessions/{session_id}")
    return session_id, page


@pytest.fixture
def many(serve, tmp_path):
    fill_ledger(f"sqlite:///{tmp_path}/serve.sqlite", COUNT)
    with serve() as server:
        yield server


def test_paging_over_a_thousand_sessions(many, browser):
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.goto(many.url)
    assert page_range(page) == f"1-50 of {COUNT:,}"
    assert shown_sessions(page) == [session_id_of(i) for i in range(50)]  # newest first
    chips = {
        chip.get_attribute("data-state"): int(chip.locator("b").inner_text())
        for chip in page.locator(".facets a.chip").all()
    }
    assert chips == {
        state: len(expected(COUNT, state=state))
        for state in ("running", "interrupted", "idle", "closed")
    }
    interrupted = page.locator(f"tr[data-session='{session_id_of(1)}'] td").all()
    assert [cell.inner_text() for cell in interrupted[2:5]] == ["interrupted", "1", "interrupted"]
    keep_screenshot(page, "viewer-sessions", full_page=False)
    page.locator("#older").click()
    page.wait_for_url(re.compile(r"page=2"))
    assert page_range(page) == f"51-100 of {COUNT:,}"
    assert shown_sessions(page) == [session_id_of(i) for i in range(50, 100)]
    page.goto(many.url + "?page=20")
    assert page_range(page) == f"951-1,000 of {COUNT:,}"
    assert page.locator("#older").count() == 0  # the last page has no older link
    page.locator("#newer").click()
    page.wait_for_url(re.compile(r"page=19"))
    assert shown_sessions(page)[0] == session_id_of(900)


def test_search_and_filters_narrow_the_sessions(many, browser):
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.goto(many.url)
    word = WORDS[2]  # in the prompts of sessions 2, 9, 16, ...
    with_word = [i for i in range(COUNT) if kind_of(i)["prompt"].count(word)]
    page.fill("input[name=q]", word.upper())  # case does not matter
    page.press("input[name=q]", "Enter")
    page.wait_for_url(re.compile(r"q=" + word.upper()))
    assert page_range(page) == f"1-50 of {len(with_word)}"
    assert shown_sessions(page) == [session_id_of(i) for i in with_word[:50]]
    # a select submits the form by itself, keeping the text
    page.select_option("select[name=harness]", "codex")
    page.wait_for_url(re.compile(r"harness=codex"))
    codex = [i for i in with_word if kind_of(i)["harness"] == "codex"]
    assert page_range(page) == f"1-{len(codex)} of {len(codex)}"
    assert page.locator("input[name=q]").input_value() == word.upper()
    # a state chip filters on top, with the counts of the rest of the query
    closed_chip = page.locator(".facets a.chip[data-state=closed]")
    closed = [i for i in codex if kind_of(i)["state"] == "closed"]
    assert closed_chip.locator("b").inner_text() == str(len(closed))
    closed_chip.click()
    page.wait_for_url(re.compile(r"state=closed"))
    assert shown_sessions(page) == [session_id_of(i) for i in closed]
    assert {cell.inner_text() for cell in page.locator("tbody tr td:nth-child(3)").all()} == {
        "closed"
    }
    keep_screenshot(page, "viewer-search")
    # text from an answer finds its one session
    page.goto(many.url + "?q=n123x")
    assert shown_sessions(page) == [session_id_of(123)]
    page.goto(many.url + "?q=no-such-words-anywhere")
    assert page.locator("#pager").inner_text() == "no sessions match"
    # a bad filter is a clear error, not a page
    page.goto(many.url + "?state=sleeping")
    body = json.loads(page.locator("body").inner_text())
    assert body["error"]["reason"] == "invalid-request" and "state" in body["error"]["hint"]


def test_a_session_recorded_after_the_page_is_found_next_time(many, browser, workspace_dir):
    page = browser.new_page()
    page.goto(many.url + "?q=brand-new-words")
    assert page.locator("#pager").inner_text() == "no sessions match"
    _, opened = many.call(
        "POST", "/api/sessions", {"harness": "scripted", "workspace": workspace_dir}
    )
    session_id = opened["ref"]["session_id"]
    list(many.stream("POST", f"/api/sessions/{session_id}/turns", {"prompt": "brand-new-words"}))
    page.reload()
    assert shown_sessions(page) == [session_id]
    assert page.locator("tbody tr td:nth-child(2)").inner_text() == "scripted"


def test_tool_call_detail_and_raw_events(serve, workspace_dir, browser):
    with serve() as server:
        session_id, page = session_page(server, workspace_dir, browser, height=800)
        list(server.stream("POST", f"/api/sessions/{session_id}/turns", {"prompt": "tool"}))
        page.wait_for_selector("article.turn[data-status='completed']")
        for where in ("live", "rendered"):
            tool = page.locator("details.tool").first
            # one line: what it ran -> what came of it
            assert tool.locator(".input").inner_text() == "read README.md", where
            assert tool.locator(".output").inner_text() == "42 lines", where
            assert tool.get_attribute("class") == "tool ok", where
            assert not tool.locator(".detail-input").is_visible()
            tool.locator("summary").click()
            assert tool.locator(".detail-input").is_visible()
            assert tool.locator(".detail-output").inner_text() == "42 lines"
            assert "call_1" in tool.locator(".detail-facts").inner_text()
            assert re.fullmatch(r"\d+\.\d\d s", tool.locator(".took").inner_text()), where
            page.reload()
            page.wait_for_selector("article.turn[data-status='completed']")

        turn = page.locator("article.turn").first
        turn.locator(".raw-toggle").click()
        raw = turn.locator("pre.raw")
        raw.locator("text=turn.completed").wait_for()
        shown = [json.loads(chunk) for chunk in re.split(r"\n(?=\{)", raw.inner_text())]
        _, stored = server.call("GET", f"/api/sessions/{session_id}/events")
        turn_id = turn.get_attribute("data-turn")
        assert shown == [e for e in stored["events"] if e["turn_id"] == turn_id]
        assert [e["type"] for e in shown][:2] == ["turn.started", "message.delta"]
        page.locator("details.tool summary").first.click()
        keep_screenshot(page, "viewer-tool-raw")
        turn.locator(".raw-toggle").click()
        assert raw.is_hidden()


def test_live_timing_and_relative_timestamps(serve, workspace_dir, browser):
    with serve() as server:
        session_id, page = session_page(server, workspace_dir, browser, height=700)
        _, started = server.call(
            "POST", f"/api/sessions/{session_id}/turns", {"prompt": "slow 15", "stream": False}
        )
        turn = page.locator(f"#turn-{started['turn_id']}")
        timing = turn.locator(".timing")
        turn.locator(".items .text:has-text('chunk2')").wait_for(timeout=15000)

        def running_seconds():
            text = timing.inner_text()
            assert text.startswith("running "), text
            return float(text.split()[1])

        # usage nobody reported is unknown, not "-"
        assert page.locator("#session-tokens").inner_text() == "unknown"
        assert page.locator("#session-cost").inner_text() == "unknown"
        first = running_seconds()
        time.sleep(1.3)
        assert running_seconds() > first  # the elapsed time moves while the turn runs
        keep_screenshot(page, "viewer-live-timing")
        page.wait_for_selector(
            f"#turn-{started['turn_id']}[data-status='completed']", timeout=15000
        )
        done = timing.inner_text()
        match = re.fullmatch(r"took (\d+\.\d+) s · first token (\d+\.\d+) s", done)
        assert match, done
        took, first_token = float(match.group(1)), float(match.group(2))
        assert 2.5 < took < 10 and first_token < took  # 15 chunks 0.2 s apart
        # the server's figures for the same turn agree with the live ones
        page.reload()
        rendered = page.locator(f"#turn-{started['turn_id']} .timing").inner_text()
        assert rendered == done
        # relative times move, and carry the local time in their title
        opened_at = page.locator(".facts time.rel")
        before = opened_at.inner_text()
        assert re.fullmatch(r"\d+s ago", before)
        time.sleep(2.2)
        assert opened_at.inner_text() != before
        assert opened_at.get_attribute("title") != opened_at.get_attribute("datetime")
