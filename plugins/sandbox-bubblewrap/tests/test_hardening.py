"""Probes of the hardening, from inside a real provisioned sandbox: the unprivileged user (host
files only root may read stay unreadable), resource limits, the seccomp filter, and the
workspace handed back to its owner afterwards. Like the network-policy tests, each probe runs
Python inside the sandbox and reports what the kernel said."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from harness_hookspecs import HarnessError, SandboxRequest, SandboxSpec
from sandbox_bubblewrap import BubblewrapSandboxProvider
from sandbox_bubblewrap.hardening import DENIED_X86_64, seccomp_supported

PYTHON = os.path.realpath(sys.executable)
EXPOSE = [os.path.realpath(sys.base_prefix)]

PRELUDE = r"""
import ctypes, errno, json, os, resource, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
def call(nr, *args):
    ctypes.set_errno(0)
    result = libc.syscall(nr, *args)
    return "ok" if result >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")
def read(path):
    try:
        with open(path, "rb") as f:
            f.read(1)
        return "read"
    except OSError as e:
        return errno.errorcode.get(e.errno, "?")
"""

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="the user switch needs a root host")


async def run_inside(tmp_path: Path, code: str, **config: object) -> tuple[int, dict, str]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    provider = BubblewrapSandboxProvider(runtime_dir=tmp_path / "rt")
    request = SandboxRequest(
        session_id="s",
        harness="probe",
        workspace=str(workspace),
        spec=SandboxSpec(provider="bubblewrap", config={"ro_paths": EXPOSE, **config}),
        posture="auto",
        state_dir=None,
    )
    handle = await provider.provision(request)
    try:
        done = await anyio.run_process(
            [*handle.command_prefix, PYTHON, "-I", "-c", PRELUDE + code],
            cwd=handle.workspace,
            check=False,
        )
    finally:
        await provider.finalize(handle, "success")
    out = done.stdout.decode().strip().splitlines()
    return done.returncode, (json.loads(out[-1]) if out else {}), done.stderr.decode()


def inside(tmp_path: Path, code: str, **config: object) -> dict:
    code_, result, err = anyio.run(lambda: run_inside(tmp_path, code, **config))
    assert code_ == 0, err
    return result


@root_only
def test_root_only_host_files_are_unreadable_and_no_capabilities(bwrap, tmp_path):
    result = inside(
        tmp_path,
        "status = dict(l.split(':\\t') for l in open('/proc/self/status').read().splitlines()"
        " if ':\\t' in l)\n"
        "print(json.dumps(dict(uid=os.getuid(), shadow=read('/etc/shadow'), root=read('/root'),"
        " cap=status['CapEff'].strip(), nnp=status['NoNewPrivs'].strip(),"
        " passwd=read('/etc/passwd'), write=open('out.txt', 'w').write('x'))))",
    )
    assert result == {
        "uid": 65534,
        "shadow": "EACCES",
        "root": "EISDIR",  # an empty tmpfs: the host /root is not there at all
        "cap": "0000000000000000",
        "nnp": "1",
        "passwd": "read",
        "write": 1,
    }


@root_only
def test_the_workspace_is_given_back_to_its_owner(bwrap, tmp_path):
    inside(tmp_path, "open('made.txt', 'w').write('x'); print(json.dumps({}))")
    made = tmp_path / "ws" / "made.txt"
    assert made.stat().st_uid == 0 and (tmp_path / "ws").stat().st_uid == 0


def test_user_host_keeps_the_callers_uid(bwrap, tmp_path):
    result = inside(tmp_path, "print(json.dumps(dict(uid=os.getuid())))", user="host")
    assert result == {"uid": os.getuid()}


@root_only
def test_memory_limit(bwrap, tmp_path):
    code = (
        "try:\n    block = bytearray(512 * 1024 * 1024); got = 'allocated'\n"
        "except MemoryError:\n    got = 'MemoryError'\n"
        "print(json.dumps(dict(got=got, limit=resource.getrlimit(resource.RLIMIT_AS)[0])))"
    )
    assert inside(tmp_path, code, limits={"memory_mb": 256}) == {
        "got": "MemoryError",
        "limit": 256 * 1024 * 1024,
    }
    assert inside(tmp_path, code)["got"] == "allocated"


def test_cpu_limit(bwrap, tmp_path):
    code = "while True:\n    pass"
    status, _, _ = anyio.run(lambda: run_inside(tmp_path, code, limits={"cpu_seconds": 1}))
    assert status in (-24, 128 + 24, -9, 137), status  # SIGXCPU (or SIGKILL at the hard limit)


@root_only
def test_process_limit(bwrap, tmp_path):
    code = (
        "procs, refused = [], 0\n"
        "for _ in range(12):\n"
        "    try:\n        procs.append(subprocess.Popen(['sleep', '5']))\n"
        "    except OSError as e:\n        refused += 1\n"
        "[p.kill() for p in procs]\n"
        "print(json.dumps(dict(started=len(procs), refused=refused)))"
    )
    result = inside(tmp_path, code, limits={"processes": 6})
    assert result["refused"] > 0 and result["started"] < 6, result
    assert inside(tmp_path, code)["refused"] == 0


@pytest.mark.skipif(not seccomp_supported(), reason="the seccomp filter is x86_64 only")
def test_seccomp_refuses_what_a_harness_never_needs(bwrap, tmp_path):
    calls = {
        "ptrace": "call(101, 0, 0, 0, 0)",  # PTRACE_TRACEME
        "mount": "call(165, b'none', b'/tmp', b'tmpfs', 0, 0)",
        "unshare": "call(272, 0x10000000)",  # CLONE_NEWUSER
        "kexec_load": "call(246, 0, 0, 0, 0)",
        "bpf": "call(321, 0, 0, 0)",
        "keyctl": "call(250, 0, 0, 0, 0, 0)",
        "userfaultfd": "call(323, 0)",
        "clone3": "call(435, 0, 0)",
        "getpid": "call(39)",
    }
    body = ", ".join(f"{name!r}: {expr}" for name, expr in calls.items())
    result = inside(
        tmp_path,
        f"r = {{{body}}}\n"
        "r['subprocess'] = subprocess.run(['true']).returncode\n"
        "r['nested_userns'] = subprocess.run(['unshare', '-U', 'true'],"
        " stderr=subprocess.DEVNULL).returncode != 0\n"
        "print(json.dumps(r))",
    )
    assert result == {
        "ptrace": "EPERM",
        "mount": "EPERM",
        "unshare": "EPERM",
        "kexec_load": "EPERM",
        "bpf": "EPERM",
        "keyctl": "EPERM",
        "userfaultfd": "EPERM",
        "clone3": "ENOSYS",
        "getpid": "ok",
        "subprocess": 0,
        "nested_userns": True,
    }
    assert {"ptrace", "mount", "kexec_load", "init_module"} <= set(DENIED_X86_64)
    without = inside(tmp_path, f"print(json.dumps({{'ptrace': {calls['ptrace']}}}))", seccomp=False)
    assert without == {"ptrace": "ok"}


def test_bad_hardening_config_is_one_clear_refusal(bwrap, tmp_path):
    for config in (
        {"limits": {"memory_mb": -1}},
        {"limits": {"swap": 1}},
        {"user": "root"},
        {"seccomp": "yes"},
    ):
        with pytest.raises(HarnessError) as caught:
            anyio.run(lambda c=config: run_inside(tmp_path, "", **c))
        assert caught.value.reason == "invalid-request"
