"""Import time of ``harness_hookspecs`` and ``harness_core`` (``python -X importtime``, median).

The figure is the cumulative import time ``-X importtime`` reports for the package in a fresh
interpreter (interpreter start-up excluded).

``--until-spawn NAME``: a fresh ``harness run NAME hi`` (memory ledger) up to the moment it
starts the CLI - an audit hook ends the process at the CLI's ``subprocess.Popen`` (the proctree
watcher's spawn before it is let through) - CPU (user + sys) and wall, median of ``--runs``;
with ``--before PYTHONPATH`` the same with older code first on the path, run by run
interleaved. The CLIs come from ``tools/npm/node_modules/.bin``.

    python benchmarks/imports.py [--runs 7] [--until-spawn claude-code [--before PYTHONPATH]]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import ROOT, figure

TARGETS = {"harness_core": "<= 20 ms"}


def import_ms(module: str) -> float:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
    )
    for line in done.stderr.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == module:
            return int(parts[1]) / 1000
    raise RuntimeError(f"no importtime line for {module}")


#: ``harness`` ending itself when it starts the CLI (the proctree watcher goes first).
UNTIL_SPAWN = """
import os, sys
def _hook(event, args):
    if event == "subprocess.Popen" and "proctree" not in str(args):
        os._exit(0)
sys.addaudithook(_hook)
sys.argv = ["harness", *sys.argv[1:]]
from harness_core.cli import main
sys.exit(main())
"""


def until_spawn(name: str, workspace: str, pythonpath: str | None) -> tuple[float, float]:
    """CPU and wall ms of ``harness run NAME hi`` up to its CLI's spawn."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as users run it: with .pyc files
    env["PATH"] = f"{ROOT / 'tools' / 'npm' / 'node_modules' / '.bin'}{os.pathsep}{env['PATH']}"
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    argv = [sys.executable, "-c", UNTIL_SPAWN, "run", name, "hi", "--ledger", "memory:"]
    argv += ["--workspace", workspace]
    start = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)  # this child's own CPU, to the microsecond
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"harness run {name} exited {child.returncode} before its spawn")
    return (usage.ru_utime + usage.ru_stime) * 1000, wall * 1000


def _spawn_figures(name: str, runs: int, before: str | None) -> None:
    sides = {"this tree": None, **({"before": before} if before else {})}
    samples: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
    with tempfile.TemporaryDirectory(prefix="harness-bench-spawn-") as workspace:
        for path in sides.values():
            until_spawn(name, workspace, path)  # warm: .pyc files, the plugin listing cache
        for _ in range(runs):
            for side, path in sides.items():
                samples[side].append(until_spawn(name, workspace, path))
    for side, runs_ in samples.items():
        cpu, wall = sorted(c for c, _ in runs_), sorted(w for _, w in runs_)
        figure(
            f"startup.{name}.until_spawn.{side.replace(' ', '_')}",
            statistics.median(cpu),
            "ms CPU",
            "",
            f"[{cpu[0]:.0f}-{cpu[-1]:.0f}]; wall {statistics.median(wall):.0f} ms "
            f"[{wall[0]:.0f}-{wall[-1]:.0f}]; median of {len(runs_)}, interleaved; "
            f"load average {os.getloadavg()[0]:.1f}",
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--until-spawn", metavar="NAME")
    parser.add_argument("--before", metavar="PYTHONPATH")
    args = parser.parse_args()
    if args.until_spawn:
        _spawn_figures(args.until_spawn, args.runs, args.before)
        return 0
    for module in ("harness_hookspecs", "harness_core"):
        value = statistics.median(import_ms(module) for _ in range(args.runs))
        figure(
            f"import.{module}",
            value,
            "ms",
            TARGETS.get(module, ""),
            f"-X importtime cumulative, median of {args.runs}",
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
