"""Entry point: registers the ``claude-code`` harness and its conformance profile."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness_cli_kit.conformance import OfflineProfile, offline_profile
from harness_hookspecs import hookimpl

from .adapter import BINARY, NAME, ClaudeCodeAdapter

#: ``harness conformance claude-code``: the real CLI against the fake model's Messages API.
OFFLINE = OfflineProfile(
    BINARY, "claude-test", "sk-ant-conformance", api="anthropic", binary_key="cli_path"
)


@hookimpl
def register_harnesses(register: Callable[[Any], None]) -> None:
    register(ClaudeCodeAdapter())


@hookimpl
def conformance_profile(harness: str) -> Any:
    return offline_profile(OFFLINE) if harness == NAME else None
