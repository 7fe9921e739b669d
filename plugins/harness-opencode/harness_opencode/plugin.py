"""Entry point: registers the ``opencode`` harness and its conformance profile (the real CLI
against the fake model's chat completions)."""

from __future__ import annotations

from harness_cli_kit.conformance import OfflineProfile
from harness_cli_kit.plugin import cli_hooks

from .adapter import OpenCodeAdapter

OFFLINE = OfflineProfile(
    "opencode",
    "fake-model",
    approval_call=("bash", {"command": "touch approved.txt", "description": "touch"}),
)

register_harnesses, conformance_profile = cli_hooks("opencode", OpenCodeAdapter, OFFLINE)
