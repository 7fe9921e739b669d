"""The runtime's own share of a real CLI turn in a running host, span by span, with its CPU.

``cli_overhead.py`` compares medians of whole turns, which swing by tens of ms with the CLI's
own start-up; this script times, per turn of a fresh session in one running host
(:mod:`_host`: open_session + run_turn + close_session), the spans that are the runtime's:

- ``spawn``: ``process.spawn`` called -> returned (environment, watchdog, fork/exec, cgroup move);
- ``reap``: the CLI's terminal line read (or, for OpenCode, the turn's processes being
  stopped) -> its processes all gone and reaped (``Process.terminate``);
- ``close``: the terminal event out -> ``close_session`` returned;
- ``cpu``: this process's CPU time (every thread: event loop, worker threads) per turn.

Medians over ``--runs`` turns. To compare two versions, run it alternately with the other one
first on ``PYTHONPATH`` (a ``git archive`` of the base and its plugin folders).

    python benchmarks/turn_tail.py [--runs 10] [--clis codex,claude-code,pi]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _trace_harness
import cli_overhead
from _common import positive_int


def spans(marks: list[tuple[str, float]]) -> dict[str, float]:
    """The runtime's spans of one turn, in ms, from its trace marks."""
    first: dict[str, float] = {}
    last_line = 0.0
    for name, at in marks:
        if name == "line":
            last_line = at
        elif name == "terminate" and "terminate" not in first:
            first["terminate"] = at
            first["terminal_line"] = last_line or at
        elif name not in first:
            first[name] = at
    ms = lambda a, b: (first[b] - first[a]) * 1000  # noqa: E731
    return {
        "spawn": ms("spawn", "spawned"),
        "reap": ms("terminal_line", "terminated") if "terminated" in first else 0.0,
        "close": ms("terminal", "closed"),
    }


def measure(name: str, runs: int, server: object) -> dict[str, float]:
    recording = cli_overhead.Recording(name, server)
    host = None
    try:
        host = recording.host()
        host.turn()  # warm
        rows: list[dict[str, float]] = []
        for _ in range(runs):
            cpu = time.process_time()
            wall, _phases = host.turn()
            row = spans(list(_trace_harness._marks))
            row["cpu"] = (time.process_time() - cpu) * 1000
            row["wall"] = wall
            rows.append(row)
        return {key: statistics.median(r[key] for r in rows) for key in rows[0]}
    finally:
        if host is not None:
            host.close()
        recording.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=positive_int, default=10)
    parser.add_argument("--clis", default="codex,claude-code,pi")
    args = parser.parse_args()
    with cli_overhead._server() as server:
        for name in args.clis.split(","):
            m = measure(name, args.runs, server)
            cells = "  ".join(f"{key} {value:6.1f}" for key, value in m.items())
            print(f"turn_tail.{name:<12} {cells}  ms, median of {args.runs}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
