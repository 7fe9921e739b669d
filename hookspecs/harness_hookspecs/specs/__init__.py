"""The hookspecs, one module per concern. ``harness_core`` adds them all to its plugin manager."""

from . import conformance, credentials, lifecycle, observers, permissions, registration, sandbox

ALL = (registration, lifecycle, sandbox, credentials, observers, conformance, permissions)

__all__ = [
    "ALL",
    "conformance",
    "credentials",
    "lifecycle",
    "observers",
    "permissions",
    "registration",
    "sandbox",
]
