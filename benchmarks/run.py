"""Every figure in one run, one table: figure, ours, target, superqode, ratio, verdict.

Runs the measurements of the other scripts here (their functions, imported: ``ledger.py``,
``sessions.py``, ``imports.py``, ``cli.py``'s timing, ``subprocess_turn.py``, ``cancel.py``,
``compare_superqode.py``; ``cli_overhead.py`` with ``--cli-overhead``; ``scale.py``,
``postgresql.py``'s writers and ``serve.py``'s followers and first paint with ``--scale``) and
prints them side by side. superqode's column needs a venv with superqode 2.25.0:
``--superqode-python PATH`` or ``$HARNESS_BENCH_SUPERQODE_PYTHON`` (a Python 3.11 venv made with
``pip install --ignore-requires-python superqode==2.25.0`` works); without one it says
"not installed". Nothing is installed by this script.

Child processes run with bytecode caching on (``PYTHONDONTWRITEBYTECODE`` is dropped), as an
installed ``harness`` runs for its users; a warm-up run writes the ``.pyc`` files.

    python benchmarks/run.py [--runs 3] [--quick] [--superqode-python PATH] [--cli-overhead]
        [--clis claude-code,codex,opencode,pi,cline]  (with --cli-overhead: which CLIs)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import compare_superqode as sq
from _common import positive_int, rmtree, run_async, tempdir, time_process, venv_bin
from cli_overhead import CLIS, parse_clis  # light: harness_core is imported when measuring

NOT_INSTALLED = "not installed"


@dataclass
class Row:
    figure: str
    ours: float
    unit: str
    target: str = ""
    #: ``ours`` meets the target (``None``: no target).
    ok: bool | None = None
    theirs: float | None = None
    higher_is_better: bool = True

    def cells(self, superqode: bool) -> list[str]:
        if self.theirs is not None:
            ratio = self.ours / self.theirs if self.higher_is_better else self.theirs / self.ours
            theirs, ratio_text = _num(self.theirs), f"{ratio:,.1f}x"
        else:
            theirs = "-" if superqode else NOT_INSTALLED
            ratio_text = "-"
        verdict = {None: "", True: "ok", False: "MISSED"}[self.ok]
        return [
            self.figure,
            f"{_num(self.ours)} {self.unit}",
            self.target,
            theirs,
            ratio_text,
            verdict,
        ]


def _num(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def _median(runs: int, measure: Callable[[], float]) -> float:
    return statistics.median(measure() for _ in range(runs))


def stream_rows(runs: int, sizes: tuple[int, int], python: Path | None) -> list[Row]:
    import ledger

    rows = []
    small, large = sizes
    rate = {}
    for kind in ("memory", "sqlite"):
        for n in sizes:
            rate[kind, n] = ledger.turn_rate(kind, n, runs)[0]  # wall (and CPU rate)
    for n in sizes:
        theirs = None
        if python is not None and n == small:
            theirs = _median(runs, lambda: sq.theirs(python, "stream", "memory", small))
        ours = rate["memory", n]
        rows.append(
            Row(f"memory stream, {n:,} deltas", ours, "ev/s", ">= 150k", ours >= 150_000, theirs)
        )
    for n in sizes:
        ours = rate["sqlite", n]
        rows.append(Row(f"SQLite stream, {n:,}, durable", ours, "ev/s", ">= 100k", ours >= 100_000))
    flat = rate["sqlite", large] / rate["sqlite", small]
    rows.append(Row(f"SQLite {large:,}/{small:,} rate", flat, "x", "0.8-1.2", 0.8 <= flat <= 1.2))
    if python is not None:  # superqode's durable stores are quadratic: compared at 1k events
        for ours_kind, theirs_kind in (("sqlite", "sqlite"), ("jsonl", "file")):
            ours = ledger.turn_rate(ours_kind, 1000, runs)[0]
            theirs = _median(runs, lambda k=theirs_kind: sq.theirs(python, "stream", k, 1000))
            label = f"{ours_kind} stream, 1,000 (superqode {theirs_kind} store)"
            rows.append(Row(label, ours, "ev/s", theirs=theirs))
    return rows


def session_rows(runs: int, count: int, python: Path | None) -> list[Row]:
    import sessions

    def ours(kind: str, n: int, concurrent: bool) -> float:
        return _median(runs, lambda: run_async(sessions._run, kind, n, concurrent))

    def theirs(kind: str, n: int, concurrent: bool) -> float | None:
        if python is None:
            return None
        return _median(runs, lambda: sq.theirs(python, "sessions", kind, n, concurrent))

    memory = ours("memory", count, False)
    memory_theirs = theirs("memory", count, False)
    target_ok = None if memory_theirs is None else memory >= 1.5 * memory_theirs
    rows = [
        Row(
            f"{count:,} memory sessions, sequential",
            memory,
            "/s",
            ">= 1.5x superqode",
            target_ok,
            memory_theirs,
        )
    ]
    for mode, concurrent in (("sequential", False), ("concurrent", True)):
        rate = ours("sqlite", count, concurrent)
        rows.append(Row(f"{count:,} SQLite sessions, {mode}", rate, "/s", ">= 2,000", rate >= 2000))
    if python is not None:  # superqode's SQLite store at 200 sessions (as compare_superqode.py)
        for mode, concurrent in (("sequential", False), ("concurrent", True)):
            rate = ours("sqlite", 200, concurrent)
            rows.append(
                Row(
                    f"200 SQLite sessions, {mode}",
                    rate,
                    "/s",
                    theirs=theirs("sqlite", 200, concurrent),
                )
            )
    return rows


def startup_rows(runs: int, python: Path | None) -> list[Row]:
    import imports

    ours_import = _median(max(runs, 5), lambda: imports.import_ms("harness_core"))
    theirs_import = sq.theirs_import_ms(python) if python is not None else None
    harness = venv_bin("harness")
    time_process([harness, "list"])  # warm: .pyc files, the plugin listing cache
    samples = [time_process([harness, "list"]) for _ in range(max(runs, 5))]
    wall = statistics.median(s[0] for s in samples) * 1000
    rss = statistics.median(s[1] for s in samples)
    theirs_wall = theirs_rss = None
    if python is not None:
        theirs_wall, theirs_rss = sq.theirs_cli_list(python, max(runs, 5))
    return [
        Row(
            "import harness_core",
            ours_import,
            "ms",
            "<= 20 ms",
            ours_import <= 20,
            theirs_import,
            False,
        ),
        Row("harness list, wall", wall, "ms", "<= 150 ms", wall <= 150, theirs_wall, False),
        Row("harness list, max RSS", rss, "MB", theirs=theirs_rss, higher_is_better=False),
    ]


def process_rows(runs: int) -> list[Row]:
    import cancel
    import subprocess_turn

    workspace = tempdir("run")
    try:
        run_async(subprocess_turn._bare, 2, workspace)  # warm-up
        turns = max(runs, 5)
        bare = statistics.median(run_async(subprocess_turn._bare, turns, workspace))
        controlled = statistics.median(run_async(subprocess_turn._controlled, turns, workspace))
        cancels = [run_async(cancel._once, workspace) for _ in range(max(runs, 5))]
    finally:
        rmtree(workspace)
    added = (controlled - bare) * 1000
    latency = statistics.median(c[0] for c in cancels) * 1000
    gone = all(c[2] for c in cancels)
    return [
        Row(
            "stdio-jsonl turn overhead",
            added,
            "ms",
            "<= 20 ms",
            added <= 20,
            higher_is_better=False,
        ),
        Row(
            "cancel -> terminal",
            latency,
            "ms",
            "<= 500 ms",
            latency <= 500 and gone,
            higher_is_better=False,
        ),
    ]


def cli_overhead_rows(runs: int, clis: list[str]) -> list[Row]:
    import cli_overhead
    import startup

    paired = startup.echo_over_floor(max(runs, 5))  # alternating runs, a ratio per pair
    ratio, cpu_ratio = paired["ratio_wall"], paired["ratio_cpu"]
    rows = [
        Row("python -c pass, wall", cli_overhead.interpreter_ms(runs), "ms"),
        Row("python -c 'import asyncio, attr', wall", paired["floor_wall"], "ms"),
        Row("harness run echo (no CLI), wall", paired["echo_wall"], "ms"),
        Row("harness run echo / that floor", ratio, "x", "<= 1.5x", ratio <= 1.5, None, False),
        Row(
            "imports every run needs (anyio's backend, the contract) / that floor",
            paired["required_ratio_wall"],
            "x",
            higher_is_better=False,
        ),
        Row(
            "harness run echo / that floor, CPU",
            cpu_ratio,
            "x",
            "<= 1.5x",
            cpu_ratio <= 1.5,
            None,
            False,
        ),
    ]
    results, failed = cli_overhead.run_all(runs, clis)
    for r in results:
        label = f"{r.name}: harness run - bare ({r.bare_ms:,.0f} ms bare)"
        bound = f"<= {r.bound_ms:.0f} ms"
        rows.append(Row(label, r.added_ms, "ms", bound, r.added_ms <= r.bound_ms))
        startup, work = r.startup_ms(), r.turn_work_ms()
        if startup is not None and work is not None:  # the phases split the figure above
            label = f"{r.name}: harness run, process start-up (python, imports, plugins)"
            rows.append(Row(label, startup, "ms"))
            label = f"{r.name}: harness run, the turn's work (from the phases)"
            rows.append(Row(label, work, "ms", bound, work <= r.bound_ms))
        label = f"{r.name}: harness run - bare, CPU (CLI's included)"
        rows.append(Row(label, r.cpu["harness"] - r.cpu["bare"], "ms"))
        label = f"{r.name}: running host - bare (open + turn + close)"
        rows.append(Row(label, r.host_added_ms, "ms", bound, r.host_added_ms <= r.bound_ms))
        hosted = r.ours_ms(host=True)
        if hosted is not None:  # the CLI's own start-up and turn (noisy) left out
            label = f"{r.name}: running host, from the phases"
            rows.append(Row(label, hosted, "ms", bound, hosted <= r.bound_ms))
    for name in failed:
        print(f"cli overhead, {name}: not measured ({failed[name]})", file=sys.stderr)
    return rows


def print_table(rows: list[Row], superqode: bool) -> None:
    headers = ["figure", "ours", "target", "superqode", "ratio", ""]
    table = [headers, *(row.cells(superqode) for row in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(headers))]
    for index, line in enumerate(table):
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip())
        if index == 0:
            print("  ".join("-" * w for w in widths))


def scale_rows(runs: int, quick: bool) -> list[Row]:
    import scale

    small = {"events": 10_000, "sessions": 1_000, "listed": 10_000, "turns": 100}
    sizes = {"events": 100_000, "sessions": 10_000, "listed": 100_000, "turns": 1_000}
    chosen = small if quick else sizes
    args = argparse.Namespace(runs=runs, deltas=1_000, paced=100, gap=50.0, **chosen)
    return [
        Row(f.name, f.value, f.unit, f.target, f.ok, higher_is_better=f.unit not in {"ms", "KB"})
        for f in scale.measure(list(scale.SECTIONS), args)
    ]


def postgresql_rows() -> list[Row]:
    """4 writer processes into one PostgreSQL ledger against the raw driver's ``COPY`` of the
    same rows (``postgresql.py``), on a throwaway server; none without PostgreSQL's binaries."""
    import postgresql

    try:
        from ledger_postgresql.testing import start

        server = start(durable=True)
    except Exception as error:  # no server binaries here: the line is not measured
        print(f"postgresql: not measured ({type(error).__name__}: {error})", file=sys.stderr)
        return []
    os.environ[postgresql.ENV_POSTGRESQL] = server.url
    try:
        got = postgresql.workers_rate(4, 400)
    finally:
        server.stop()
    ratio = got["rate"] / got["raw_rate"]
    clean = got["gaps"] == 0 and got["duplicates"] == 0
    return [
        Row("PostgreSQL, 4 writer processes", got["rate"], "ev/s"),
        Row("PostgreSQL, the same rows by psycopg COPY", got["raw_rate"], "ev/s"),
        Row("PostgreSQL 4 writers / raw driver", ratio, "x", ">= 0.5", ratio >= 0.5 and clean),
    ]


