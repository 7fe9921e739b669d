"""The scripted fake model server, re-exported from its own distribution.

It lives in ``harnessplane-fake-model`` (import ``harness_fake_model``; the ``testing`` extra
installs it), so the core does not need aiohttp. Names load on first use: importing this module
works without it, using a name says which distribution to install.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the real types for type checkers (``X as X``: an explicit re-export)
    from harness_fake_model import ErrorReply as ErrorReply
    from harness_fake_model import FakeModelServer as FakeModelServer
    from harness_fake_model import Match as Match
    from harness_fake_model import RecordedRequest as RecordedRequest
    from harness_fake_model import Step as Step
    from harness_fake_model import ToolCall as ToolCall
    from harness_fake_model import Usage as Usage
    from harness_fake_model import load_script as load_script
    from harness_fake_model import main as main

# Loaded from harness_fake_model on first use (its __all__).
REEXPORTED = "ErrorReply FakeModelServer Match RecordedRequest Step ToolCall Usage load_script main"
__all__ = [*REEXPORTED.split(), "FakeModelNotInstalled", "INSTALL_HINT", "load"]

INSTALL_HINT = (
    "the fake model server is not installed: "
    "pip install harnessplane-fake-model (or 'harnessplane[testing]')"
)


class FakeModelNotInstalled(ModuleNotFoundError):
    """``harness_fake_model`` (or its aiohttp) is missing; the message says what to install."""


def load() -> ModuleType:
    """The ``harness_fake_model`` package, or :class:`FakeModelNotInstalled`."""
    try:
        return importlib.import_module("harness_fake_model")
    except ModuleNotFoundError as error:
        if error.name not in ("harness_fake_model", "aiohttp"):
            raise
        raise FakeModelNotInstalled(INSTALL_HINT, name=error.name) from None


def __getattr__(name: str) -> Any:
    if name in REEXPORTED.split():
        return getattr(load(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    raise SystemExit(load().main())
