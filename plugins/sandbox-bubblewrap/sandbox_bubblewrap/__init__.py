"""Pure core of the bubblewrap sandbox provider: policy values, the bwrap argv builder, the
host-side allowlist proxy and the in-sandbox forwarder. Hook wiring lives elsewhere."""

from .command import (
    ALWAYS_HIDDEN,
    INSIDE_FORWARDER,
    INSIDE_SOCKET,
    BwrapUnavailable,
    Prepared,
    build_prefix,
    probe_bwrap,
)
from .policy import NETWORK_MODES, Endpoint, NetworkMode, NetworkPolicy, SandboxSpec

__all__ = [
    "ALWAYS_HIDDEN",
    "INSIDE_FORWARDER",
    "INSIDE_SOCKET",
    "NETWORK_MODES",
    "BwrapUnavailable",
    "Endpoint",
    "NetworkMode",
    "NetworkPolicy",
    "Prepared",
    "SandboxSpec",
    "build_prefix",
    "probe_bwrap",
]
