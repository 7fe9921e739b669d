"""A spawned program's stderr is read through a pipe into a bounded tail: a program that floods
it costs neither disk nor memory, and the tail is still the last bytes it wrote."""

from __future__ import annotations

import os
import sys

import anyio

from harness_core.process import STDERR_TAIL, base_environment, spawn

FLOOD = """
import os, sys
print(os.readlink("/proc/self/fd/2"), flush=True)
block = b"x" * 65536
for _ in range(320):  # 20 MiB, no newline
    sys.stderr.buffer.write(block)
sys.stderr.buffer.write(b"THE END")
sys.stderr.flush()
"""


def test_a_flood_of_stderr_goes_through_a_pipe_and_keeps_only_its_tail(tmp_path):
    async def main():
        process = await spawn(
            [sys.executable, "-c", FLOOD], env=base_environment(), cwd=str(tmp_path), stdin=False
        )
        try:
            lines = [line async for line in process.lines()]
            assert await process.wait() == 0
            return lines, process.stderr_tail()
        finally:
            await process.terminate()

    lines, tail = anyio.run(main)
    # not a file (a deleted temporary file grew with every byte the program wrote)
    assert lines[0].startswith(b"pipe:"), lines
    assert len(tail) == STDERR_TAIL and tail.endswith(b"x" * 100 + b"THE END")


def test_the_tail_is_complete_when_the_program_exits_at_once(tmp_path):
    async def main():
        process = await spawn(
            [sys.executable, "-c", "import sys; sys.stderr.write('fatal: no\\n'); sys.exit(3)"],
            env=base_environment(),
            cwd=str(tmp_path),
            stdin=False,
        )
        try:
            assert await process.wait() == 3
            return process.stderr_tail()
        finally:
            await process.terminate()

    for _ in range(5):
        assert anyio.run(main) == b"fatal: no\n"
    assert os.listdir(tmp_path) == []
