"""CLI start-up: ``harness list`` and ``harness --help``, wall time and max RSS (median).

Runs the ``harness`` script of the current environment (bundled plugins installed), timed with
``/usr/bin/time -v`` when present (else ``getrusage(RUSAGE_CHILDREN)``), with bytecode caching
on; the warm-up run also fills the plugin listing cache (see ``harness_core.plugin_cache``).

    python benchmarks/cli.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import figure, time_process, venv_bin


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # as users run it: with .pyc files
    harness = venv_bin("harness")
    for name, argv in (("list", [harness, "list"]), ("help", [harness, "--help"])):
        time_process(argv)  # warm the page cache and __pycache__
        samples = [time_process(argv) for _ in range(args.runs)]
        figure(
            f"cli.{name}.wall",
            statistics.median(s[0] for s in samples) * 1000,
            "ms",
            "<= 150 ms" if name == "list" else "",
            f"median of {args.runs}",
        )
        figure(f"cli.{name}.max_rss", statistics.median(s[1] for s in samples), "MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
