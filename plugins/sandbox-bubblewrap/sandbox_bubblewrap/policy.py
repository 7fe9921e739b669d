"""Network policy and sandbox specification: plain frozen values, no I/O.

``none``       the sandbox gets its own network namespace with only its own loopback; nothing of
               the host (not even host loopback services) is reachable.
``open``       the sandbox shares the host network namespace.
``allowlist``  own network namespace; the only way out is the provider's allowlist proxy, reached
               through a Unix socket bind-mounted into the sandbox. Allowed: ``allow`` plus the
               ``mcp`` and ``model_api`` endpoints (a harness without its model API is useless).
``mcp-only``   like ``allowlist`` but only the ``mcp`` and ``model_api`` endpoints; extra
               ``allow`` entries are refused at construction.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from .hardening import Limits

NetworkMode = Literal["none", "open", "allowlist", "mcp-only"]
NETWORK_MODES: tuple[NetworkMode, ...] = ("none", "open", "allowlist", "mcp-only")

_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_HOST_RE = re.compile(
    r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$"
)
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def normalize_host(host: str) -> str:
    """Lower-case, strip IPv6 brackets and one trailing dot; reject anything that is not a
    DNS name or an IP literal (so an allowlist entry can never smuggle a path or a port)."""
    h = host.strip().lower()
    if h.startswith("[") and h.endswith("]"):
        h = h[1:-1]
    if h.endswith("."):
        h = h[:-1]
    try:
        return str(ipaddress.ip_address(h))
    except ValueError:
        pass
    if not h or len(h) > 253 or not _HOST_RE.match(h):
        raise ValueError(f"invalid host: {host!r}")
    return h


@dataclass(frozen=True, order=True)
class Endpoint:
    """One ``host:port`` pair. Hosts match exactly after normalisation: ``localhost`` and
    ``127.0.0.1`` are different entries, and there are no wildcards."""

    host: str
    port: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "host", normalize_host(self.host))
        if (
            isinstance(self.port, bool)
            or not isinstance(self.port, int)
            or not 0 < self.port < 65536
        ):
            raise ValueError(f"invalid port: {self.port!r}")

    @classmethod
    def parse(cls, text: str) -> Endpoint:
        """``host:port``, ``[v6]:port`` or a URL (``https://api.example.com`` -> port 443)."""
        if "://" in text:
            parts = urlsplit(text)
            scheme = parts.scheme.lower()
            if not parts.hostname:
                raise ValueError(f"no host in URL: {text!r}")
            port = parts.port or _DEFAULT_PORTS.get(scheme)
            if port is None:
                raise ValueError(f"no port and unknown scheme in URL: {text!r}")
            return cls(parts.hostname, port)
        host, sep, port_text = text.rpartition(":")
        if not sep or not port_text.isdigit():
            raise ValueError(f"expected host:port, got {text!r}")
        return cls(host, int(port_text))

    @property
    def is_loopback(self) -> bool:
        if self.host in _LOOPBACK_NAMES:
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    def authority(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    def __str__(self) -> str:
        return self.authority()


def _endpoints(values: object) -> tuple[Endpoint, ...]:
    if values is None:
        return ()
    if isinstance(values, Endpoint | str):
        values = (values,)
    out = []
    for v in values:  # type: ignore[attr-defined]
        out.append(v if isinstance(v, Endpoint) else Endpoint.parse(str(v)))
    return tuple(sorted(set(out)))


@dataclass(frozen=True)
class NetworkPolicy:
    mode: NetworkMode = "none"
    allow: tuple[Endpoint, ...] = ()
    mcp: tuple[Endpoint, ...] = ()
    model_api: tuple[Endpoint, ...] = ()
    # Allowed loopback endpoints (host 127.0.0.1/::1/localhost) are also exposed on the sandbox's
    # own loopback at the same port, so e.g. ``http://127.0.0.1:8123/mcp`` works unchanged inside
    # even for clients that ignore HTTP(S)_PROXY or bypass it for localhost.
    tunnel_loopback: bool = True
    # Port of the HTTP proxy on the sandbox's loopback (HTTP_PROXY/HTTPS_PROXY point here).
    proxy_port: int = 3128

    def __post_init__(self) -> None:
        if self.mode not in NETWORK_MODES:
            raise ValueError(f"unknown network mode {self.mode!r}; expected one of {NETWORK_MODES}")
        for name in ("allow", "mcp", "model_api"):
            object.__setattr__(self, name, _endpoints(getattr(self, name)))
        if self.mode == "mcp-only" and self.allow:
            raise ValueError("network mode 'mcp-only' takes only mcp and model_api endpoints")
        if self.mode in ("none", "open") and (self.allow or self.mcp or self.model_api):
            raise ValueError(f"network mode {self.mode!r} takes no endpoints")
        if self.mode in ("allowlist", "mcp-only"):
            if not 0 < self.proxy_port < 65536:
                raise ValueError(f"invalid proxy_port: {self.proxy_port!r}")
            if self.proxy_port in {e.port for e in self.tunnels()}:
                raise ValueError(f"proxy_port {self.proxy_port} collides with a tunnelled endpoint")
            ports = [e.port for e in self.tunnels()]
            if len(ports) != len(set(ports)):
                raise ValueError("two tunnelled loopback endpoints share a port")

    @property
    def needs_proxy(self) -> bool:
        return self.mode in ("allowlist", "mcp-only")

    def allowed(self) -> frozenset[Endpoint]:
        """The exact set the host-side proxy may connect to (empty for none/open)."""
        if not self.needs_proxy:
            return frozenset()
        return frozenset(self.allow) | frozenset(self.mcp) | frozenset(self.model_api)

    def tunnels(self) -> tuple[Endpoint, ...]:
        if not self.needs_proxy or not self.tunnel_loopback:
            return ()
        return tuple(sorted(e for e in self.allowed() if e.is_loopback))


@dataclass(frozen=True)
class SandboxSpec:
    """What the sandbox looks like. ``workspace`` is the only writable host path unless
    ``rw_binds`` adds more; ``hide`` paths get an empty tmpfs (``/tmp`` and ``/run`` always)."""

    workspace: Path
    network: NetworkPolicy = field(default_factory=NetworkPolicy)
    ro_binds: tuple[tuple[Path, Path], ...] = ()
    rw_binds: tuple[tuple[Path, Path], ...] = ()
    hide: tuple[Path, ...] = ()
    cwd: Path | None = None
    hostname: str = "sandbox"
    # False: ``--unshare-user --disable-userns`` (no user namespaces inside, less kernel surface).
    # True only for hosts whose bwrap cannot create a user namespace (setuid bwrap, userns off).
    allow_nested_userns: bool = False
    setenv: tuple[tuple[str, str], ...] = ()
    # Run the command as this (uid, gid) with no capabilities (see hardening.py); None: as the
    # caller. Needs bwrap to run as real root (it then makes no user namespace).
    user: tuple[int, int] | None = None
    limits: Limits = field(default_factory=Limits)
    # A seccomp BPF program file (hardening.seccomp_filter) bwrap installs before the command.
    seccomp: Path | None = None

    def __post_init__(self) -> None:
        ws = Path(self.workspace)
        if not ws.is_absolute():
            raise ValueError(f"workspace must be an absolute path: {ws}")
        if ws == Path("/"):
            raise ValueError("workspace must not be /")
        object.__setattr__(self, "workspace", ws)
        for src, dst in (*self.ro_binds, *self.rw_binds):
            if not Path(src).is_absolute() or not Path(dst).is_absolute():
                raise ValueError(f"bind paths must be absolute: {src} -> {dst}")
        for p in self.hide:
            if not Path(p).is_absolute() or Path(p) == Path("/"):
                raise ValueError(f"hide paths must be absolute and not /: {p}")
        for key, _ in self.setenv:
            if not key or "=" in key or "\0" in key:
                raise ValueError(f"invalid environment variable name: {key!r}")
