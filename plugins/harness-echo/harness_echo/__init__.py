"""The echo harness: ``harness run echo "hello"``; ``echo "run <command>"`` asks the host for
permission first (``harness run --approve echo "run make test"``) and says what it was told."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import anyio

from harness_core import FunctionSession, Message, harness

__all__ = ["echo"]


@harness(
    "echo",
    display_name="Echo",
    features=("resume", "cancel", "permissions"),
    config_schema={"properties": {}},  # echo reads no config of its own
)
async def echo(message: Message, session: FunctionSession) -> AsyncIterator[str]:
    words = message.content.split()
    if len(words) >= 2 and words[0] == "run":
        # Asks the host as a real harness would before a shell command (runs nothing itself).
        command = " ".join(words[1:])
        decision = await session.request_permission(tool="shell", kind="shell", command=command)
        yield f"echo: {'allowed' if decision.allowed else 'denied'}: {command}"
        return
    if len(words) == 2 and words[0] == "sleep":
        with contextlib.suppress(ValueError):
            await anyio.sleep(float(words[1]))
    yield "echo:"
    for word in words:
        yield " " + word
