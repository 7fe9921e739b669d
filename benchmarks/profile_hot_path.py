"""Where the hot path's CPU goes: cProfile (thread CPU time, so a loaded machine's waits don't
count) of one Controller turn of N deltas, and of sessions x (open + 1 turn + close) per phase.

Also prints each phase's CPU per session without the profiler. Summaries of a run are kept in
``benchmarks/profiles/``. For a flame graph: ``py-spy record -o out.svg -- python
benchmarks/sessions.py --ledger memory`` (py-spy from PyPI; not a project dependency).

    python benchmarks/profile_hot_path.py [--ledger memory|sqlite] [--events 50000]
        [--sessions 2000] [--top 25]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import ROOT, open_store, rmtree, run_async, tempdir

PHASES = ("open", "turn", "close")


def _summary(profile: cProfile.Profile, title: str, top: int) -> None:
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    print(f"== {title} (cProfile, thread CPU time, sorted by own time)")
    text = out.getvalue().replace(str(ROOT) + "/", "").replace(sys.prefix + "/", "")
    print("\n".join(line for line in text.splitlines() if line.strip()))


async def _stream(kind: str, n: int, profile: cProfile.Profile) -> None:
    import ledger

    from harness_core import Controller, plugins_from

    directory = tempdir("profile-stream")
    store = open_store(kind, directory)
    try:
        async with Controller(plugins=plugins_from([ledger.streamer(n)]), ledger=store) as c:
            ref = await c.open_session(harness="bench-stream", workspace=directory)
            profile.enable()
            async with c.turn(ref, "go") as turn:
                async for _ in turn:
                    pass
            profile.disable()
    finally:
        store.close()
        rmtree(directory)


async def _sessions(
    kind: str, n: int, profiles: dict[str, cProfile.Profile] | None, spent: dict[str, float]
) -> None:
    import sessions

    from harness_core import Controller, plugins_from

    directory = tempdir("profile-sessions")
    store = open_store(kind, directory)
    clock = time.thread_time

    async def phase(name: str, call: Any) -> Any:
        profile = profiles[name] if profiles is not None else None
        started = clock()
        if profile is not None:
            profile.enable()
        result = await call
        if profile is not None:
            profile.disable()
        spent[name] += clock() - started
        return result

    try:
        async with Controller(
            plugins=plugins_from([sessions.replier()]), ledger=store, state_dir=directory
        ) as c:
            for _ in range(n):
                ref = await phase(
                    "open", c.open_session(harness="bench-reply", workspace=directory)
                )
                await phase("turn", c.run_turn(ref, "hi"))
                await phase("close", c.close_session(ref))
    finally:
        store.close()
        rmtree(directory)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ledger", default="memory", choices=("memory", "sqlite", "jsonl"))
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--sessions", type=int, default=2_000)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    run_async(_sessions, args.ledger, 100, None, dict.fromkeys(PHASES, 0.0))  # warm up
    spent = dict.fromkeys(PHASES, 0.0)
    run_async(_sessions, args.ledger, args.sessions, None, spent)
    per = {name: spent[name] / args.sessions * 1e6 for name in PHASES}
    print(
        f"sessions.{args.ledger}: CPU per session (main thread, no profiler): "
        + ", ".join(f"{name} {per[name]:.0f} us" for name in PHASES)
        + f", total {sum(per.values()):.0f} us (load average {os.getloadavg()[0]:.1f})"
    )
    profiles = {name: cProfile.Profile(time.thread_time) for name in PHASES}
    run_async(_sessions, args.ledger, args.sessions, profiles, dict.fromkeys(PHASES, 0.0))
    for name in PHASES:
        _summary(
            profiles[name], f"sessions.{args.ledger}: {name}, {args.sessions} sessions", args.top
        )
    stream = cProfile.Profile(time.thread_time)
    run_async(_stream, args.ledger, args.events, stream)
    _summary(stream, f"stream.{args.ledger}: one turn of {args.events} deltas", args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
