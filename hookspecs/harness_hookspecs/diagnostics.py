"""A process's stderr tail as a diagnostic the user can see, safely.

When a harness program fails, its last stderr lines are usually the one clue ("oops",
"ModuleNotFoundError: ..."). The failure itself stays fixed (``TurnFailed`` with a reason and an
adapter-authored hint); the tail goes *beside* it as ``status`` events, so ``harness events``,
``harness run`` and the ledger show it while no failure message ever carries provider text.

Bounded (the last :data:`TAIL_LINES` non-blank lines, each cut to fit a status), control
characters and ANSI escapes removed, decoded leniently. Secrets: the runtime redacts every payload
(registered credentials and common key shapes) before the ledger or an observer sees it.
"""

from __future__ import annotations

import re

from ._bounds import STATUS_MAX
from .events import Status

TAIL_LINES = 5
PREFIX = "stderr: "
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")


def stderr_diagnostics(tail: bytes | str, *, lines: int = TAIL_LINES) -> list[Status]:
    """The last ``lines`` non-blank lines of ``tail`` as ``Status("stderr: ...")`` payloads."""
    text = tail.decode("utf-8", "replace") if isinstance(tail, bytes) else tail
    text = _ANSI.sub("", text)
    kept: list[str] = []
    for raw in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = _CONTROL.sub(" ", raw).strip()
        if line:
            kept.append(line)
    width = STATUS_MAX - len(PREFIX)
    return [
        Status(message=PREFIX + (line if len(line) <= width else line[: width - 3] + "..."))
        for line in kept[-lines:]
    ]
