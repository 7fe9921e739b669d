"""The session viewer in headless Chromium (Debian's `chromium`, driven by Playwright).

Turns are started through the API, as a host would; the page must show them live (no reload),
cancel from its button, and show event text as text. The screenshot is kept as an
artifact (``browser.py``; the README's is made with HARNESS_SCREENSHOT_DIR=docs/images).
"""

from __future__ import annotations

import pytest

from .browser import keep_screenshot, needs_chromium

sync_api = pytest.importorskip("playwright.sync_api", reason="needs pip playwright (dev extra)")
pytestmark = needs_chromium


def api_events(server, session_id):
    return server.call("GET", f"/api/sessions/{session_id}/events")[1]["events"]


def test_viewer_streams_a_turn_live_and_cancels_it(serve, workspace_dir, browser, tmp_path):
    with serve() as server:
        status, opened = server.call(
            "POST", "/api/sessions", {"harness": "scripted", "workspace": workspace_dir}
        )
        session_id = opened["ref"]["session_id"]
        list(
            server.stream(
                "POST",
                f"/api/sessions/{session_id}/turns",
                {"prompt": "tool: is the README still accurate?"},
            )
        )

        page = browser.new_page(viewport={"width": 1100, "height": 760})
        dialogs = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        page.goto(f"{server.url}sessions/{session_id}#token={server.token}")
        page.wait_for_selector("#token-state:has-text('token set')")
        assert "#token" not in page.url  # the token leaves the address bar
        first = page.locator("article.turn").first
        assert first.get_attribute("data-status") == "completed"
        assert "read_file" in first.inner_text() and "42 lines" in first.inner_text()
        assert "tokens 120 / 30" in first.inner_text()
        page.evaluate("window.__sameDocument = true")

        status, started = server.call(
            "POST",
            f"/api/sessions/{session_id}/turns",
            {"prompt": "slow 80: stream a long answer", "stream": False},
        )
        assert status == 202
        turn = page.locator(f"#turn-{started['turn_id']}")
        turn.locator(".items .text:has-text('chunk3')").wait_for(timeout=15000)
        assert turn.get_attribute("data-status") == "running"
        early = turn.locator(".items .text").inner_text()
        turn.locator(".items .text:has-text('chunk6')").wait_for(timeout=15000)
        assert len(turn.locator(".items .text").inner_text()) > len(early)  # still streaming
        assert page.evaluate("window.__sameDocument") is True  # updated live, not reloaded
        assert page.locator("#session-status").inner_text() == "running"
        assert page.locator("#session-turns").inner_text() == "2 turns"  # counted live

        assert keep_screenshot(page, "viewer-session").stat().st_size > 10_000

        page.locator("#cancel").click()
        page.wait_for_selector(
            f"#turn-{started['turn_id']}[data-status='cancelled']", timeout=10000
        )
        assert "cancelled by host" in turn.inner_text()
        assert page.locator("#cancel").is_hidden()
        assert page.locator("#notice").inner_text() == ""  # "cancel requested" does not stay
        events = api_events(server, session_id)
        assert events[-1]["type"] == "turn.cancelled" and events[-1]["payload"]["by"] == "host"
        streamed = "".join(
            e["payload"]["text"]
            for e in events
            if e["type"] == "message.delta" and e["turn_id"] == started["turn_id"]
        )
        assert turn.locator(".items .text").inner_text().strip() == streamed.strip()
        assert not dialogs


