"""Workspace checkpoints (the shadow git store, :mod:`harness_core.checkpoints`): the time to
snapshot a workspace of ``--files`` files adding up to ``--mb`` MB, first (every file hashed and
compressed into the store) and incremental (``--changed`` files edited since), the diff of the
incremental step and a rewind to the first checkpoint; plus the store's size on disk.

    python benchmarks/checkpoints.py [--files 10000] [--mb 200] [--changed 20]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import figure, rmtree, tempdir

from harness_core.checkpoints import CheckpointSettings, CheckpointStore


def populate(root: Path, files: int, total: int) -> None:
    size = total // files
    for index in range(files):
        directory = root / f"d{index % 100:02d}"
        directory.mkdir(exist_ok=True)
        # half text-like (compressible), half random (a binary's worst case)
        body = os.urandom(size // 2) + (b"line %d\n" % index) * (size // 2 // 10)
        (directory / f"f{index:05d}.dat").write_bytes(body[:size])


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--changed", type=int, default=20)
    args = parser.parse_args()
    root = Path(tempdir("bench-checkpoints-"))
    try:
        workspace = root / "workspace"
        workspace.mkdir()
        populate(workspace, args.files, args.mb * 1024 * 1024)
        settings = CheckpointSettings(max_bytes=(args.mb + 50) * 1024 * 1024)
        store = CheckpointStore(root / "store", workspace, settings)
        label = f"{args.files:,} files / {args.mb} MB"
        started = time.perf_counter()
        first = store.snapshot()
        figure(f"checkpoint, first ({label})", time.perf_counter() - started, "s")
        started = time.perf_counter()
        store.snapshot()
        figure(f"checkpoint, nothing changed ({label})", time.perf_counter() - started, "s")
        for index in range(args.changed):
            path = workspace / f"d{index % 100:02d}" / f"f{index:05d}.dat"
            path.write_bytes(path.read_bytes()[::-1])
        started = time.perf_counter()
        second = store.snapshot()
        took = time.perf_counter() - started
        figure(f"checkpoint, incremental ({args.changed} files changed)", took, "s")
        started = time.perf_counter()
        changes = store.changes(first, second)
        figure(f"changed files listed ({len(changes)})", time.perf_counter() - started, "s")
        started = time.perf_counter()
        store.restore(first)
        figure("rewind to the first checkpoint", time.perf_counter() - started, "s")
        figure("store size on disk", du(root / "store") / 1024 / 1024, "MB")
    finally:
        rmtree(str(root))


if __name__ == "__main__":
    main()
