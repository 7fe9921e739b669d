"""Side by side with superqode's Harness Protocol v1 (PyPI ``superqode``, declares Python 3.12+).

Which superqode: ``--superqode-python PATH`` (or ``$HARNESS_BENCH_SUPERQODE_PYTHON``), the
interpreter of a venv that has it - e.g. a Python 3.11 one made with
``python3.11 -m venv /tmp/sq && /tmp/sq/bin/pip install --ignore-requires-python
superqode==2.25.0`` (its harness modules run on 3.11). Otherwise the venv at ``--venv``, created
when missing with a Python 3.12 (``uv python find 3.12``, ``python3.12``, pyenv's) or, failing
that, this interpreter with ``--ignore-requires-python``. It runs the same workloads on both:
one turn streaming N one-char deltas (memory; SQLite and file at a smaller N because superqode's
durable stores are quadratic), sessions x 1 turn (memory, SQLite), import time, and
``harness list`` vs ``superqode harness list``. Prints one line per workload with the ratio.

    python benchmarks/compare_superqode.py [--stream 10000] [--durable-stream 1000]
        [--sessions 1000] [--durable-sessions 200] [--runs 3] [--venv DIR]
        [--superqode-python PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import run_async, time_process, venv_bin

SUPERQODE = "superqode==2.25.0"
ENV_PYTHON = "HARNESS_BENCH_SUPERQODE_PYTHON"
CHECK = "import superqode.harness.protocol_controller"

WORKER = r"""
import asyncio, json, sys, tempfile, time, shutil
from pathlib import Path
from superqode.harness.protocol_controller import HarnessProtocolController
from superqode.harness.protocol_adapters import DirectPythonHarnessAdapter
from superqode.harness.protocol import HarnessCreateRequest
from superqode.harness.store import MemoryHarnessStore, FileHarnessStore, SQLiteHarnessStore

def store_for(kind, d):
    if kind == "memory":
        return MemoryHarnessStore()
    if kind == "file":
        return FileHarnessStore(Path(d) / "files")
    return SQLiteHarnessStore(Path(d) / "store.sqlite3")

async def stream(kind, n):
    async def gen():
        for _ in range(n):
            yield "x"
    d = tempfile.mkdtemp()
    try:
        c = HarnessProtocolController(
            [DirectPythonHarnessAdapter("bench", lambda m, s: gen())], store=store_for(kind, d))
        ref = await c.create(HarnessCreateRequest(harness_id="bench", working_directory=Path(d)))
        count = 0
        start = time.perf_counter()
        async for event in c.send(ref, "go"):
            count += 1
        return count / (time.perf_counter() - start)
    finally:
        shutil.rmtree(d, ignore_errors=True)

async def sessions(kind, n, concurrent):
    async def reply(m, s):
        return "ok"
    d = tempfile.mkdtemp()
    try:
        c = HarnessProtocolController(
            [DirectPythonHarnessAdapter("bench", reply)], store=store_for(kind, d))
        async def one():
            ref = await c.create(HarnessCreateRequest(harness_id="bench", working_directory=Path(d)))
            async for event in c.send(ref, "hi"):
                pass
        start = time.perf_counter()
        if concurrent:
            await asyncio.gather(*(one() for _ in range(n)))
        else:
            for _ in range(n):
                await one()
        return n / (time.perf_counter() - start)
    finally:
        shutil.rmtree(d, ignore_errors=True)

what = sys.argv[1]
args = json.loads(sys.argv[2])
fn = {"stream": stream, "sessions": sessions}[what]
print(json.dumps(asyncio.run(fn(*args))))
"""


def find_python312() -> str | None:
    candidates: list[str] = []
    if shutil.which("uv"):
        found = subprocess.run(
            ["uv", "python", "find", "3.12"], capture_output=True, text=True, check=False
        )
        if found.returncode == 0 and found.stdout.strip():
            candidates.append(found.stdout.strip())
    for name in ("python3.12",):
        path = shutil.which(name)
        if path:
            candidates.append(path)
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates += sorted(str(p) for p in pyenv_root.glob("versions/3.12*/bin/python"))
    for candidate in candidates:
        probe = subprocess.run(
            [candidate, "-c", "import sys; print(sys.version_info >= (3, 12))"],
            capture_output=True,
            text=True,
            check=False,
        )
        if probe.returncode == 0 and probe.stdout.strip() == "True":
            return candidate
    return None


def has_superqode(python: Path) -> bool:
    if not python.exists():
        return False
    check = subprocess.run([str(python), "-c", CHECK], capture_output=True, check=False)
    return check.returncode == 0


def ensure_venv(directory: Path) -> Path | None:
    """``directory``'s interpreter with superqode, creating the venv (and installing) if needed."""
    python = directory / "bin" / "python"
    if has_superqode(python):
        return python
    base = find_python312()
    pip_args = [SUPERQODE]
    if base is None:  # superqode's harness modules run on 3.11; only its metadata says 3.12
        base, pip_args = sys.executable, ["--ignore-requires-python", SUPERQODE]
    subprocess.run([base, "-m", "venv", str(directory)], check=True)
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", *pip_args],
        capture_output=True,
        text=True,
        check=False,
    )
    if installed.returncode != 0:
        print(installed.stderr[-2000:], file=sys.stderr)
        return None
    return python


