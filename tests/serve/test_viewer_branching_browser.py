"""The viewer's branching controls in headless Chromium: the files each turn changed, "rewind
to before this turn", the steer box while a turn runs, and "fork from here" (which opens the
child's page). Every action goes through the page's buttons with its token."""

from __future__ import annotations

from pathlib import Path

import pytest

from .browser import keep_screenshot, needs_chromium
from .test_api import wait_for
from .test_branching_api import _events, _open, _turn, shaper

sync_api = pytest.importorskip("playwright.sync_api", reason="needs pip playwright (dev extra)")
pytestmark = needs_chromium


@pytest.fixture
def server(tmp_path):
    from harness_core.testing.serve import ServeThread

    workspace = tmp_path / "ws"
    workspace.mkdir()
    with ServeThread(
        shaper,
        ledger=f"sqlite:///{tmp_path}/serve.sqlite",
        state_dir=tmp_path / "state",
        checkpoints=True,
    ) as running:
        running.workspace = str(workspace)
        yield running


def test_rewind_steer_and_fork_from_the_page(server, browser):
    session_id = _open(server)
    first = _turn(server, session_id, "write a.txt one")
    second = _turn(server, session_id, "write b.txt two")
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    page.goto(f"{server.url}sessions/{session_id}#token={server.token}")
    page.wait_for_selector("#token-state:has-text('token set')")

    # the files each turn changed
    turn_one, turn_two = page.locator(f"#turn-{first}"), page.locator(f"#turn-{second}")
    assert turn_one.locator(".changes summary").inner_text() == "1 file changed"
    turn_one.locator(".changes summary").click()
    assert "a.txt" in turn_one.locator(".changes").inner_text()
    assert "b.txt" in (turn_two.locator(".changes").text_content() or "")  # folded
    assert page.locator("#steer").is_hidden()  # no turn runs

    # rewind to before turn 2: b.txt goes, a.txt stays
    turn_two.locator("button.rewind-here").click()
    page.wait_for_selector("#notice:has-text('rewound')")
    assert "files and conversation" in page.locator("#notice").inner_text()
    assert Path(server.workspace, "a.txt").exists()
    assert not Path(server.workspace, "b.txt").exists()
    assert [e["type"] for e in _events(server, session_id)].count("session.rewound") == 1

    # a running turn gets the steer box; what is typed there reaches it
    status, started = server.call(
        "POST", f"/api/sessions/{session_id}/turns", {"prompt": "wait", "stream": False}
    )
    assert status == 202
    page.locator("#steer").wait_for(state="visible", timeout=15000)
    page.fill("#steer input[name=text]", "take the left fork")
    page.click("#steer button[type=submit]")
    running = page.locator(f"#turn-{started['turn_id']}")
    running.locator(".items .text:has-text('steered: take the left fork')").wait_for(timeout=15000)
    page.locator("#steer").wait_for(state="hidden", timeout=15000)
    events = _events(server, session_id)
    assert [e["payload"]["text"] for e in events if e["type"] == "turn.steered"] == [
        "take the left fork"
    ]
    keep_screenshot(page, "viewer-branching")

    # fork from turn 1: the child's page opens, its record names the parent
    turn_one.locator("button.fork-here").click()
    page.wait_for_url(lambda url: session_id not in url and "/sessions/" in url, timeout=15000)
    child_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    child_events = wait_for(lambda: _events(server, child_id))
    forked = next(e for e in child_events if e["type"] == "session.forked")
    assert forked["payload"]["parent_session_id"] == session_id
    first_end = next(
        e["event_id"] for e in events if e["turn_id"] == first and e["type"] == "turn.completed"
    )
    assert forked["payload"]["at_event_id"] == first_end
    assert "Fork from here" not in page.locator("#turns").inner_text()  # no turn yet


def test_opening_a_turns_files_shows_its_full_patch(server, browser):
    Path(server.workspace, "notes.txt").write_text("first\nsecond\n")
    session_id = _open(server)
    first = _turn(server, session_id, "write a.txt alpha\nbeta\n")
    second = _turn(server, session_id, "write notes.txt first\nSECOND\n")
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    page.goto(f"{server.url}sessions/{session_id}#token={server.token}")
    page.wait_for_selector("#token-state:has-text('token set')")

    turn_two = page.locator(f"#turn-{second}")
    assert turn_two.locator("pre.patch").count() == 0  # fetched only when opened
    turn_two.locator(".changes summary").click()
    patch = turn_two.locator("pre.patch")
    patch.wait_for(timeout=15000)
    assert [t.strip() for t in patch.locator(".line.del").all_inner_texts()] == ["-second"]
    assert [t.strip() for t in patch.locator(".line.add").all_inner_texts()] == ["+SECOND"]
    assert "+++ b/notes.txt" in patch.locator(".line.file").all_inner_texts()[-1]
    assert "a.txt" not in patch.inner_text()  # turn 1's file is not turn 2's
    keep_screenshot(page, "viewer-diff")

    turn_one = page.locator(f"#turn-{first}")
    turn_one.locator(".changes summary").click()
    added = turn_one.locator("pre.patch .line.add")
    added.first.wait_for(timeout=15000)
    assert [t.strip() for t in added.all_inner_texts()] == ["+alpha", "+beta"]

    # without the token the page cannot read a patch, and says why
    reader = browser.new_page()
    reader.goto(f"{server.url}sessions/{session_id}")
    reader.evaluate("sessionStorage.clear()")
    reader.reload()
    reader.locator(f"#turn-{first} .changes summary").click()
    reader.locator(f"#turn-{first} .patch-box:has-text('authentication-required')").wait_for(
        timeout=15000
    )
    assert reader.locator("pre.patch").count() == 0