def serve_rows() -> list[Row]:
    """``harness serve``: 100 followers of one running session (event -> client) and the viewer's
    first paint of a 100,000-event session in Chromium (``serve.py``)."""
    import serve

    from harness_core.testing.serve import ServeThread

    root = tempdir("run-serve")
    rows: list[Row] = []
    try:
        workspace = os.path.join(root, "ws")
        os.mkdir(workspace)
        ledger = f"sqlite:///{root}/ledger.sqlite"
        state = os.path.join(root, "state")
        with ServeThread(serve.firehose, ledger=ledger, state_dir=state) as server:
            lags = serve.followers_latency(server, workspace, 100, 100, 20)
            p99 = serve.lag_ms(lags, 0.99)
            label = "serve: 100 followers, event -> client p99"
            rows.append(Row(label, p99, "ms", "<= 100 ms", p99 <= 100, higher_is_better=False))
            result, why = serve.first_paint(server, workspace, 5, 1000)
    finally:
        rmtree(root)
    if result is None:
        print(f"viewer first paint: not measured ({why})", file=sys.stderr)
        return rows
    fcp, _response, events, heap = result
    label = f"viewer first paint, {events:,}-event session"
    ok = fcp <= 1500 and events >= 100_000
    rows.append(Row(label, fcp, "ms", "<= 1500 ms", ok, higher_is_better=False))
    rows.append(
        Row(f"viewer JS heap, {events:,}-event session", heap, "MB", higher_is_better=False)
    )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs", type=positive_int, default=3, help="medians of this many (default 3)"
    )
    parser.add_argument("--quick", action="store_true", help="smaller N (a smoke run)")
    parser.add_argument("--superqode-python", help=f"or ${sq.ENV_PYTHON}")
    parser.add_argument(
        "--cli-overhead", action="store_true", help="also the real-CLI turn overhead (slow)"
    )
    parser.add_argument("--clis", default=",".join(CLIS), help="with --cli-overhead: these CLIs")
    parser.add_argument(
        "--scale",
        action="store_true",
        help="also one host at scale (scale.py), PostgreSQL's writers, serve (slow)",
    )
    args = parser.parse_args()
    clis = parse_clis(parser, args.clis)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False
    python = sq.superqode_python(args.superqode_python)
    started = time.strftime("%Y-%m-%d %H:%M")
    sizes = (1_000, 10_000) if args.quick else (10_000, 100_000)
    sessions = 200 if args.quick else 1_000
    rows = [
        *stream_rows(args.runs, sizes, python),
        *session_rows(args.runs, sessions, python),
        *startup_rows(args.runs, python),
        *process_rows(args.runs),
    ]
    if args.cli_overhead:
        rows += cli_overhead_rows(max(args.runs, 5), clis)
    if args.scale:
        rows += scale_rows(args.runs, args.quick)
        rows += postgresql_rows()
        rows += serve_rows()
    print_table(rows, python is not None)
    load = os.getloadavg()
    where = f"superqode from {python}" if python else "superqode not installed"
    print(f"({started}; medians of {args.runs}; load average {load[0]:.1f}; {where})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