def test_viewer_shows_markup_from_events_as_text(serve, workspace_dir, browser):
    with serve() as server:
        _, opened = server.call(
            "POST", "/api/sessions", {"harness": "scripted", "workspace": workspace_dir}
        )
        session_id = opened["ref"]["session_id"]
        page = browser.new_page()
        dialogs = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        page.goto(f"{server.url}sessions/{session_id}")
        # live path (textContent) ...
        list(server.stream("POST", f"/api/sessions/{session_id}/turns", {"prompt": "xss <i>p</i>"}))
        page.wait_for_selector("article.turn[data-status='completed']")
        live_text = page.locator("article.turn").inner_text()
        # ... and the server-rendered path (escaped HTML) after a reload
        page.reload()
        page.wait_for_selector("article.turn[data-status='completed']")
        for text in (live_text, page.locator("article.turn").inner_text()):
            assert "<script>window.__xss=1</script>" in text
            assert "<i>p</i>" in text and "<b>tool</b>" in text
        # No element the markup could have made exists anywhere in the page, so nothing can run
        # later (the img's onerror would fire only after its load failed); and nothing ran.
        assert page.locator("article.turn script, article.turn img, article.turn i").count() == 0
        made = "document.querySelectorAll('img[src=\"x\"]').length + [...document.scripts]"
        assert page.evaluate(f"{made}.filter(s => s.text.includes('__xss')).length") == 0
        assert page.evaluate("typeof window.__xss") == "undefined"
        assert not dialogs


def test_the_allow_button_answers_the_request_and_the_turn_finishes(serve, workspace_dir, browser):
    with serve() as server:
        _, opened = server.call(
            "POST",
            "/api/sessions",
            {"harness": "scripted", "workspace": workspace_dir, "posture": "strict"},
        )
        session_id = opened["ref"]["session_id"]
        page = browser.new_page()
        page.goto(f"{server.url}sessions/{session_id}#token={server.token}")
        server.call(
            "POST", f"/api/sessions/{session_id}/turns", {"prompt": "permission", "stream": False}
        )
        page.locator(".permission button.allow").click(timeout=15000)
        page.wait_for_selector("article.turn[data-status='completed']", timeout=10000)
        assert "allowed" in page.locator("article.turn").last.inner_text()


def test_sessions_list_shows_totals(serve, workspace_dir, browser):
    with serve() as server:
        _, opened = server.call(
            "POST", "/api/sessions", {"harness": "scripted", "workspace": workspace_dir}
        )
        session_id = opened["ref"]["session_id"]
        page = browser.new_page()
        page.goto(f"{server.url}sessions/{session_id}")
        list(server.stream("POST", f"/api/sessions/{session_id}/turns", {"prompt": "tool"}))
        page.wait_for_selector("article.turn[data-status='completed']")
        # the header's totals follow the live usage events
        assert page.locator("#session-turns").inner_text() == "1 turn"
        assert page.locator("#session-tokens").inner_text() == "120 / 30"
        assert page.locator("#session-cost").inner_text() == "$0.0021"
        page.goto(server.url)
        row = page.locator("table.sessions tbody tr").first
        cells = [cell.inner_text() for cell in row.locator("td").all()]
        assert cells[0] == session_id[:13] and cells[1] == "scripted" and cells[2] == "idle"
        assert cells[3] == "1" and cells[4] == "completed"
        assert cells[5] == "120 / 30" and cells[6] == "$0.0021"
        row.locator("a").click()
        page.wait_for_selector("article.turn")
        assert page.url.endswith(f"/sessions/{session_id}")


def test_thinking_is_collapsed_under_the_answer_with_its_model_step(serve, workspace_dir, browser):
    with serve() as server:
        _, opened = server.call(
            "POST", "/api/sessions", {"harness": "scripted", "workspace": workspace_dir}
        )
        session_id = opened["ref"]["session_id"]
        page = browser.new_page()
        page.goto(f"{server.url}sessions/{session_id}")
        list(server.stream("POST", f"/api/sessions/{session_id}/turns", {"prompt": "think"}))
        page.wait_for_selector("article.turn[data-status='completed']")
        for when in ("live", "rendered"):
            turn = page.locator("article.turn").first
            thinking = turn.locator("details.thinking")
            assert thinking.count() == 1, when
            assert thinking.get_attribute("open") is None, when  # collapsed
            assert thinking.locator(".thought").text_content() == "weigh the options first"
            assert "Option B." in turn.locator(".items .text").inner_text()
            step = turn.locator(".status.step").inner_text()
            assert "model step" in step and "m-1" in step and "420 ms" in step, (when, step)
            page.reload()
            page.wait_for_selector("article.turn[data-status='completed']")
