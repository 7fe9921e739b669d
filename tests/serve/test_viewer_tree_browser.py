"""The viewer shows a session's delegation tree (issue 32), in headless Chromium: the child
session sits under the parent's tool call that started it, collapsed; expanded, its turn and
answer show, and its own child (two levels) inside it. A live turn of the parent after the
page loaded lands in the parent's own turns, not in a child's."""

from __future__ import annotations

import pytest

from harness_core.delegation import ChildProfile, Delegation
from harness_core.testing.serve import ServeThread
from tests.core.test_delegation import boss, helper, looper

from .browser import keep_screenshot, needs_chromium

sync_api = pytest.importorskip("playwright.sync_api", reason="needs pip playwright (dev extra)")
pytestmark = needs_chromium


def test_the_viewer_nests_child_sessions_under_their_tool_call(tmp_path, browser):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    delegation = Delegation({name: ChildProfile() for name in ("helper", "looper")})
    with ServeThread(
        boss,
        helper,
        looper,
        ledger=f"sqlite:///{tmp_path}/serve.sqlite",
        state_dir=tmp_path / "state",
        delegation=delegation,
    ) as server:
        status, opened = server.call(
            "POST", "/api/sessions", {"harness": "boss", "workspace": str(workspace)}
        )
        assert status in (200, 201), opened
        session_id = opened["ref"]["session_id"]
        for prompt in ("helper what is the plan", "looper go deep"):
            list(server.stream("POST", f"/api/sessions/{session_id}/turns", {"prompt": prompt}))

        page = browser.new_page(viewport={"width": 1100, "height": 900})
        page.goto(f"{server.url}sessions/{session_id}#token={server.token}")
        turns = page.locator("#turns > article.turn")
        assert turns.count() == 2
        first_tool = turns.nth(0).locator(":scope > .answer > .items > details.tool")
        child = first_tool.locator(":scope > details.child-session")
        assert child.count() == 1
        assert not child.is_visible()  # inside the collapsed tool call
        first_tool.locator(":scope > summary").click()
        assert "helper" in child.locator(":scope > summary").inner_text()
        assert not child.locator(".child-turns").is_visible()  # collapsed until asked
        child.locator(":scope > summary").click()
        assert "helper says: what is the plan" in child.locator(".child-turns").inner_text()
        # two levels: looper -> looper, the inner one inside the outer one
        second_tool = turns.nth(1).locator(":scope > .answer > .items > details.tool")
        outer = second_tool.locator(":scope > details.child-session")
        inner = outer.locator("details.child-session")
        assert outer.count() == 1 and inner.count() == 1
        assert outer.get_attribute("data-session") != inner.get_attribute("data-session")
        second_tool.locator(":scope > summary").click()
        outer.locator(":scope > summary").click()
        outer.locator(".child-turns details.tool > summary").first.click()
        inner.locator(":scope > summary").click()
        assert "stopped: limit-exceeded" in inner.inner_text()
        keep_screenshot(page, "viewer-delegation-tree")

        # a live turn of the parent lands in the parent's turns, numbered after its own two
        status, started = server.call(
            "POST",
            f"/api/sessions/{session_id}/turns",
            {"prompt": "helper once more", "stream": False},
        )
        assert status == 202
        live = page.locator(f"#turns > #turn-{started['turn_id']}")
        live.wait_for(timeout=15000)
        live.locator(":scope > .meta:has-text('turn 3')").wait_for(timeout=15000)
        page.wait_for_selector(f"#turn-{started['turn_id']}[data-status='completed']")
        assert "boss heard: helper says: once more" in live.locator(":scope > .answer").inner_text()
