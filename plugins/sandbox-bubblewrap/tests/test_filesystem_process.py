"""Filesystem and process isolation, probed for real from inside bwrap."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from sandbox_bubblewrap import NetworkPolicy


def _pids_with(marker: str, last_arg: str | None = None, first_arg: str | None = None) -> list[int]:
    """Host pids whose command line contains ``marker`` (and starts/ends as given)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if marker.encode() not in cmdline:
            continue
        args = cmdline.rstrip(b"\0").split(b"\0")
        if last_arg is not None and args[-1] != last_arg.encode():
            continue
        if first_arg is not None and args[0] != first_arg.encode():
            continue
        found.append(int(entry))
    return found


def _wait_for(predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_read_only_root_writable_workspace_private_tmp(sandbox) -> None:
    sb = sandbox(NetworkPolicy("none"))
    host_marker = Path("/tmp") / f"host-only-{uuid.uuid4().hex}"
    host_marker.write_text("host")
    inside_name = f"inside-only-{uuid.uuid4().hex}"
    try:
        out = sb.json(
            f"""
import subprocess
print(json.dumps({{
    "etc": write("/etc/harness-bwrap-probe"),
    "usr": write("/usr/harness-bwrap-probe"),
    "root_dir": write("/harness-bwrap-probe"),
    "workspace": write({str(sb.workspace / "made-inside.txt")!r}),
    "cwd": os.getcwd(),
    "host_tmp_visible": os.path.exists({str(host_marker)!r}),
    "tmp_write": write("/tmp/{inside_name}"),
    "tmp_listing": sorted(os.listdir("/tmp")),
    "remount": subprocess.run(["mount", "-o", "remount,rw", "/"], capture_output=True).returncode,
    "cap_eff": [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0],
    "nested_userns": subprocess.run(["unshare", "-U", "-r", "true"], capture_output=True).returncode,
}}))
"""
        )
    finally:
        host_marker.unlink()
    assert out["etc"] == out["usr"] == out["root_dir"] == "EROFS"
    assert out["workspace"] == "written"
    assert (sb.workspace / "made-inside.txt").read_text() == "x"
    assert out["cwd"] == str(sb.workspace)
    assert out["host_tmp_visible"] is False
    assert out["tmp_write"] == "written"
    assert not (Path("/tmp") / inside_name).exists()
    assert out["remount"] != 0  # --cap-drop ALL: even as root, no remount rw of /
    assert int(out["cap_eff"], 16) == 0
    assert out["nested_userns"] != 0  # --disable-userns
    assert not Path("/etc/harness-bwrap-probe").exists()


def test_pid_namespace(sandbox) -> None:
    sb = sandbox(NetworkPolicy("none"))
    out = sb.json(
        'print(json.dumps({"pid": os.getpid(), '
        '"pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit())}))'
    )
    assert out["pid"] < 10
    assert len(out["pids"]) < 10  # bwrap's init, the command, nothing of the host


@pytest.mark.parametrize("mode", ["none", "allowlist"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_killpg_leaves_nothing_behind(sandbox, servers, mode, sig) -> None:
    allow = [f"127.0.0.1:{servers['allowed']}"] if mode == "allowlist" else []
    sb = sandbox(NetworkPolicy(mode, allow=allow))
    marker = f"bwrap-killpg-{uuid.uuid4().hex}"
    sleeper = f"import time; time.sleep(600)  # {marker}"
    # Two children, one of which escapes into its own session (setsid) inside the sandbox.
    code = textwrap.dedent(
        f"""
        import subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", {sleeper!r}])
        subprocess.Popen([sys.executable, "-c", {sleeper!r}], start_new_session=True)
        time.sleep(600)
        """
    )
    proc = subprocess.Popen(sb.argv(code), cwd=sb.prepared.cwd, start_new_session=True)
    try:
        started = _wait_for(lambda: len(_pids_with(marker, last_arg=sleeper)) == 2)
        assert started, "sandboxed processes never started"
        os.killpg(proc.pid, sig)
        proc.wait(timeout=10)
        assert _wait_for(lambda: not _pids_with(marker)), f"left behind: {_pids_with(marker)}"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_dies_with_parent(sandbox) -> None:
    sb = sandbox(NetworkPolicy("none"))
    marker = f"bwrap-orphan-{uuid.uuid4().hex}"
    sleeper = f"import time; time.sleep(600)  # {marker}"
    argv = sb.argv(sleeper)
    # A parent that spawns the sandbox in *its* session (no killpg can help), then is SIGKILLed.
    parent_code = textwrap.dedent(
        f"""
        import subprocess, sys, time
        subprocess.Popen({argv!r}, cwd={str(sb.prepared.cwd)!r})
        time.sleep(600)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", parent_code], start_new_session=True)
    try:
        # Wait for the command itself: killing the parent between bwrap's fork and its
        # prctl(PR_SET_PDEATHSIG) would orphan bwrap (a race bwrap does not close).
        started = _wait_for(lambda: bool(_pids_with(marker, last_arg=argv[-1], first_arg=argv[-4])))
        assert started, "sandbox never started"
        parent.kill()  # SIGKILL the parent only, not its group
        parent.wait(timeout=10)
        assert _wait_for(lambda: not _pids_with(marker)), f"left behind: {_pids_with(marker)}"
    finally:
        if parent.poll() is None:
            os.killpg(parent.pid, signal.SIGKILL)
        for pid in _pids_with(marker):
            os.kill(pid, signal.SIGKILL)
