"""Hardening around bwrap: an unprivileged user inside, resource limits, a seccomp filter.

Pure builders (no process started here):

- :func:`seccomp_filter` - a classic-BPF seccomp program (x86_64) that fails with ``EPERM`` the
  system calls a harness never needs (ptrace and cross-process memory access, mount and
  namespace calls, kernel modules and kexec, reboot, swap, clock setting, bpf, perf, keyrings,
  userfaultfd, ...), makes ``clone3`` fail with ``ENOSYS`` (so libc falls back to ``clone``,
  whose flags a classic filter can inspect) and refuses ``clone`` with ``CLONE_NEWUSER``. Other
  architectures and the x32 ABI are refused outright. bwrap installs it (``--seccomp FD``) just
  before it runs the command, after its own namespace set-up.
- :func:`limits_prefix` - ``prlimit`` (util-linux) setting RLIMIT_AS / RLIMIT_CPU / RLIMIT_NPROC
  for bwrap and everything it starts. These are per-process limits (NPROC per uid), not a
  cgroup: a session's processes are each limited, not summed.
- :func:`drop_user_tail` - ``setpriv`` run inside the sandbox, switching to an unprivileged uid
  with no capabilities, no supplementary groups and ``no_new_privs`` (setuid binaries gain
  nothing), so host files only root may read stay unreadable.
"""

from __future__ import annotations

import errno
import shutil
import struct
from dataclasses import dataclass

#: seccomp_data offsets and constants (linux/seccomp.h, linux/audit.h, linux/filter.h).
_NR, _ARCH, _ARG0 = 0, 4, 16
AUDIT_ARCH_X86_64 = 0xC000003E
_X32_BIT = 0x40000000
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_LD_W_ABS = 0x20
_JEQ_K, _JGE_K, _JSET_K = 0x15, 0x35, 0x45
_RET_K = 0x06
CLONE_NEWUSER = 0x10000000

