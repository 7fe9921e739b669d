"""A turn retried after its writer died (what a Temporal failover does), watched live in the
viewer: attempt 1's streamed text is dropped at ``turn.restarted`` and only attempt 2's stays;
``harness run``'s view and ``harness events`` say the earlier text is void."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from harness_hookspecs import Event, MessageDelta, TurnCompleted, TurnRestarted

from harness_core import Controller, plugins_from
from harness_core.cli.output import Out
from harness_core.cli.view import RunView
from harness_core.transcript import format_event

from ..core.test_retried_turns import FIRST_ATTEMPT, TURN_ID, second_attempt
from ..ledger.ledger_samples import open_store, wait_unclaimed
from .browser import needs_chromium


def _run_catching(function: Any, failures: list[BaseException]) -> None:
    try:
        anyio.run(function)
    except BaseException as error:  # reported by the test's thread
        failures.append(error)


@needs_chromium
def test_the_viewer_drops_the_restarted_attempts_text(serve, browser, tmp_path: Path) -> None:
    pytest.importorskip("playwright.sync_api", reason="needs pip playwright (dev extra)")
    url = f"sqlite:///{tmp_path}/serve.sqlite"  # the serve fixture's ledger
    workspace = tmp_path / "ws"
    workspace.mkdir()
    code = textwrap.dedent(FIRST_ATTEMPT).format(url=url, workspace=str(workspace), turn_id=TURN_ID)
    with serve() as server:
        first = subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            assert first.stdout is not None
            session_id = first.stdout.readline().strip()
            assert first.stdout.readline().strip() == "durable"
            page = browser.new_page(viewport={"width": 1100, "height": 700})
            page.goto(f"{server.url}sessions/{session_id}#token={server.token}")
            turn = page.locator(f"#turn-{TURN_ID}")
            turn.locator(".items .text:has-text('first-4')").wait_for(timeout=15000)
        finally:
            os.kill(first.pid, signal.SIGKILL)  # the writer dies mid-turn
            first.wait(timeout=30)
        page.evaluate("window.__sameDocument = true")

        store = open_store(url)
        try:
            wait_unclaimed(store, session_id)

            async def retry() -> None:
                async with Controller(
                    plugins=plugins_from([second_attempt]), ledger=store, state_dir=tmp_path / "st"
                ) as controller:
                    ref = await controller.resume_session(session_id, retrying=TURN_ID)
                    await controller.run_turn(ref, "do it", turn_id=TURN_ID, attempt=2)

            # Playwright's sync API holds this thread's event loop: the retry runs in another
            failures: list[BaseException] = []
            worker = threading.Thread(target=_run_catching, args=(retry, failures))
            worker.start()
            worker.join(timeout=60)
            assert not worker.is_alive() and not failures, failures
        finally:
            store.close()
        page.wait_for_selector(f"#turn-{TURN_ID}[data-status='completed']", timeout=15000)
        assert page.evaluate("window.__sameDocument") is True  # live, not a reload
        assert turn.get_attribute("data-attempt") == "2"
        assert turn.locator(".items .restarted").inner_text() == (
            "attempt 2: the turn restarted; what the previous attempt streamed is void"
        )
        assert turn.locator(".items .text").inner_text().strip() == "second attempt"
        assert "first-" not in turn.inner_text()
        page.reload()  # the server-rendered page keeps only the last attempt too
        reloaded = page.locator(f"#turn-{TURN_ID}")
        assert "second attempt" in reloaded.inner_text()
        assert "first-" not in reloaded.inner_text()


def test_the_run_view_and_event_lines_mark_the_restart() -> None:
    def event(sequence: int, payload: object) -> Event:
        return Event(
            session_id="s", turn_id="t", sequence=sequence, harness="h", payload=payload,
            type=payload.TYPE,  # type: ignore[attr-defined]
            event_id=f"e{sequence}", timestamp="2026-12-04T18:00:00.000000Z",
        )  # fmt: skip

    text, chrome = io.StringIO(), io.StringIO()
    view = RunView(Out(text, colour=False), Out(chrome, colour=False))
    for sequence, payload in enumerate(
        [MessageDelta(text="half an ans"), TurnRestarted(attempt=2),
         TurnCompleted(text="the whole answer")], start=1,
    ):  # fmt: skip
        view.show(event(sequence, payload))
    # attempt 2 streamed nothing: its answer is printed from the terminal, after the marker
    assert text.getvalue() == "half an ans\nthe whole answer\n"
    assert chrome.getvalue() == (
        "~ attempt 2: the turn restarted; what the previous attempt streamed is void\n"
    )
    assert format_event(event(2, TurnRestarted(attempt=2))) == (
        "    2  turn.restarted        attempt 2: the turn restarted; what the previous attempt "
        "streamed is void"
    )
