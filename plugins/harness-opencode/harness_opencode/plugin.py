"""Entry point: registers the ``opencode`` harness and its conformance profile."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness_cli_kit.conformance import OfflineProfile, offline_profile
from harness_hookspecs import hookimpl

from .adapter import OpenCodeAdapter

#: ``harness conformance opencode``: the real CLI against the fake model's chat completions.
OFFLINE = OfflineProfile("opencode", "fake-model")


@hookimpl
def register_harnesses(register: Callable[[Any], None]) -> None:
    register(OpenCodeAdapter())


@hookimpl
def conformance_profile(harness: str) -> Any:
    return offline_profile(OFFLINE) if harness == OFFLINE.binary else None
