"""The kill path's pieces: a leader's subtree without a /proc scan, a cgroup killed and waited
for until empty, and ``terminate(0)`` killing at once (no SIGTERM round)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness_core import process, proctree
from harness_core.testing.waiting import wait_until

pytestmark = pytest.mark.anyio
#: A shell whose child and grandchild sleep; it traps SIGTERM (a SIGTERM round would be seen).
TREE = "trap 'echo term > \"$1\"' TERM; (sleep 30 & sleep 30) & wait; wait"


def _start(tmp_path: Path) -> tuple[subprocess.Popen[bytes], set[int]]:
    shell = subprocess.Popen(["sh", "-c", TREE, "sh", str(tmp_path / "term")])
    deadline = time.monotonic() + 10
    while True:
        table = proctree.snapshot()
        tree = proctree.members(table, [(shell.pid, table[shell.pid].start)], "no-tag")
        if len(tree) >= 3 or time.monotonic() > deadline:  # the shell, a subshell, a sleep
            return shell, tree - {shell.pid}
        time.sleep(0.01)


def test_descendants_is_the_subtree_while_the_leader_is_the_same_process(tmp_path: Path) -> None:
    if proctree.descendants(1, 0) is None:
        pytest.skip("this kernel has no /proc/PID/task/TID/children")
    shell, expected = _start(tmp_path)
    try:
        start = proctree.read_stat(shell.pid)
        assert start is not None
        assert proctree.descendants(shell.pid, start.start) == expected
        assert proctree.descendants(shell.pid, start.start + 1) == set()  # another process
    finally:
        proctree.signal_all([shell.pid, *expected], signal.SIGKILL)
        shell.wait()
        proctree.reap(expected)


def test_a_killed_cgroup_is_waited_for_until_empty_then_removed(tmp_path: Path) -> None:
    if proctree.cgroup_base() is None:
        pytest.skip("no writable cgroup v2 hierarchy with cgroup.kill here")
    proctree.become_subreaper()  # as spawn does: the orphans of the kill are ours to reap
    shell, tree = _start(tmp_path)
    path = proctree.place(shell.pid, "test-kill")
    assert path is not None
    for pid in tree:  # forked before the move: moved in one by one
        (path / "cgroup.procs").write_text(str(pid))
    members = proctree.signal_cgroup(path)
    assert members == tree | {shell.pid}
    proctree.finish_cgroup(path, members, spawned=(shell.pid,))
    assert not path.exists() or b"populated 0" in (path / "cgroup.events").read_bytes()
    shell.wait()
    assert [pid for pid in tree if proctree.read_stat(pid) is not None] == []
    proctree.remove_cgroups()
    assert not path.exists()


def _command(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


async def test_terminate_at_once_sends_no_sigterm(tmp_path: Path) -> None:
    spawned = await process.spawn(
        ["sh", "-c", TREE, "sh", str(tmp_path / "term")],
        env=process.base_environment(),
        cwd=str(tmp_path),
        stdin=False,
    )
    start = proctree.read_stat(spawned.pid)
    assert start is not None

    def whole_tree() -> set[int]:  # the shell's descendants, once both sleeps run
        table = proctree.snapshot()
        tree = proctree.members(table, [(spawned.pid, start.start)], "no-tag") - {spawned.pid}
        return tree if sum(_command(pid) == "sleep" for pid in tree) == 2 else set()

    tree = await wait_until(whole_tree, what="the shell's subtree")
    await spawned.terminate(0)
    assert spawned.returncode == -signal.SIGKILL
    assert not (tmp_path / "term").exists()  # killed, never asked
    assert [pid for pid in tree if proctree.read_stat(pid) is not None] == []


def test_the_watchdog_path_removes_every_cgroup_and_the_base() -> None:
    """``kill_cgroups`` (what the watchdog runs) leaves no directory behind."""
    if proctree.cgroup_base() is None:
        pytest.skip("no writable cgroup v2 hierarchy with cgroup.kill here")
    code = (
        "import subprocess, sys\n"
        "from harness_core import proctree\n"
        "p = subprocess.Popen(['sleep', '30'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "proctree.place(p.pid, 'w')\n"
        "print(proctree.cgroup_base(), proctree.owner())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    base, owner = out.stdout.split()
    proctree.kill_cgroups(owner)
    assert not Path(base).exists()
