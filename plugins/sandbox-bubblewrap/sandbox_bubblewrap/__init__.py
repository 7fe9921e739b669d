"""``sandbox-bubblewrap``: the ``bubblewrap`` sandbox provider for harness_core.

The pure core (policy values, the bwrap argv builder, the host-side allowlist proxy and the
in-sandbox forwarder) and the provider that wires it into the contract (``provider.py``; the entry
point module is ``plugin.py``).
"""

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
from .provider import INSIDE_HOME, NAME, BubblewrapSandboxProvider, BubblewrapState

__all__ = [
    "ALWAYS_HIDDEN",
    "INSIDE_FORWARDER",
    "INSIDE_HOME",
    "INSIDE_SOCKET",
    "NAME",
    "NETWORK_MODES",
    "BubblewrapSandboxProvider",
    "BubblewrapState",
    "BwrapUnavailable",
    "Endpoint",
    "NetworkMode",
    "NetworkPolicy",
    "Prepared",
    "SandboxSpec",
    "build_prefix",
    "probe_bwrap",
]
