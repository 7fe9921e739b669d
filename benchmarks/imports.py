"""Import time of ``harness_hookspecs`` and ``harness_core`` (``python -X importtime``, median).

The figure is the cumulative import time ``-X importtime`` reports for the package in a fresh
interpreter (interpreter start-up excluded).

    python benchmarks/imports.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import figure

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
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
