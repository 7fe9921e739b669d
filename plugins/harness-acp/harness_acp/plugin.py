"""Entry point: registers one ``acp:<agent>`` harness per registry entry.

The adapters import the ACP SDK (pydantic models, most of a second) only once an agent is
spawned: ``harness list`` and every host that never runs an ACP agent stay fast.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness_cli_kit.conformance import OfflineProfile, offline_profile
from harness_hookspecs import hookimpl

from .adapter import AcpAdapter
from .registry import AGENTS

#: ``harness conformance acp:<agent>``: the real agent against the fake model server. cline: its
#: ACP mode ignores base_url, so it runs through its ``lmstudio`` provider, whose endpoint is
#: fixed at http://localhost:1234/v1 (see the registry); the model must be one of Cline's LM
#: Studio ids (an unknown one is replaced by Cline's default anyway).
OFFLINE = {
    "claude-code": OfflineProfile(
        "claude-code-acp",
        "claude-sonnet-4-5",
        api="anthropic",
        approval_call=("Bash", {"command": "touch approved.txt", "description": "touch"}),
    ),
    "codex": OfflineProfile("codex-acp", "gpt-5", extra={"mode": "full-access"}),
    "cline": OfflineProfile(
        "cline",
        "openai/gpt-oss-20b",
        args=("--acp",),
        extra={"provider": "lmstudio"},
        port=1234,
        approval_call=("run_commands", {"commands": ["touch approved.txt"]}),
    ),
}


@hookimpl
def register_harnesses(register: Callable[[Any], None]) -> None:
    for name in AGENTS:
        register(AcpAdapter(name))


@hookimpl
def conformance_profile(harness: str) -> Any:
    agent = harness.removeprefix("acp:")
    if not harness.startswith("acp:") or agent not in OFFLINE:
        return None
    return offline_profile(OFFLINE[agent])
