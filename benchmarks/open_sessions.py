"""Memory: 10,000 sessions open at once (SQLite ledger), peak RSS of the process.

python benchmarks/open_sessions.py [--sessions 10000]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import figure, rmtree, run_async, tempdir


def rss_mb() -> float:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def _run(sessions: int) -> tuple[float, float]:
    from harness_core import Controller, harness, plugins_from
    from harness_core.ledger import open_ledger

    @harness("bench-idle")
    async def idle(message: Any, session: Any) -> str:
        return "ok"

    directory = tempdir("open")
    store = open_ledger(f"sqlite://{os.path.join(directory, 'l.sqlite')}")
    try:
        async with Controller(
            plugins=plugins_from([idle]), ledger=store, state_dir=directory
        ) as controller:
            before = rss_mb()
            for _ in range(sessions):
                await controller.open_session(harness="bench-idle", workspace=directory)
            store.flush()
            after = rss_mb()
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            assert len(controller.live_sessions) == sessions
        return max(after, peak), after - before
    finally:
        store.close()
        rmtree(directory)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    args = parser.parse_args()
    peak, delta = run_async(_run, args.sessions)
    figure(f"open_sessions.{args.sessions}.rss", peak, "MB", "< 500 MB", "peak RSS of the process")
    figure(
        f"open_sessions.{args.sessions}.per_session",
        delta * 1024 / args.sessions,
        "KB",
        "",
        "RSS growth / session",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
