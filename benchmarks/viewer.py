"""The viewer (`harness serve`'s pages): how long the sessions page takes over 1,000 sessions,
and how long an event takes from being recorded to being shown in an open session page.

- sessions page: a ledger of N recorded sessions (``harness_core.testing.many_sessions``), then
  ``GET /`` (first page), ``GET /?page=10``, a text search (``?q=``), a search with harness and
  state filters, and a search found in one answer only; each timed over HTTP, median and p95 of
  ``--runs`` (the first request, which reads every event once, is reported apart);
- live latency: an open session page in headless Chromium (Debian's chromium) while a turn
  yields ``--events`` deltas 10 ms apart; for each, the page's clock when ``viewer.js`` applied
  it minus the event's recorded timestamp (same machine, same clock): median and p95.

    python benchmarks/viewer.py [--sessions 1000] [--runs 20] [--events 500]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import anyio
from _common import figure, rmtree, tempdir

from harness_core import harness
from harness_core.testing.many_sessions import fill_ledger
from harness_core.testing.serve import ServeThread


@harness("ticker")
async def ticker(message, session):
    """``N``: N deltas 10 ms apart (a steady stream the page must keep up with)."""
    for index in range(int(message.content)):
        yield f"t{index} "
        await anyio.sleep(0.01)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def get_ms(url: str) -> float:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as response:
        response.read()
        assert response.status == 200
    return (time.perf_counter() - start) * 1000


def sessions_page(server: ServeThread, count: int, runs: int) -> None:
    first = get_ms(server.url)
    figure(f"sessions page, first request ({count:,} sessions)", first, "ms", note="reads all")
    cases = {
        "first page": "",
        "page 10": "?page=10",
        "search text": "?q=migration",
        "search + harness + state": "?q=migration&harness=codex&state=closed",
        "search one answer": "?q=n123x",
    }
    for name, query in cases.items():
        times = [get_ms(server.url + query) for _ in range(runs)]
        figure(
            f"sessions page, {name} ({count:,} sessions)",
            statistics.median(times),
            "ms",
            note=f"median of {runs}; p95 {p95(times):.1f} ms",
        )


LATENCY_HOOK = """
() => {
  window.__lat = [];
  const live = window.harnessLive;
  const apply = live.apply.bind(live);
  const parse = (t) => Date.parse(String(t).replace(/(\\.\\d{3})\\d+/, "$1"));
  live.apply = (event) => {
    apply(event);
    if (event.type === "message.delta") window.__lat.push(Date.now() - parse(event.timestamp));
  };
}
"""


def live_latency(server: ServeThread, workspace: str, events: int) -> None:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("live latency: skipped (no chromium on PATH: apt-get install chromium)")
        return
    _, opened = server.call("POST", "/api/sessions", {"harness": "ticker", "workspace": workspace})
    session_id = opened["ref"]["session_id"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page()
            page.goto(f"{server.url}sessions/{session_id}")
            page.wait_for_function("window.harnessLive !== undefined")
            page.evaluate(LATENCY_HOOK)
            _, started = server.call(
                "POST",
                f"/api/sessions/{session_id}/turns",
                {"prompt": str(events), "stream": False},
            )
            page.wait_for_selector(
                f"#turn-{started['turn_id']}[data-status='completed']", timeout=120_000
            )
            latencies = page.evaluate("window.__lat")
        finally:
            browser.close()
    assert len(latencies) == events, f"the page applied {len(latencies)} of {events} deltas"
    note = f"over {events} events, p95 {p95(latencies):.0f} ms, max {max(latencies):.0f} ms"
    figure(
        "live: event recorded -> shown in the page", statistics.median(latencies), "ms", note=note
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--events", type=int, default=500)
    args = parser.parse_args()
    folder = tempdir("viewer-bench")
    try:
        ledger = f"sqlite:///{folder}/ledger.sqlite"
        start = time.perf_counter()
        fill_ledger(ledger, args.sessions)
        figure(f"fill the ledger ({args.sessions:,} sessions)", time.perf_counter() - start, "s")
        workspace = os.path.join(folder, "ws")
        os.makedirs(workspace)
        with ServeThread(ticker, ledger=ledger, state_dir=os.path.join(folder, "state")) as server:
            sessions_page(server, args.sessions, args.runs)
            live_latency(server, workspace, args.events)
    finally:
        rmtree(folder)


if __name__ == "__main__":
    main()