def superqode_python(explicit: str | None, venv: str | None = None) -> Path | None:
    """The interpreter to run superqode with: ``explicit`` (or ``$HARNESS_BENCH_SUPERQODE_PYTHON``)
    when it has superqode; else, given ``venv``, that venv (created if needed); else ``None``."""
    chosen = explicit or os.environ.get(ENV_PYTHON)
    if chosen:
        python = Path(chosen)
        return python if has_superqode(python) else None
    if venv is None:
        return None
    return ensure_venv(Path(venv))


def theirs_import_ms(python: Path, runs: int = 5) -> float:
    return statistics.median(import_ms(str(python), "superqode.harness") for _ in range(runs))


def theirs_cli_list(python: Path, runs: int) -> tuple[float, float]:
    """``superqode harness list``: median wall (ms) and max RSS (MB)."""
    sq = str(python.parent / "superqode")
    time_process([sq, "harness", "list"])  # warm
    samples = [time_process([sq, "harness", "list"]) for _ in range(runs)]
    return (
        statistics.median(c[0] for c in samples) * 1000,
        statistics.median(c[1] for c in samples),
    )


def theirs(python: Path, what: str, *args: Any) -> float:
    done = subprocess.run(
        [str(python), "-c", WORKER, what, json.dumps(args)],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(json.loads(done.stdout.strip().splitlines()[-1]))


def ours_stream(kind: str, n: int) -> float:
    import ledger

    elapsed, _cpu, count = run_async(ledger._turn_once, kind, n)
    return count / elapsed


def ours_sessions(kind: str, n: int, concurrent: bool) -> float:
    import sessions

    rate: float = run_async(sessions._run, kind, n, concurrent)
    return rate


def import_ms(python: str, module: str) -> float:
    done = subprocess.run(
        [python, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
    )
    for line in done.stderr.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == module:
            return int(parts[1]) / 1000
    raise RuntimeError(f"no importtime line for {module}")


def line(workload: str, ours: float, theirs_: float, unit: str, higher_is_better: bool) -> None:
    ratio = ours / theirs_ if higher_is_better else theirs_ / ours
    print(
        f"{workload}: harness_core {ours:,.1f} {unit} | superqode {theirs_:,.1f} {unit} | "
        f"{ratio:,.1f}x {'faster' if ratio >= 1 else 'slower'}",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stream", type=int, default=10_000)
    parser.add_argument("--durable-stream", type=int, default=1_000)
    parser.add_argument("--sessions", type=int, default=1_000)
    parser.add_argument("--durable-sessions", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--venv",
        default=os.path.join(
            os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
            "harness-bench",
            "superqode-venv",
        ),
    )
    parser.add_argument(
        "--superqode-python",
        help=f"interpreter of a venv with {SUPERQODE} (default: ${ENV_PYTHON}, else --venv)",
    )
    args = parser.parse_args()
    python = superqode_python(args.superqode_python, args.venv)
    if python is None:
        print(f"compare_superqode: skipped - superqode not installed ({SUPERQODE} did not import)")
        return 0
    runs = args.runs

    def med(fn: Any, *a: Any) -> float:
        return statistics.median(fn(*a) for _ in range(runs))

    n = args.stream
    line(
        f"stream.memory.{n}",
        med(ours_stream, "memory", n),
        med(theirs, python, "stream", "memory", n),
        "events/s",
        True,
    )
    d = args.durable_stream
    line(
        f"stream.sqlite.{d}",
        med(ours_stream, "sqlite", d),
        med(theirs, python, "stream", "sqlite", d),
        "events/s",
        True,
    )
    line(
        f"stream.file-vs-jsonl.{d}",
        med(ours_stream, "jsonl", d),
        med(theirs, python, "stream", "file", d),
        "events/s",
        True,
    )
    s = args.sessions
    line(
        f"sessions.memory.{s}.sequential",
        med(ours_sessions, "memory", s, False),
        med(theirs, python, "sessions", "memory", s, False),
        "sessions/s",
        True,
    )
    ds = args.durable_sessions
    for mode, concurrent in (("sequential", False), ("concurrent", True)):
        line(
            f"sessions.sqlite.{ds}.{mode}",
            med(ours_sessions, "sqlite", ds, concurrent),
            med(theirs, python, "sessions", "sqlite", ds, concurrent),
            "sessions/s",
            True,
        )
    imports_ours = statistics.median(import_ms(sys.executable, "harness_core") for _ in range(5))
    imports_theirs = theirs_import_ms(python)
    line("import (harness_core vs superqode.harness)", imports_ours, imports_theirs, "ms", False)
    ours_cli = [time_process([venv_bin("harness"), "list"]) for _ in range(runs)]
    theirs_wall, theirs_rss = theirs_cli_list(python, runs)
    line(
        "cli list wall", statistics.median(c[0] for c in ours_cli) * 1000, theirs_wall, "ms", False
    )
    line("cli list max RSS", statistics.median(c[1] for c in ours_cli), theirs_rss, "MB", False)
    started = time.strftime("%Y-%m-%d %H:%M")
    print(f"(superqode from {python}; {started}; medians of {runs})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
