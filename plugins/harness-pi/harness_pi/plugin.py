"""Entry point: registers the ``pi`` harness and its conformance profile."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness_cli_kit.conformance import OfflineProfile, offline_profile
from harness_hookspecs import hookimpl

from .adapter import PiAdapter

#: ``harness conformance pi``: the real CLI against the fake model's chat completions.
OFFLINE = OfflineProfile("pi", "fake-model")


@hookimpl
def register_harnesses(register: Callable[[Any], None]) -> None:
    register(PiAdapter())


@hookimpl
def conformance_profile(harness: str) -> Any:
    return offline_profile(OFFLINE) if harness == OFFLINE.binary else None
