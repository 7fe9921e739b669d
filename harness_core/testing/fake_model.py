"""The scripted fake model server, re-exported from its own distribution.

It lives in ``harnessplane-fake-model`` (import ``harness_fake_model``; the ``testing`` extra
installs it), so the core does not need aiohttp; it is found through its ``harness_core.testing``
entry point, not imported by name. Names load on first use: importing this module works without
it, using a name says which distribution to install.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

# Loaded from harness_fake_model on first use (its __all__). Not in this module's __all__: they
# are the fake model's (documented with it), reached here as attributes.
REEXPORTED = "ErrorReply FakeModelServer Match RecordedRequest Step ToolCall Usage fixed_port_lock load_script main"
__all__ = ["INSTALL_HINT", "REEXPORTED", "FakeModelNotInstalled", "load"]

INSTALL_HINT = (
    "the fake model server is not installed: "
    "pip install harnessplane-fake-model (or 'harnessplane[testing]')"
)


class FakeModelNotInstalled(ModuleNotFoundError):
    """``harness_fake_model`` (or its aiohttp) is missing; the message says what to install."""


def load() -> ModuleType:
    """The ``harness_fake_model`` package, or :class:`FakeModelNotInstalled`."""
    from ..extensions import TESTING_GROUP, ExtensionMissing, load

    try:
        module: ModuleType = load(TESTING_GROUP, "fake-model")
    except ExtensionMissing as error:
        if error.name not in ("fake-model", "harness_fake_model", "aiohttp"):
            raise
        raise FakeModelNotInstalled(INSTALL_HINT, name=error.name) from None
    return module


def __getattr__(name: str) -> Any:
    if name in REEXPORTED.split():
        return getattr(load(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    raise SystemExit(load().main())
