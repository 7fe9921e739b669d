"""Entry point: registers the ``codex`` harness and its conformance profile (the real CLI against
the fake model's Responses API)."""

from __future__ import annotations

from harness_cli_kit.conformance import OfflineProfile
from harness_cli_kit.plugin import cli_hooks

from .adapter import CodexAdapter

OFFLINE = OfflineProfile(
    "codex",
    "gpt-5",
    "sk-conformance",
    binary_key="cli_path",
    # the kit's approval turn: Codex asks before this command (approval policy untrusted)
    approval_call=("exec_command", {"cmd": "touch approved.txt"}),
)

register_harnesses, conformance_profile = cli_hooks("codex", CodexAdapter, OFFLINE)
