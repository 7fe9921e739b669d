"""Entry point: registers the ``codex`` harness and its conformance profile."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness_cli_kit.conformance import OfflineProfile, offline_profile
from harness_hookspecs import hookimpl

from .adapter import BINARY, NAME, CodexAdapter

#: ``harness conformance codex``: the real CLI against the fake model's Responses API.
OFFLINE = OfflineProfile(BINARY, "gpt-5", "sk-conformance", binary_key="cli_path")


@hookimpl
def register_harnesses(register: Callable[[Any], None]) -> None:
    register(CodexAdapter())


@hookimpl
def conformance_profile(harness: str) -> Any:
    return offline_profile(OFFLINE) if harness == NAME else None
