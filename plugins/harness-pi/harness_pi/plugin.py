"""Entry point: registers the ``pi`` harness and its conformance profile (the real CLI against the
fake model's chat completions)."""

from __future__ import annotations

from harness_cli_kit.conformance import OfflineProfile
from harness_cli_kit.plugin import cli_hooks

from .adapter import PiAdapter

OFFLINE = OfflineProfile(
    "pi", "fake-model", approval_call=("bash", {"command": "touch approved.txt"})
)

register_harnesses, conformance_profile = cli_hooks("pi", PiAdapter, OFFLINE)
