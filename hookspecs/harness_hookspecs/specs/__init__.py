"""The hookspecs, one module per concern. ``harness_core`` adds them all to its plugin manager."""

from . import credentials, lifecycle, observers, registration, sandbox

ALL = (registration, lifecycle, sandbox, credentials, observers)

__all__ = ["ALL", "credentials", "lifecycle", "observers", "registration", "sandbox"]
