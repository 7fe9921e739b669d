"""The ``superqode.harnesses`` entry points: each bundled harness of ours as a v1 adapter
(built when superqode loads the entry point), on the default ledger and state directory."""

from __future__ import annotations

from typing import Any

from . import HarnessplaneAdapter

#: entry point attribute -> our harness
HARNESSES = {
    "echo": "echo",
    "claude_code": "claude-code",
    "codex": "codex",
    "opencode": "opencode",
    "pi": "pi",
}


def __getattr__(name: str) -> Any:
    harness = HARNESSES.get(name)
    if harness is None:
        raise AttributeError(name)
    return HarnessplaneAdapter(harness)
