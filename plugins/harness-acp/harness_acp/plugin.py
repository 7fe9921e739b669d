"""Entry point: registers one ``acp:<agent>`` harness per registry entry.

The ACP SDK (pydantic models) takes most of a second to import, so the registered adapters are
thin proxies that import it on first use: ``harness list`` and every host that never runs an ACP
agent stay fast.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from harness_cli_kit.conformance import OfflineProfile, offline_profile
from harness_hookspecs import hookimpl

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


class LazyAcpAdapter:
    """Stands in for :class:`harness_acp.adapter.AcpAdapter` until it is first used."""

    def __init__(self, agent: str) -> None:
        self.agent_name = agent
        self.name = f"acp:{agent}"
        self._real: Any = None

    def _adapter(self) -> Any:
        if self._real is None:
            from .adapter import AcpAdapter

            self._real = AcpAdapter(self.agent_name)
        return self._real

    def describe(self) -> Any:
        return self._adapter().describe()

    async def open_session(self, request: Any, context: Any) -> Any:
        return await self._adapter().open_session(request, context)

    async def resume_session(self, request: Any, context: Any) -> Any:
        return await self._adapter().resume_session(request, context)

    def run_turn(self, request: Any, context: Any) -> AsyncIterator[Any]:
        iterator: AsyncIterator[Any] = self._adapter().run_turn(request, context)
        return iterator

    async def cancel_turn(self, request: Any, context: Any) -> None:
        await self._adapter().cancel_turn(request, context)

    async def close_session(self, request: Any, context: Any) -> None:
        await self._adapter().close_session(request, context)


@hookimpl
def register_harnesses(register: Callable[[Any], None]) -> None:
    for name in AGENTS:
        register(LazyAcpAdapter(name))


@hookimpl
def conformance_profile(harness: str) -> Any:
    agent = harness.removeprefix("acp:")
    if not harness.startswith("acp:") or agent not in OFFLINE:
        return None
    return offline_profile(OFFLINE[agent])
