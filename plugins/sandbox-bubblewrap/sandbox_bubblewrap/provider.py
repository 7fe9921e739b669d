"""The ``bubblewrap`` sandbox provider: the pure core wired into the harness_core contract.

``provision(request)``:

1. finds ``bwrap`` (missing -> ``sandbox-failed``) and probes it once per provider (no
   namespaces -> ``sandbox-failed``);
2. picks the workspace: the request's (config ``workspace = "request"``, the default) or a scoped
   directory from the ``local`` provider (config ``workspace = "local"``; scope, concurrency and
   the local provider's ``root``/``keep``/``queue_timeout`` apply), and validates it (an existing
   directory, not ``/``, not a system directory, not containing a hidden path such as the host
   HOME);
3. builds the network policy from ``spec.network``, ``spec.allow`` (``host:port``) and, for
   ``mcp-only`` (or in addition for ``allowlist``), config ``mcp`` / ``model_api``;
4. makes a private per-session directory on the host (mode 0700, short path for the Unix socket)
   holding the session's HOME and, for ``allowlist``/``mcp-only``, the socket of the session's own
   :class:`~sandbox_bubblewrap.proxy.AllowlistProxy`, which it starts;
5. builds the prefix with :func:`~sandbox_bubblewrap.command.build_prefix`: the host HOME,
   ``/root`` and ``/home`` are hidden (empty tmpfs), the private HOME is bound read-write at
   :data:`INSIDE_HOME`, and ``HOME``/``TMPDIR`` are set in ``handle.env``.

``finalize(handle, outcome)`` stops the proxy, removes the private directory (HOME included) and
finalizes the composed ``local`` workspace with the outcome. It is idempotent.

The runtime spawns ``handle.command_prefix + argv`` from the event-loop thread in a new process
group with a curated environment (``HOME`` from ``handle.env``), and kills that group on cancel
and close; bwrap's ``--die-with-parent`` and pid namespace take everything inside with it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pwd
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import attrs
from attrs import define
from harness_hookspecs import HarnessError, SandboxHandle, SandboxRequest
from harness_hookspecs.models import SANDBOX_OUTCOMES

from .command import ALWAYS_HIDDEN, BwrapUnavailable, build_prefix, probe_bwrap
from .hardening import parse_limits, parse_user, seccomp_filter, seccomp_supported
from .ownership import Loan, give_back, lend
from .policy import Endpoint, NetworkPolicy, SandboxSpec
from .proxy import AllowlistProxy

NAME = "bubblewrap"
#: Where the session's private HOME appears inside the sandbox (on the private /run tmpfs).
INSIDE_HOME = "/run/harness-home"
#: Always hidden besides /tmp and /run: every user's home (the host HOME is added at provision).
DEFAULT_HIDDEN = ("/root", "/home")
#: Host directories the writable workspace may never be, be inside, or contain.
SYSTEM_DIRS = tuple(
    Path(p)
    for p in [
        "/bin",
        "/boot",
        "/dev",
        "/etc",
        "/lib",
        "/lib32",
        "/lib64",
        "/libx32",
        "/proc",
        "/sbin",
        "/sys",
        "/usr",
    ]
)
#: Host directories the workspace may be inside of, but never be (or contain).
SHARED_DIRS = tuple(Path(p) for p in ("/tmp", "/run", "/var", "/srv", "/opt", "/mnt", "/media"))
WORKSPACE_SOURCES = ("request", "local")
#: Config keys this provider reads; ``root``, ``keep`` and ``queue_timeout`` go to ``local``.
CONFIG_KEYS = frozenset(
    {
        "workspace",
        "mcp",
        "model_api",
        "hide",
        "ro_paths",
        "rw_paths",
        "proxy_port",
        "tunnel_loopback",
        "root",
        "keep",
        "queue_timeout",
        "user",
        "limits",
        "seccomp",
    }
)
_SOCKET_MAX = 107

log = logging.getLogger(__name__)


@define
class BubblewrapState:
    """Provider-private state carried on the handle until finalize."""

    session_id: str
    workspace: Path
    private_dir: Path
    home: Path
    policy: NetworkPolicy
    proxy: AllowlistProxy | None = None
    local_handle: SandboxHandle | None = None
    loans: list[Loan] = attrs.Factory(list)
    finalized: bool = False
    outcome: str | None = None


def _invalid(hint: str) -> HarnessError:
    return HarnessError("invalid-request", hint)


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _endpoints(config: Mapping[str, Any], key: str) -> tuple[Endpoint, ...]:
    value = config.get(key)
    if value is None:
        return ()
    values = (value,) if isinstance(value, str) else value
    if not isinstance(values, list | tuple) or not all(isinstance(v, str) for v in values):
        raise _invalid(f"sandbox config {key} must be host:port or URL strings")
    try:
        return tuple(Endpoint.parse(v) for v in values)
    except ValueError:
        raise _invalid(f"sandbox config {key} must be host:port or URL strings") from None


def network_policy(
    spec_network: str, allow: Sequence[str], config: Mapping[str, Any]
) -> NetworkPolicy:
    """The :class:`NetworkPolicy` for a contract ``SandboxSpec`` (``invalid-request`` if bad)."""
    try:
        allowed = tuple(Endpoint.parse(a) for a in allow)
    except ValueError:
        raise _invalid("sandbox allow entries must be host:port") from None
    mcp = _endpoints(config, "mcp")
    model_api = _endpoints(config, "model_api")
    if spec_network in ("none", "open") and (allowed or mcp or model_api):
        raise _invalid(f"network {spec_network} takes no allow, mcp or model_api endpoints")
    if spec_network == "mcp-only":
        if allowed:
            raise _invalid("network mcp-only takes only config mcp and model_api, not allow")
        if not (mcp or model_api):
            raise _invalid("network mcp-only needs config mcp and/or model_api endpoints")
    extra: dict[str, Any] = {}
    port = config.get("proxy_port")
    if port is not None:
        if isinstance(port, bool) or not isinstance(port, int):
            raise _invalid("sandbox config proxy_port must be an integer port")
        extra["proxy_port"] = port
    tunnel = config.get("tunnel_loopback")
    if tunnel is not None:
        if not isinstance(tunnel, bool):
            raise _invalid("sandbox config tunnel_loopback must be true or false")
        extra["tunnel_loopback"] = tunnel
    try:
        return NetworkPolicy(spec_network, allowed, mcp, model_api, **extra)  # type: ignore[arg-type]
    except ValueError:
        raise _invalid("the sandbox network endpoints or proxy port conflict") from None


def _paths(config: Mapping[str, Any], key: str, *, must_exist: bool) -> tuple[Path, ...]:
    value = config.get(key) or ()
    values = (value,) if isinstance(value, str | os.PathLike) else value
    if not isinstance(values, list | tuple):
        raise _invalid(f"sandbox config {key} must be a list of absolute paths")
    out = []
    for v in values:
        if not isinstance(v, str | os.PathLike) or not os.path.isabs(v) or "\x00" in os.fspath(v):
            raise _invalid(f"sandbox config {key} must be a list of absolute paths")
        path = Path(os.path.realpath(v))
        if path == Path("/"):
            raise _invalid(f"sandbox config {key} must not name /")
        if must_exist and not path.exists():
            raise _invalid(f"sandbox config {key} names a path that does not exist")
        out.append(path)
    return tuple(out)


def host_homes() -> tuple[Path, ...]:
    """The host HOME (``$HOME`` and the passwd entry) plus :data:`DEFAULT_HIDDEN`, existing only."""
    found: list[str] = list(DEFAULT_HIDDEN)
    if os.environ.get("HOME"):
        found.append(os.environ["HOME"])
    with contextlib.suppress(KeyError):
        found.append(pwd.getpwuid(os.getuid()).pw_dir)
    out: dict[Path, None] = {}
    for raw in found:
        if not os.path.isabs(raw):
            continue
        path = Path(os.path.realpath(raw))
        if path != Path("/") and path.is_dir() and not any(_under(path, h) for h in ALWAYS_HIDDEN):
            out[path] = None
    return tuple(out)


def validate_workspace(workspace: str | None, hidden: Sequence[Path]) -> Path:
    """The resolved workspace; ``invalid-request`` when it cannot be the writable workspace."""
    if not workspace:
        raise _invalid("the bubblewrap sandbox needs a workspace directory")
    if not os.path.isabs(workspace):
        workspace = os.path.abspath(workspace)
    path = Path(os.path.realpath(workspace))
    if not path.is_dir():
        raise _invalid("the workspace directory does not exist")
    if path == Path("/"):
        raise _invalid("the workspace must not be /")
    for system in SYSTEM_DIRS:
        if _under(path, system) or _under(system, path):
            raise _invalid("the workspace must not be or contain a system directory")
    for shared in SHARED_DIRS:
        if _under(shared, path):
            raise _invalid("the workspace must not be or contain a shared top-level directory")
    for h in hidden:
        if _under(h, path):
            raise _invalid("the workspace must not contain a home directory")
    return path


def forwarder_python(hidden: Sequence[Path], exposed: Sequence[Path]) -> str | None:
    """A Python visible inside the sandbox for the stdlib-only forwarder: the host's own
    interpreter unless it is hidden (e.g. pyenv under the host HOME), else ``python3`` on PATH,
    else ``/usr/bin/python3``; ``None`` when none is visible."""
    candidates = [sys.executable, shutil.which("python3"), "/usr/bin/python3"]
    for candidate in candidates:
        if not candidate:
            continue
        exe = Path(os.path.realpath(candidate))
        if not exe.is_file() or not os.access(exe, os.X_OK):
            continue
        if any(_under(exe, e) for e in exposed) or not any(
            _under(exe, h) for h in (*ALWAYS_HIDDEN, *hidden)
        ):
            return str(exe)
    return None


class BubblewrapSandboxProvider:
    """Sandbox provider ``bubblewrap``: bwrap isolation with a real network policy."""

    name = NAME

    def __init__(
        self,
        *,
        bwrap: str = "bwrap",
        runtime_dir: str | os.PathLike[str] | None = None,
        local: Any = None,
    ) -> None:
        self.bwrap = bwrap
        self._runtime_dir = Path(runtime_dir) if runtime_dir is not None else None
        self._local = local
        self._probed: dict[str, str | None] = {}  # bwrap path -> None (ok) or the failure

    # -- bwrap ------------------------------------------------------------------------------

    async def bwrap_path(self) -> str:
        """The usable bwrap, probed once; ``sandbox-failed`` with a one-line hint otherwise."""
        path = shutil.which(self.bwrap)
        if path is None:
            raise HarnessError(
                "sandbox-failed", "bwrap not found on PATH (install the package bubblewrap)"
            )
        if path not in self._probed:
            try:
                await anyio.to_thread.run_sync(probe_bwrap, path)
                self._probed[path] = None
            except BwrapUnavailable as error:
                log.warning("bubblewrap probe failed: %s", error)
                self._probed[path] = str(error)
        if self._probed[path] is not None:
            raise HarnessError("sandbox-failed", "bwrap cannot create its namespaces on this host")
        return path

    def runtime_dir(self) -> Path:
        """Where per-session directories go: short, so the proxy socket fits in ``sun_path``."""
        if self._runtime_dir is not None:
            return self._runtime_dir
        xdg = os.environ.get("XDG_RUNTIME_DIR")
        if xdg and os.path.isdir(xdg) and len(xdg) < 60:
            return Path(xdg)
        return Path(tempfile.gettempdir())

    def local_provider(self) -> Any:
        if self._local is None:
            try:
                from sandbox_local import LocalSandboxProvider  # type: ignore[import-not-found]
            except ImportError:
                raise HarnessError(
                    "sandbox-failed",
                    "config workspace=local needs the sandbox-local plugin installed",
                ) from None
            self._local = LocalSandboxProvider()
        return self._local

    # -- provision --------------------------------------------------------------------------

    async def provision(self, request: SandboxRequest) -> SandboxHandle:
        spec = request.spec
        config = spec.config
        unknown = sorted(set(config) - CONFIG_KEYS)
        if unknown:
            raise _invalid("unknown bubblewrap sandbox config key")
        source = config.get("workspace", "request")
        if source not in WORKSPACE_SOURCES:
            raise _invalid("sandbox config workspace must be request or local")
        if source == "request" and spec.scope != "run":
            raise _invalid("scopes agent and agent-user need sandbox config workspace=local")
        policy = network_policy(spec.network, spec.allow, config)
        hidden = (*host_homes(), *_paths(config, "hide", must_exist=True))
        ro_paths = _paths(config, "ro_paths", must_exist=True)
        rw_paths = _paths(config, "rw_paths", must_exist=True)
        try:
            user = parse_user(config.get("user"), is_root=os.geteuid() == 0)
            limits = parse_limits(config.get("limits"), own_uid=user is not None)
        except ValueError as error:
            raise _invalid(str(error)) from None
        seccomp = config.get("seccomp", seccomp_supported())
        if not isinstance(seccomp, bool) or (seccomp and not seccomp_supported()):
            raise _invalid("sandbox config seccomp must be true (x86_64 only) or false")
        bwrap = await self.bwrap_path()

        local_handle: SandboxHandle | None = None
        if source == "local":
            local = self.local_provider()
            local_request = attrs.evolve(
                request,
                spec=attrs.evolve(spec, provider=local.name, network="open", allow=()),
            )
            local_handle = await local.provision(local_request)
            workspace_text = local_handle.workspace
        else:
            workspace_text = request.workspace
        state: BubblewrapState | None = None
        try:
            workspace = validate_workspace(workspace_text, hidden)
            private_dir = await anyio.to_thread.run_sync(self._make_private_dir)
            home = private_dir / "home"
            state = BubblewrapState(
                session_id=request.session_id,
                workspace=workspace,
                private_dir=private_dir,
                home=home,
                policy=policy,
                local_handle=local_handle,
            )
            socket_path = None
            if policy.needs_proxy:
                socket_path = private_dir / "proxy.sock"
                proxy = AllowlistProxy(socket_path, policy.allowed())
                await anyio.to_thread.run_sync(proxy.start)
                state.proxy = proxy
            filter_path = None
            if seccomp:
                filter_path = private_dir / "seccomp.bpf"
                filter_path.write_bytes(seccomp_filter())
            if user is not None:
                writable = [workspace, home, *rw_paths]
                if request.state_dir:
                    writable.append(Path(request.state_dir))
                state.loans = await anyio.to_thread.run_sync(lend, writable, *user)
                if socket_path is not None:
                    os.chown(socket_path, *user)
            sandbox_spec = SandboxSpec(
                workspace=workspace,
                network=policy,
                ro_binds=tuple((p, p) for p in ro_paths),
                rw_binds=(
                    (home, Path(INSIDE_HOME)),
                    *((p, p) for p in rw_paths),
                    # the adapter's durable state (CLI config, native ids) stays writable
                    *(((Path(request.state_dir),) * 2,) if request.state_dir else ()),
                ),
                hide=tuple(hidden),
                user=user,
                limits=limits,
                seccomp=filter_path,
            )
            python = None
            if policy.needs_proxy:
                python = forwarder_python(hidden, (*ro_paths, *rw_paths))
                if python is None:
                    raise HarnessError(
                        "sandbox-failed",
                        "no Python visible in the sandbox for the network forwarder (ro_paths)",
                    )
            try:
                prepared = build_prefix(
                    sandbox_spec, proxy_socket=socket_path, bwrap=bwrap, python=python
                )
            except ValueError:
                raise HarnessError(
                    "sandbox-failed", "the sandbox command could not be built"
                ) from None
        except BaseException:
            with anyio.CancelScope(shield=True):
                if state is not None:
                    await self._cleanup(state, "failure")
                elif local_handle is not None:
                    await self.local_provider().finalize(local_handle, "failure")
            raise
        return SandboxHandle(
            provider=self.name,
            workspace=os.fspath(workspace),
            command_prefix=prepared.prefix,
            env={"HOME": INSIDE_HOME, "TMPDIR": "/tmp"},
            state=state,
        )

    def _make_private_dir(self) -> Path:
        base = self.runtime_dir()
        try:
            base.mkdir(parents=True, exist_ok=True)
            path = Path(tempfile.mkdtemp(prefix="hbw-", dir=base))  # mode 0700
            (path / "home").mkdir(mode=0o700)
        except OSError:
            raise HarnessError(
                "sandbox-failed", "the sandbox runtime directory is not writable"
            ) from None
        if len(os.fsencode(path / "proxy.sock")) > _SOCKET_MAX:
            shutil.rmtree(path, ignore_errors=True)
            raise HarnessError("sandbox-failed", "the sandbox runtime directory path is too long")
        return path

    # -- finalize ---------------------------------------------------------------------------

    async def finalize(self, handle: SandboxHandle, outcome: str) -> None:
        state = handle.state
        if not isinstance(state, BubblewrapState) or state.finalized:
            return
        await self._cleanup(state, outcome)

    async def _cleanup(self, state: BubblewrapState, outcome: str) -> None:
        if state.finalized:
            return
        state.finalized = True
        state.outcome = outcome if outcome in SANDBOX_OUTCOMES else "failure"
        proxy, state.proxy = state.proxy, None
        try:
            if proxy is not None:
                await anyio.to_thread.run_sync(proxy.close)
            loans, state.loans = state.loans, []
            await anyio.to_thread.run_sync(give_back, loans)
            await anyio.to_thread.run_sync(shutil.rmtree, state.private_dir, True)
        finally:
            local_handle, state.local_handle = state.local_handle, None
            if local_handle is not None:
                await self.local_provider().finalize(local_handle, state.outcome)
