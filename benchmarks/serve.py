"""`harness serve`: events per second delivered to a server-sent-events client, and the viewer's
first paint for a 10k-event session in headless Chromium.

- turn stream: ``POST /api/sessions/{id}/turns`` for a one-function harness yielding N deltas
  as fast as it can; events received by an HTTP client / seconds from request to ``end``;
- follow: ``GET /api/sessions/{id}/events?follow=1`` over a session already recorded
  (N events): catch-up rate of a late viewer;
- first paint: a session of 100 turns x 100 events (10k events: prompts, deltas, tool calls,
  usage) opened in Chromium: first-contentful-paint and the HTML response time, median of 5.

    python benchmarks/serve.py [--events 20000] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import figure, rmtree, tempdir
from harness_hookspecs import ToolCompleted, ToolStarted, Usage, UsageReported

from harness_core import harness
from harness_core.testing.serve import ServeThread


@harness("firehose")
async def firehose(message, session):
    words = message.content.split()
    if words[0] == "deltas":
        for index in range(int(words[1])):
            yield f"d{index} "
        return
    # "turn": ~100 events of a realistic turn: text, two tool calls, usage
    for index in range(94):
        yield f"word{index} "
        if index in (30, 60):
            yield ToolStarted(call_id=f"c{index}", name="read_file", summary="read src/app.py")
            yield ToolCompleted(call_id=f"c{index}", name="read_file", summary="120 lines")
    yield UsageReported(usage=Usage(input_tokens=1200, output_tokens=300, cost_usd=0.004))


def open_session(server, workspace):
    status, body = server.call(
        "POST", "/api/sessions", {"harness": "firehose", "workspace": workspace}
    )
    assert status == 201, body
    return body["ref"]["session_id"]


def stream_rate(server, workspace, events):
    session_id = open_session(server, workspace)
    start = time.perf_counter()
    count = sum(
        1
        for name, _ in server.stream(
            "POST", f"/api/sessions/{session_id}/turns", {"prompt": f"deltas {events}"}, timeout=300
        )
        if name != "end"
    )
    elapsed = time.perf_counter() - start
    assert count >= events, count
    return count / elapsed, session_id


def follow_rate(server, session_id):
    start = time.perf_counter()
    count = 0
    for name, _ in server.stream("GET", f"/api/sessions/{session_id}/events?follow=1", timeout=300):
        count += 1
        if name == "turn.completed":
            break
    return count / (time.perf_counter() - start)


def first_paint(server, workspace, runs):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None, "needs pip playwright"
    if chromium is None:
        return None, "needs Debian's chromium"
    session_id = open_session(server, workspace)
    for _ in range(100):
        server.call(
            "POST", f"/api/sessions/{session_id}/turns", {"prompt": "turn", "stream": False}
        )
        while server.call("GET", f"/api/sessions/{session_id}")[1]["running_turn"]:
            time.sleep(0.01)
    events = server.call("GET", f"/api/sessions/{session_id}")[1]["last_sequence"]
    paints, responses = [], []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        for _ in range(runs):
            page = browser.new_page()
            page.goto(f"{server.url}sessions/{session_id}", wait_until="load")
            timing = page.evaluate(
                """() => new Promise((resolve) => {
                  const nav = performance.getEntriesByType('navigation')[0];
                  new PerformanceObserver((list) => {
                    for (const entry of list.getEntries()) {
                      if (entry.name === 'first-contentful-paint')
                        resolve({fcp: entry.startTime, response: nav.responseEnd});
                    }
                  }).observe({type: 'paint', buffered: true});
                  setTimeout(() => resolve({fcp: null, response: nav.responseEnd}), 5000);
                })"""
            )
            assert page.locator("article.turn").count() == 100
            paints.append(timing["fcp"])
            responses.append(timing["response"])
            page.close()
        browser.close()
    return (statistics.median(paints), statistics.median(responses), events), None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    root = tempdir("serve")
    try:
        workspace = os.path.join(root, "ws")
        os.mkdir(workspace)
        with ServeThread(
            firehose,
            ledger=f"sqlite:///{root}/ledger.sqlite",
            state_dir=os.path.join(root, "state"),
        ) as server:
            rates, follows = [], []
            for _ in range(args.runs):
                rate, session_id = stream_rate(server, workspace, args.events)
                rates.append(rate)
                follows.append(follow_rate(server, session_id))
            figure(
                f"SSE turn stream, {args.events} deltas (SQLite)",
                statistics.median(rates),
                "events/s delivered",
                note=f"median of {args.runs}",
            )
            figure(
                f"SSE follow catch-up, {args.events + 3}-event session",
                statistics.median(follows),
                "events/s delivered",
                note=f"median of {args.runs}",
            )
            result, why = first_paint(server, workspace, 5)
            if result is None:
                print(f"viewer first paint: skipped ({why})")
            else:
                fcp, response, events = result
                figure(
                    f"viewer first paint, {events}-event session",
                    fcp,
                    "ms",
                    note="Chromium FCP, median of 5",
                )
                figure(
                    f"viewer HTML response, {events}-event session",
                    response,
                    "ms",
                    note="navigation responseEnd",
                )
    finally:
        rmtree(root)


if __name__ == "__main__":
    main()
