"""Build the bwrap command prefix for a :class:`~sandbox_bubblewrap.policy.SandboxSpec`.

Pure: no process is started here except by :func:`probe_bwrap`. The caller spawns
``prefix + command`` in its own process group (``start_new_session=True``) from a thread that
outlives the process (bwrap's ``--die-with-parent`` is PR_SET_PDEATHSIG, which fires when the
spawning *thread* exits).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .hardening import SECCOMP_FD, SECCOMP_SHIM, drop_user_tail, limits_prefix
from .policy import SandboxSpec

#: Where the proxy socket and the forwarder script appear inside the sandbox (on the /run tmpfs).
INSIDE_NET_DIR = PurePosixPath("/run/harness-net")
INSIDE_SOCKET = INSIDE_NET_DIR / "proxy.sock"
INSIDE_FORWARDER = INSIDE_NET_DIR / "forwarder.py"
FORWARDER_PATH = Path(__file__).with_name("forwarder.py")

#: Always an empty tmpfs inside: private /tmp, and /run so host Unix sockets (/run/docker.sock,
#: /run/dbus, /run/postgresql, ...) cannot be reached through the read-only root bind.
ALWAYS_HIDDEN = (Path("/tmp"), Path("/run"))

_PROXY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
_NO_PROXY_ENV = ("NO_PROXY", "no_proxy")


class BwrapUnavailable(RuntimeError):
    """bwrap is not installed or cannot create namespaces here; ``str()`` says why."""


@dataclass(frozen=True)
class Prepared:
    """``argv = prefix + command``; spawn with ``cwd`` (the workspace by default)."""

    prefix: tuple[str, ...]
    cwd: Path
    proxy_url: str | None  # as seen inside the sandbox, when the policy uses the proxy

    def argv(self, command: list[str] | tuple[str, ...]) -> list[str]:
        if not command:
            raise ValueError("empty command")
        return [*self.prefix, *command]


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _interpreter(
    python: str | None, hidden: tuple[Path, ...], exposed: tuple[Path, ...] = ()
) -> str:
    """The forwarder's interpreter; it must be visible inside: not under a hidden path unless an
    identity bind (``src == dst``) exposes it again."""
    exe = Path(os.path.realpath(python or sys.executable))
    if any(_under(exe, e) for e in exposed):
        return str(exe)
    for h in hidden:
        if _under(exe, h):
            raise ValueError(f"python interpreter {exe} is under hidden path {h} in the sandbox")
    return str(exe)


def _traversable(dst: Path, hidden: tuple[Path, ...], made: set[Path], needed: bool) -> list[str]:
    """Directories bwrap would create (mode 0700) between a hidden tmpfs and a bind target,
    made 0755 first so a sandbox user other than root can reach the target."""
    if not needed:
        return []
    argv: list[str] = []
    for h in hidden:
        if h in dst.parents:
            for ancestor in reversed(dst.parents):
                if h in ancestor.parents and ancestor not in made:
                    made.add(ancestor)
                    argv += ["--perms", "0755", "--dir", str(ancestor)]
    return argv


def build_prefix(
    spec: SandboxSpec,
    *,
    proxy_socket: str | os.PathLike[str] | None = None,
    bwrap: str = "bwrap",
    python: str | None = None,
) -> Prepared:
    """The argv prefix that runs a command under ``spec``.

    ``proxy_socket`` (the host path of a running :class:`~sandbox_bubblewrap.proxy.AllowlistProxy`)
    is required exactly when the network policy is ``allowlist`` or ``mcp-only``; the prefix then
    ends with the in-sandbox forwarder (``python -I forwarder.py ... --``).
    """
    net = spec.network
    if net.needs_proxy and proxy_socket is None:
        raise ValueError(f"network mode {net.mode!r} needs proxy_socket")
    if not net.needs_proxy and proxy_socket is not None:
        raise ValueError(f"network mode {net.mode!r} takes no proxy_socket")
    hidden = tuple(dict.fromkeys((*ALWAYS_HIDDEN, *(Path(p) for p in spec.hide))))
    cwd = Path(spec.cwd) if spec.cwd is not None else spec.workspace

    lead = limits_prefix(spec.limits)
    if spec.seccomp is not None:
        lead += [*SECCOMP_SHIM, str(spec.seccomp)]
    argv: list[str] = [
        *lead,
        bwrap,
        "--die-with-parent",  # PR_SET_PDEATHSIG(SIGKILL) on the sandbox's pid 1
        "--new-session",  # setsid: no TIOCSTI into the caller's terminal
    ]
    if spec.user is None:
        argv += ["--unshare-all"]  # user(-try), ipc, pid, net, uts, cgroup(-try)
        # as real root bwrap keeps all caps: without this `mount -o remount,rw /` works
        argv += ["--cap-drop", "ALL"]
        if not spec.allow_nested_userns:
            argv += ["--unshare-user", "--disable-userns"]
    else:
        # No user namespace: it would map only the caller's uid, and the command must switch
        # to an unprivileged host uid (setpriv, below) for root-only files to stay unreadable.
        argv += ["--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
        if net.mode != "open":
            argv.append("--unshare-net")
        argv += ["--cap-drop", "ALL"]
        # For setpriv only (it drops them all with the switch to the sandbox uid), and to let
        # bwrap chdir into a workspace already lent to that uid (mode 0700).
        for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_DAC_READ_SEARCH"):
            argv += ["--cap-add", cap]
    argv += ["--hostname", spec.hostname]
    if spec.seccomp is not None:
        argv += ["--seccomp", str(SECCOMP_FD)]
    if net.mode == "open" and spec.user is None:
        argv.append("--share-net")
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for h in hidden:
        argv += ["--tmpfs", str(h)]
    if net.mode == "open":
        # DNS must keep working when /etc/resolv.conf is a symlink into /run (systemd-resolved).
        resolv = Path(os.path.realpath("/etc/resolv.conf"))
        if resolv.exists() and any(_under(resolv, h) for h in hidden):
            argv += ["--ro-bind", str(resolv), str(resolv)]
    made: set[Path] = set()
    for src, dst in spec.ro_binds:
        argv += _traversable(Path(dst), hidden, made, spec.user is not None)
        argv += ["--ro-bind", str(src), str(dst)]
    for src, dst in spec.rw_binds:
        argv += _traversable(Path(dst), hidden, made, spec.user is not None)
        argv += ["--bind", str(src), str(dst)]
    argv += _traversable(spec.workspace, hidden, made, spec.user is not None)
    argv += ["--bind", str(spec.workspace), str(spec.workspace)]

    proxy_url = None
    tail: list[str] = []
    if spec.user is not None:
        tail += drop_user_tail(*spec.user)
    if net.needs_proxy:
        proxy_url = f"http://127.0.0.1:{net.proxy_port}"
        argv += _traversable(Path(INSIDE_SOCKET), hidden, made, spec.user is not None)
        argv += ["--ro-bind", os.fspath(proxy_socket), str(INSIDE_SOCKET)]  # type: ignore[arg-type]
        argv += ["--ro-bind", str(FORWARDER_PATH), str(INSIDE_FORWARDER)]
        for name in _PROXY_ENV:
            argv += ["--setenv", name, proxy_url]
        for name in _NO_PROXY_ENV:
            argv += ["--unsetenv", name]
        argv += ["--setenv", "NODE_USE_ENV_PROXY", "1"]  # Node >= 24 honours HTTP(S)_PROXY then
        exposed = tuple(Path(d) for s, d in (*spec.ro_binds, *spec.rw_binds) if Path(s) == Path(d))
        tail += [_interpreter(python, hidden, exposed), "-I", str(INSIDE_FORWARDER), "--unix"]
        tail += [str(INSIDE_SOCKET), "--proxy-port", str(net.proxy_port)]
        for ep in net.tunnels():
            tail += ["--tunnel", f"{ep.port}:{ep.authority()}"]
        tail.append("--")
    for key, value in spec.setenv:
        argv += ["--setenv", key, value]
    argv += ["--chdir", str(cwd), "--"]
    return Prepared(prefix=(*argv, *tail), cwd=cwd, proxy_url=proxy_url)


def probe_bwrap(bwrap: str = "bwrap", timeout: float = 10.0) -> str:
    """Run the real invocation once (``none`` policy, ``true``); return the bwrap path or raise
    :class:`BwrapUnavailable` with the reason (not installed / bwrap's own error message)."""
    path = shutil.which(bwrap)
    if path is None:
        raise BwrapUnavailable(f"{bwrap!r} not found on PATH (Debian package 'bubblewrap')")
    try:
        with tempfile.TemporaryDirectory(prefix="bwrap-probe-") as ws:
            prefix = build_prefix(SandboxSpec(workspace=Path(ws)), bwrap=path).prefix
            proc = subprocess.run(
                [*prefix, "true"], capture_output=True, text=True, timeout=timeout, check=False
            )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BwrapUnavailable(f"bwrap probe failed: {exc}") from None
    if proc.returncode != 0:
        msg = proc.stderr.strip().splitlines()
        raise BwrapUnavailable(
            f"bwrap cannot create its namespaces here: {msg[-1] if msg else proc.returncode}"
        )
    return path
