"""Shared helpers for the benchmark scripts (plain Python; each script prints one line per figure)."""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def figure(name: str, value: float, unit: str, target: str = "", note: str = "") -> None:
    """Print one figure as one line: ``name: value unit  (target ...)  note``."""
    if value >= 100:
        shown = f"{value:,.0f}"
    elif value >= 10:
        shown = f"{value:.1f}"
    else:
        shown = f"{value:.3g}"
    parts = [f"{name}: {shown} {unit}"]
    if target:
        parts.append(f"(target {target})")
    if note:
        parts.append(note)
    print("  ".join(parts), flush=True)


def median_of(runs: int, measure: Callable[[], float]) -> float:
    return statistics.median(measure() for _ in range(runs))


#: A PostgreSQL server's URL (``postgresql.py`` starts one and sets it): the ``postgresql`` kind.
ENV_POSTGRESQL = "HARNESS_BENCH_POSTGRESQL_URL"


def open_store(kind: str, directory: str) -> Any:
    """A fresh ledger of ``kind`` in ``directory``: memory, jsonl, sqlite, or postgresql /
    postgresql-relaxed (a new schema on the server at ``$HARNESS_BENCH_POSTGRESQL_URL``)."""
    from harness_core.ledger import open_ledger

    if kind.startswith("postgresql"):
        import uuid

        import psycopg
        from ledger_postgresql.store import PostgresStore
        from ledger_postgresql.testing import schema_url

        server, schema = os.environ[ENV_POSTGRESQL], f"bench_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(server, autocommit=True) as connection:
            connection.execute(f"CREATE SCHEMA {schema}")
        url = schema_url(server, schema)
        if kind == "postgresql-relaxed":  # commits return before the WAL flush (SQLite NORMAL-like)
            url += "%20-csynchronous_commit%3Doff"
        return PostgresStore(url)
    if kind == "memory":
        return open_ledger("memory:")
    if kind == "jsonl":
        return open_ledger(f"jsonl://{os.path.join(directory, 'jsonl')}")
    return open_ledger(f"sqlite://{os.path.join(directory, 'ledger.sqlite')}")


def tempdir(prefix: str) -> str:
    return tempfile.mkdtemp(prefix=f"harness-bench-{prefix}-")


def rmtree(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


def venv_bin(name: str) -> str:
    """A console script next to the running interpreter (the project venv)."""
    candidate = Path(sys.executable).parent / name
    return str(candidate) if candidate.exists() else (shutil.which(name) or name)


def time_process(argv: Sequence[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Run ``argv`` once; return (wall seconds, max RSS in MB).

    Uses ``/usr/bin/time -v`` when present (its max RSS is the child's own); otherwise
    ``resource.getrusage(RUSAGE_CHILDREN)`` (max over all children reaped so far).
    """
    full_env = {**os.environ, **(env or {})}
    if os.path.exists("/usr/bin/time"):
        start = time.perf_counter()
        done = subprocess.run(
            ["/usr/bin/time", "-v", *argv],
            env=full_env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - start
        rss_kb = 0.0
        for line in done.stderr.splitlines():
            line = line.strip()
            if line.startswith("Maximum resident set size"):
                rss_kb = float(line.rsplit(":", 1)[1])
        if done.returncode != 0:
            raise RuntimeError(f"{argv} exited {done.returncode}: {done.stderr[-500:]}")
        return wall, rss_kb / 1024
    start = time.perf_counter()
    subprocess.run(argv, env=full_env, stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    return wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def run_async(function: Callable[..., Any], *args: Any) -> Any:
    import anyio

    return anyio.run(function, *args)


def positive_int(text: str) -> int:
    """argparse ``type`` for a count: a medians-of-0 run has no figure to print."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value