#: x86_64 numbers of the calls refused with EPERM.
DENIED_X86_64 = {
    "ptrace": 101,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "kcmp": 312,
    "mount": 165,
    "umount2": 166,
    "pivot_root": 155,
    "chroot": 161,
    "unshare": 272,
    "setns": 308,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
    "kexec_load": 246,
    "kexec_file_load": 320,
    "init_module": 175,
    "finit_module": 313,
    "delete_module": 176,
    "reboot": 169,
    "swapon": 167,
    "swapoff": 168,
    "acct": 163,
    "settimeofday": 164,
    "clock_settime": 227,
    "clock_adjtime": 305,
    "adjtimex": 159,
    "sethostname": 170,
    "setdomainname": 171,
    "iopl": 172,
    "ioperm": 173,
    "quotactl": 179,
    "bpf": 321,
    "perf_event_open": 298,
    "userfaultfd": 323,
    "keyctl": 250,
    "add_key": 248,
    "request_key": 249,
    "open_by_handle_at": 304,
    "name_to_handle_at": 303,
    "lookup_dcookie": 212,
    "syslog": 103,
}
CLONE_X86_64 = 56
CLONE3_X86_64 = 435


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def seccomp_filter() -> bytes:
    """The BPF program (``struct sock_filter[]``, native byte order) for x86_64."""
    denied = sorted(DENIED_X86_64.values())
    eperm = _RET_ERRNO | errno.EPERM
    enosys = _RET_ERRNO | errno.ENOSYS
    # Layout (jump offsets count instructions after the current one):
    #   0 ld arch; 1 jeq x86_64 ? 3 : 2; 2 ret EPERM
    #   3 ld nr; 4 jge x32 -> DENY
    #   5.. jeq each denied -> DENY; jeq clone3 -> NOSYS; jeq clone ? CLONE : ALLOW
    #   ALLOW; CLONE: ld arg0, jset NEWUSER -> DENY : ALLOW; DENY; NOSYS
    n = len(denied)
    allow = 5 + n + 2  # index of the first ALLOW
    clone_check = allow + 1
    deny = clone_check + 3
    nosys = deny + 1
    program = [
        _insn(_LD_W_ABS, 0, 0, _ARCH),
        _insn(_JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
        _insn(_RET_K, 0, 0, eperm),
        _insn(_LD_W_ABS, 0, 0, _NR),
        _insn(_JGE_K, deny - 5, 0, _X32_BIT),
    ]
    for index, number in enumerate(denied):
        here = 5 + index
        program.append(_insn(_JEQ_K, deny - here - 1, 0, number))
    here = 5 + n
    program.append(_insn(_JEQ_K, nosys - here - 1, 0, CLONE3_X86_64))
    program.append(_insn(_JEQ_K, clone_check - here - 2, 0, CLONE_X86_64))
    program.append(_insn(_RET_K, 0, 0, _RET_ALLOW))  # allow
    program.append(_insn(_LD_W_ABS, 0, 0, _ARG0))  # clone flags (low 32 bits)
    program.append(_insn(_JSET_K, 1, 0, CLONE_NEWUSER))
    program.append(_insn(_RET_K, 0, 0, _RET_ALLOW))
    program.append(_insn(_RET_K, 0, 0, eperm))  # deny
    program.append(_insn(_RET_K, 0, 0, enosys))  # nosys
    assert len(program) == nosys + 1
    return b"".join(program)


def seccomp_supported() -> bool:
    import platform

    return platform.machine() in ("x86_64", "AMD64")


@dataclass(frozen=True)
class Limits:
    """Per-process resource limits for everything in the sandbox (``None``: unlimited)."""

    memory_mb: int | None = None  # RLIMIT_AS (address space; breaks V8 below ~16 GiB)
    cpu_seconds: int | None = None  # RLIMIT_CPU: SIGXCPU, then SIGKILL
    processes: int | None = None  # RLIMIT_NPROC: processes of the sandbox uid (not for root)

    def __post_init__(self) -> None:
        for name in ("memory_mb", "cpu_seconds", "processes"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value <= 0
            ):
                raise ValueError(f"limit {name} must be a positive integer")

    @property
    def any(self) -> bool:
        return any(v is not None for v in (self.memory_mb, self.cpu_seconds, self.processes))


def limits_prefix(limits: Limits, prlimit: str | None = None) -> list[str]:
    if not limits.any:
        return []
    path = prlimit or shutil.which("prlimit")
    if path is None:
        raise ValueError("prlimit (util-linux) is needed for sandbox limits")
    argv = [path]
    if limits.memory_mb is not None:
        argv.append(f"--as={limits.memory_mb * 1024 * 1024}")
    if limits.cpu_seconds is not None:
        argv.append(f"--cpu={limits.cpu_seconds}")
    if limits.processes is not None:
        argv.append(f"--nproc={limits.processes}")
    return [*argv, "--"]


def drop_user_tail(uid: int, gid: int, setpriv: str | None = None) -> list[str]:
    path = setpriv or shutil.which("setpriv")
    if path is None:
        raise ValueError("setpriv (util-linux) is needed to run the sandbox as another user")
    return [
        path,
        f"--reuid={uid}",
        f"--regid={gid}",
        "--clear-groups",
        "--no-new-privs",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--",
    ]


#: Reads the filter file on fd 9 for ``bwrap --seccomp 9`` and execs the rest (same pid).
SECCOMP_FD = 9
SECCOMP_SHIM = ("/bin/sh", "-c", 'f="$1"; shift; exec "$@" 9<"$f"', "sh")


NOBODY = (65534, 65534)


def parse_user(value: object, *, is_root: bool) -> tuple[int, int] | None:
    """Config ``user``: ``"nobody"`` (the default as root), ``"host"`` (keep the caller's uid,
    the default otherwise) or a uid number (gid = uid). Only root can switch users."""
    if value is None:
        value = "nobody" if is_root else "host"
    if value == "host":
        return None
    if not is_root:
        raise ValueError("sandbox config user needs the controller to run as root")
    if value == "nobody":
        return NOBODY
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**31:
        return (value, value)
    raise ValueError("sandbox config user must be nobody, host or a uid above 0")


#: Fork-bomb protection when the sandbox has its own uid (RLIMIT_NPROC does not bind root).
DEFAULT_PROCESSES = 2048


def parse_limits(value: object, *, own_uid: bool) -> Limits:
    """Config ``limits``: ``{"memory_mb": N, "cpu_seconds": N, "processes": N}`` (each optional)."""
    if value is None:
        value = {}
    if not isinstance(value, dict) or set(value) - {"memory_mb", "cpu_seconds", "processes"}:
        raise ValueError("sandbox config limits takes memory_mb, cpu_seconds and processes")
    fields = dict(value)
    if own_uid:
        fields.setdefault("processes", DEFAULT_PROCESSES)
    return Limits(**fields)
