"""The echo harness: ``harness run echo "hello"``."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import anyio

from harness_core import FunctionSession, Message, harness


@harness("echo", display_name="Echo")
async def echo(message: Message, session: FunctionSession) -> AsyncIterator[str]:
    words = message.content.split()
    if len(words) == 2 and words[0] == "sleep":
        with contextlib.suppress(ValueError):
            await anyio.sleep(float(words[1]))
    yield "echo:"
    for word in words:
        yield " " + word
