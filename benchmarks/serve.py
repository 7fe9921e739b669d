"""`harness serve`: events per second delivered to a server-sent-events client, many followers of
one running session, and the viewer's first paint for a 100k-event session in headless Chromium.

- turn stream: ``POST /api/sessions/{id}/turns`` for a one-function harness yielding N deltas
  as fast as it can; events received by an HTTP client / seconds from request to ``end``;
- follow: ``GET /api/sessions/{id}/events?follow=1`` over a session already recorded
  (N events): catch-up rate of a late viewer;
- followers: ``--followers`` clients (aiohttp, another process) follow one session while its
  turn streams ``--paced`` deltas ``--gap`` ms apart: event -> client latency p50 / p99;
- first paint: a session of ``--page-turns`` turns x 100 events (100k events by default:
  prompts, deltas, tool calls, usage) opened in Chromium: first-contentful-paint, the HTML
  response time (median of 5) and the page's JS heap. The page renders the latest
  ``TURNS_SHOWN`` turns (the earlier ones: ``?turns=N`` / ``all``).

    python benchmarks/serve.py [--events 20000] [--runs 3] [--followers 100] [--paced 100]
        [--gap 20] [--page-turns 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import textwrap
import time

import anyio

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import figure, rmtree, tempdir
from harness_hookspecs import ToolCompleted, ToolStarted, Usage, UsageReported

from harness_core import harness
from harness_core.serve.viewer import TURNS_SHOWN
from harness_core.testing.serve import ServeThread


@harness("firehose")
async def firehose(message, session):
    words = message.content.split()
    if words[0] == "paced":  # "paced N MS": N deltas MS apart, each carrying its wall clock
        for _ in range(int(words[1])):
            await anyio.sleep(int(words[2]) / 1000)
            yield f"{time.time():.6f}"
        return
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


FOLLOWERS = """
import asyncio, json, sys, time
import aiohttp

url, token, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
latencies, ended = [], 0

async def follow(session, ready):
    global ended
    headers = {"Authorization": f"Bearer {token}"}
    async with session.get(url, headers=headers, timeout=aiohttp.ClientTimeout(total=600)) as r:
        assert r.status == 200, r.status
        ready.append(1)
        name = None
        async for raw in r.content:
            line = raw.decode().rstrip("\\n")
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: ") and name == "message.delta":
                latencies.append(time.time() - float(json.loads(line[6:])["payload"]["text"]))
            elif line.startswith("data: ") and name == "turn.completed":
                ended += 1
                return

async def main():
    ready = []
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        tasks = [asyncio.create_task(follow(session, ready)) for _ in range(count)]
        while len(ready) < count:
            await asyncio.sleep(0.01)
        print("ready", flush=True)
        await asyncio.gather(*tasks)
    print(json.dumps({"latencies": latencies, "ended": ended}), flush=True)

asyncio.run(main())
"""


def followers_latency(server, workspace, followers, deltas, gap_ms):
    """``followers`` clients (another process) follow one session while a turn streams
    ``deltas`` deltas ``gap_ms`` apart: seconds from each delta's yield to each client's
    receipt (wall clocks of one machine)."""
    session_id = open_session(server, workspace)
    url = f"{server.url}api/sessions/{session_id}/events?follow=1"
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(FOLLOWERS), url, server.token, str(followers)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        status, body = server.call(
            "POST",
            f"/api/sessions/{session_id}/turns",
            {"prompt": f"paced {deltas} {gap_ms}", "stream": False},
        )
        assert status in (200, 201, 202), body
        out = json.loads(child.stdout.readline())
    finally:
        child.wait(timeout=600)
    assert out["ended"] == followers, out["ended"]
    assert len(out["latencies"]) == followers * deltas, len(out["latencies"])
    return sorted(out["latencies"])


def lag_ms(lags, at):
    """The ``at`` quantile (0.5, 0.99) of :func:`followers_latency`'s sorted lags, in ms."""
    return lags[min(len(lags) - 1, int(len(lags) * at))] * 1000


def first_paint(server, workspace, runs, turns=100):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None, "needs pip playwright"
    if chromium is None:
        return None, "needs Debian's chromium"
    session_id = open_session(server, workspace)
    for _ in range(turns):
        server.call(
            "POST", f"/api/sessions/{session_id}/turns", {"prompt": "turn", "stream": False}
        )
        while server.call("GET", f"/api/sessions/{session_id}")[1]["running_turn"]:
            time.sleep(0.01)
    events = server.call("GET", f"/api/sessions/{session_id}")[1]["last_sequence"]
    paints, responses, heaps = [], [], []
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
            # the latest TURNS_SHOWN turns are rendered, the earlier ones come on demand
            assert page.locator("article.turn").count() == min(turns, TURNS_SHOWN)
            paints.append(timing["fcp"])
            heaps.append(page.evaluate("performance.memory.usedJSHeapSize") / 1024 / 1024)
            responses.append(timing["response"])
            page.close()
        browser.close()
    result = (statistics.median(paints), statistics.median(responses), events, max(heaps))
    return result, None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--followers", type=int, default=100)
    parser.add_argument("--paced", type=int, default=100, help="deltas of the followed turn")
    parser.add_argument("--gap", type=int, default=20, help="ms between its deltas")
    parser.add_argument("--page-turns", type=int, default=1000, help="turns of the big page")
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
            lags = followers_latency(server, workspace, args.followers, args.paced, args.gap)
            for name, at, target in (("p50", 0.5, ""), ("p99", 0.99, "<= 100 ms")):
                figure(
                    f"{args.followers} followers of a running session, {name}",
                    lag_ms(lags, at),
                    "ms",
                    target,
                    f"event -> client, {len(lags)} receipts",
                )
            result, why = first_paint(server, workspace, 5, args.page_turns)
            if result is None:
                print(f"viewer first paint: skipped ({why})")
            else:
                fcp, response, events, heap = result
                figure(
                    f"viewer first paint, {events}-event session",
                    fcp,
                    "ms",
                    "<= 1500 ms" if events >= 100_000 else "",
                    note="Chromium FCP, median of 5",
                )
                figure(f"viewer page memory, {events}-event session", heap, "MB", "", "JS heap")
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
