"""The shadow git checkpoint store: byte-exact restores, the user's .git left alone, ignore
rules and size limits, and a rewind killed with SIGKILL found whole before or after."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from harness_hookspecs import HarnessError

from harness_core.checkpoints import CheckpointSettings, CheckpointStore


def tree_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if ".git" in path.relative_to(root).parts:
            continue
        mode = os.lstat(path).st_mode
        digest.update(f"{path.relative_to(root).as_posix()}\0{mode:o}\0".encode())
        if path.is_symlink():
            digest.update(os.readlink(path).encode())
        elif path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def test_restore_is_byte_exact_and_leaves_the_users_git_alone(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    git_before = tree_hash(ws / ".git")
    (ws / "a.txt").write_bytes(b"one\r\nbinary\x00\xff")
    (ws / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(ws / "run.sh", 0o755)
    os.symlink("a.txt", ws / "link")
    (ws / "deep" / "er").mkdir(parents=True)
    (ws / "deep" / "er" / "x").write_text("x")
    store = CheckpointStore(tmp_path / "store", ws, CheckpointSettings())
    first = store.snapshot()
    before = tree_hash(ws)
    (ws / "a.txt").write_text("changed")
    os.chmod(ws / "run.sh", 0o644)
    os.remove(ws / "link")
    (ws / "link").mkdir()
    (ws / "link" / "inside").write_text("now a directory")
    (ws / "deep" / "er" / "x").unlink()
    (ws / "new").mkdir()
    (ws / "new" / "file").write_text("new")
    second = store.snapshot()
    assert sorted(line.split("\t")[2] for line in store.changes(first, second)) == [
        "a.txt",
        "deep/er/x",
        "link",
        "link/inside",
        "new/file",
        "run.sh",
    ]
    assert "+now a directory" in store.diff(first, second)
    store.restore(first)
    assert tree_hash(ws) == before
    assert not (ws / "new").exists()
    assert tree_hash(ws / ".git") == git_before  # the user's repository never touched
    assert not (tmp_path / "store").is_relative_to(ws)


def test_ignore_rules_and_large_files(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".gitignore").write_text("build/\n")
    (ws / "build").mkdir()
    (ws / "build" / "out.o").write_text("object")
    (ws / "cache.tmp").write_text("cache")
    (ws / "huge.bin").write_bytes(b"\0" * 5000)
    (ws / "src.py").write_text("print()")
    settings = CheckpointSettings(max_file_bytes=4096, ignore=("*.tmp",))
    store = CheckpointStore(tmp_path / "store", ws, settings)
    first = store.snapshot()
    (ws / "src.py").write_text("print(1)")
    (ws / "build" / "out.o").write_text("rebuilt")
    second = store.snapshot()
    assert [line.split("\t")[2] for line in store.changes(first, second)] == ["src.py"]
    store.restore(first)
    assert (ws / "src.py").read_text() == "print()"
    # left out of the snapshots, so left alone by the rewind
    assert (ws / "build" / "out.o").read_text() == "rebuilt"
    assert (ws / "huge.bin").stat().st_size == 5000 and (ws / "cache.tmp").exists()


def test_over_the_size_limit_is_refused(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a").write_bytes(b"a" * 3000)
    store = CheckpointStore(tmp_path / "store", ws, CheckpointSettings(max_bytes=2048))
    with pytest.raises(HarnessError) as refused:
        store.snapshot()
    assert refused.value.reason == "limit-exceeded"


KILLER = """
import sys
from pathlib import Path
from harness_core.checkpoints import CheckpointSettings, CheckpointStore
store = CheckpointStore(Path(sys.argv[1]), Path(sys.argv[2]), CheckpointSettings())
print("go", flush=True)
store.restore(sys.argv[3])
print("done", flush=True)
"""


@pytest.mark.parametrize("delay", [0.0, 0.15, 0.3, 0.6])
def test_a_rewind_killed_midway_is_found_whole(tmp_path, delay):
    ws = tmp_path / "ws"
    ws.mkdir()
    for n in range(1500):
        (ws / f"d{n % 30}").mkdir(exist_ok=True)
        (ws / f"d{n % 30}" / f"f{n}.txt").write_text(f"first {n}\n" * 20)
    store = CheckpointStore(tmp_path / "store", ws, CheckpointSettings())
    first = store.snapshot()
    first_hash = tree_hash(ws)
    for n in range(1500):
        path = ws / f"d{n % 30}" / f"f{n}.txt"
        if n % 3 == 0:
            path.unlink()
        else:
            path.write_text(f"second {n}\n")
    for n in range(500):
        (ws / "added").mkdir(exist_ok=True)
        (ws / "added" / f"g{n}").write_text("added")
    store.snapshot()
    second_hash = tree_hash(ws)
    child = subprocess.Popen(
        [sys.executable, "-c", KILLER, str(tmp_path / "store"), str(ws), first],
        stdout=subprocess.PIPE,
    )
    assert child.stdout is not None
    assert child.stdout.readline() == b"go\n"
    time.sleep(delay)
    child.send_signal(signal.SIGKILL)
    child.wait()
    # The next user of the store finishes a rewind the killed process journaled.
    CheckpointStore(tmp_path / "store", ws, CheckpointSettings()).recover()
    assert tree_hash(ws) in (first_hash, second_hash)
    if (tmp_path / "store" / "REWIND").exists():
        pytest.fail("the journal outlived the recovery")
