"""``harness run echo`` start-up against its floor, ``python -c "import asyncio, attr"``.

The two alternate (echo, floor, echo, floor, ...) after a warm-up each, so a drift of the
machine's speed reaches both, and each pair gives a ratio; the medians are printed, for wall
time and for CPU (user + system, the kernel's accounting of the finished child: ``getrusage``,
microseconds - steadier than wall on a loaded machine). ``--before PYTHONPATH`` also times
``harness run echo`` with that code first on the path (a checkout of the code before a change,
its package roots joined by ``:``) in the same rotation, for before/after figures of one run;
``--after PYTHONPATH`` puts the code after the change on the path the same way (its imports
then search as many path entries as the ``--before`` code's do).

A third command, :data:`REQUIRED`, imports only what every run needs before anything of its
own (anyio's asyncio backend, the contract package): its ratio to the floor is how low the
run's own ratio can go without changing those two.

Both run as a user runs them: bytecode caches written and used (``PYTHONDONTWRITEBYTECODE``
unset), no ``HARNESS_CORE_PLUGINS``; the run keeps its ledger between runs (the plugin listing
cached, as after a user's first run).

    python benchmarks/startup.py --runs 21 [--before /tmp/old:/tmp/old/hookspecs:...]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import figure, positive_int, venv_bin

PROMPT = "Say ok"
#: The floor of any process that has imported the runtime's two base dependencies (anyio runs
#: on asyncio; the contract is attrs classes).
FLOOR = [sys.executable, "-c", "import asyncio, attr"]
#: What every run imports before anything of its own: anyio's asyncio backend (``anyio.run``
#: loads it) and the contract package (every event is an instance of its attrs classes).
REQUIRED = [
    sys.executable,
    "-c",
    "import asyncio, attr, anyio._backends._asyncio, harness_hookspecs",
]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("HARNESS_CORE_PLUGINS", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as users run harness: with .pyc files
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU ms of one process run to its end (its output read and dropped)."""
    cpu = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        tail = (done.stderr or done.stdout)[-400:].decode(errors="replace")
        raise RuntimeError(f"{argv[:3]} exited {done.returncode}: {tail}")
    return wall * 1000, (_children_cpu() - cpu) * 1000


def echo_over_floor(
    runs: int, before: str | None = None, after: str | None = None
) -> dict[str, float]:
    """Paired medians: ``echo``/``floor`` (and ``before``) wall and CPU ms, and the ratios
    ``ratio_wall``/``ratio_cpu`` (echo / floor, pair by pair; ``required_ratio_*``: the imports
    every run needs (:data:`REQUIRED`) / floor; ``before_*``: before / floor,
    ``after_before_cpu``: echo / before)."""
    base = Path(tempfile.mkdtemp(prefix="harness-bench-startup-"))
    try:
        commands: dict[str, tuple[list[str], dict[str, str]]] = {
            "floor": (FLOOR, _env()),
            "required": (REQUIRED, {**_env(), **({"PYTHONPATH": after} if after else {})}),
        }
        for name, path in (("echo", after), ("before", before)):
            if name == "before" and path is None:
                continue
            env = {**_env(), "HARNESS_STATE_DIR": str(base / name / "state")}
            if path is not None:
                env["PYTHONPATH"] = path
            argv = [venv_bin("harness"), "run", "echo", PROMPT, "--workspace", str(base)]
            argv += ["--close", "--ledger", f"sqlite:///{base}/{name}.sqlite"]
            commands[name] = (argv, env)
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for round_ in range(runs + 1):  # the first round warms: .pyc files, the plugin listing
            for name, (argv, env) in commands.items():
                sample = timed(argv, env)
                if round_:
                    samples[name].append(sample)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    result: dict[str, float] = {}
    for name, pairs in samples.items():
        result[f"{name}_wall"] = statistics.median(p[0] for p in pairs)
        result[f"{name}_cpu"] = statistics.median(p[1] for p in pairs)
    for name, prefix in (
        ("echo", "ratio"),
        ("before", "before_ratio"),
        ("required", "required_ratio"),
    ):
        if name in samples:
            for i, kind in enumerate(("wall", "cpu")):
                result[f"{prefix}_{kind}"] = statistics.median(
                    a[i] / f[i] for a, f in zip(samples[name], samples["floor"], strict=True)
                )
    if "before" in samples:
        result["after_before_cpu"] = statistics.median(
            a[1] / b[1] for a, b in zip(samples["echo"], samples["before"], strict=True)
        )
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=positive_int, default=11)
    parser.add_argument("--before", metavar="PYTHONPATH", help="also time this code, paired")
    parser.add_argument("--after", metavar="PYTHONPATH", help="time this code as the run")
    args = parser.parse_args()
    r = echo_over_floor(args.runs, args.before, args.after)
    load = os.getloadavg()[0]
    note = f"median of {args.runs} alternating runs, load {load:.1f}"
    figure("startup.floor", r["floor_cpu"], "ms CPU", "", f"wall {r['floor_wall']:.0f} ms; {note}")
    figure("startup.echo", r["echo_cpu"], "ms CPU", "", f"wall {r['echo_wall']:.0f} ms")
    figure("startup.echo_over_floor.cpu", r["ratio_cpu"], "x", "<= 1.5x", "pair by pair")
    figure("startup.echo_over_floor.wall", r["ratio_wall"], "x", "<= 1.5x", "pair by pair")
    required = "imports only: anyio's asyncio backend and the contract (harness_hookspecs)"
    figure("startup.required_over_floor.cpu", r["required_ratio_cpu"], "x", "", required)
    figure("startup.required_over_floor.wall", r["required_ratio_wall"], "x", "", "pair by pair")
    if args.before:
        figure("startup.before", r["before_cpu"], "ms CPU", "", f"wall {r['before_wall']:.0f} ms")
        figure("startup.before_over_floor.cpu", r["before_ratio_cpu"], "x", "", "pair by pair")
        figure("startup.before_over_floor.wall", r["before_ratio_wall"], "x", "", "pair by pair")
        figure("startup.echo_over_before.cpu", r["after_before_cpu"], "x", "", "pair by pair")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
