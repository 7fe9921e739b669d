"""The live status line of ``harness run`` on a terminal: a turn that is silent still shows it
is alive - a spinner, the time since the turn started, the tool calls and tokens so far.

Drawn (through ``rich``) on stderr only when stderr is a terminal, after :data:`QUIET` seconds
without output, and only where it cannot cut into the answer (at the start of a line, or when
the answer goes elsewhere); erased before anything else is written. Piped, nothing is drawn.
"""

from __future__ import annotations

import os
import time
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness_hookspecs import Event

#: Seconds of silence before the line appears (a streaming answer never shows it).
QUIET = 0.5
#: How often the line is redrawn while it shows.
TICK = 0.1
_ERASE = "\r\x1b[2K"


def wanted(stream: IO[str]) -> bool:
    """Whether a status line belongs on ``stream``: a terminal that understands it."""
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class StatusLine:
    """One line on ``stream`` that :meth:`tick` redraws and :meth:`erase` removes."""

    def __init__(self, stream: IO[str], *, colour: bool = True) -> None:
        from rich.console import Console
        from rich.spinner import Spinner

        self.stream = stream
        self.console = Console(
            file=stream, force_terminal=True, no_color=not colour, highlight=False
        )
        self.spinner = Spinner("dots")
        self.started = time.monotonic()
        self.last_output = self.started
        self.tool_calls = 0
        self.tokens: int | None = None
        self.shown = False

    def note(self, event: Event) -> None:
        """Count what ``event`` adds (a tool call, a usage report) and mark the output time."""
        payload: Any = event.payload
        if event.type == "tool.started":
            self.tool_calls += 1
        elif event.type == "usage":
            spent = [payload.usage.input_tokens, payload.usage.output_tokens]
            if any(n is not None for n in spent):
                self.tokens = (self.tokens or 0) + sum(n or 0 for n in spent)
        self.last_output = time.monotonic()

    def text(self, now: float) -> str:
        parts = [f"working {int(now - self.started)}s"]
        if self.tool_calls:
            parts.append(f"{self.tool_calls} tool call" + ("s" if self.tool_calls != 1 else ""))
        if self.tokens is not None:
            parts.append(f"{self.tokens:,} tokens")
        return " · ".join(parts)

    def tick(self, *, may_draw: bool) -> None:
        """Redraw the line when the turn has been silent for :data:`QUIET` seconds."""
        now = time.monotonic()
        if not may_draw or now - self.last_output < QUIET:
            return
        from rich.text import Text

        frame = self.spinner.render(now)
        spinner = frame if isinstance(frame, Text) else Text(str(frame))
        line = Text.assemble(spinner, " ", (self.text(now), "dim"))
        self.stream.write(_ERASE)
        self.console.print(line, end="")
        self.stream.flush()
        self.shown = True

    def erase(self) -> None:
        """Remove the line before other output takes its place."""
        if self.shown:
            self.stream.write(_ERASE)
            self.stream.flush()
            self.shown = False
