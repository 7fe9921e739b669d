"""The readable default view of ``harness run``: the answer as it streams, compact tool/approval
lines, a one-line summary. How one event reads as a line (``--events``, ``harness events``) and
the other rules for reading events live in :mod:`harness_core.transcript`; the text helpers in
:mod:`harness_core.plain_text`.

The readable view writes the assistant's text to stdout and everything else (session line, tool
calls, approvals, failures, the summary) to stderr, so ``harness run NAME PROMPT > answer.txt``
keeps just the answer while a terminal shows both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..plain_text import RESTARTED, clip, duration_text, failure_text, usage_text
from .output import Out

if TYPE_CHECKING:
    from harness_hookspecs import Event, Usage


class RunView:
    """The readable view of one ``harness run``: call :meth:`show` for each event in order."""

    def __init__(self, text: Out, chrome: Out) -> None:
        self.text = text
        self.chrome = chrome
        self._streamed = ""  # deltas since the last completed message
        self._shown_text = False  # any assistant text shown this turn
        self._at_line_start = True

    def session(self, event: Event, *, workspace: str | None = None) -> None:
        """The first line: the session id (for ``harness cancel``/``close``) and what runs it."""
        from harness_hookspecs import events as ev

        p = event.payload
        if isinstance(p, ev.SessionOpened):
            facts = [p.harness, f"posture {p.posture}"]
            if p.sandbox:
                facts.append(f"sandbox {p.sandbox}")
            if p.model:
                facts.append(f"model {p.model}")
        elif isinstance(p, ev.SessionResumed):
            facts = [p.harness, "resumed"]
        else:
            facts = [event.harness]
        self.chrome.write("session ", "dim")
        self.chrome.write(event.session_id, "bold cyan")
        self.chrome.line(f"  ({', '.join(facts)})", "dim")

    def show(self, event: Event) -> None:
        from harness_hookspecs import events as ev

        p = event.payload
        if isinstance(p, ev.MessageDelta):
            self._text(p.text)
            self._streamed += p.text
        elif isinstance(p, ev.MessageCompleted):
            if p.role != "assistant":
                self._note(f"[{p.role}] {clip(p.text)}", "dim")
            elif not self._streamed and p.text:
                self._text(p.text)
            self._end_text()
        elif isinstance(p, ev.TurnCompleted):
            if not self._shown_text and not self._streamed and p.text:
                self._text(p.text)
            self._end_text()
        elif isinstance(p, ev.ToolStarted):
            self._note(f"> {p.name}" + (f": {p.summary}" if p.summary else ""), "yellow")
        elif isinstance(p, ev.ToolCompleted):
            mark = "ok" if p.ok else "error"
            tail = f": {p.summary}" if p.summary else ""
            self._note(f"< {p.name} {mark}{tail}", "green" if p.ok else "red")
        elif isinstance(p, ev.PermissionRequested):
            self._note(f"? approval {p.request_id}: {p.summary}", "magenta")
        elif isinstance(p, ev.PermissionResolved):
            self._note(f"? approval {p.request_id}: {p.decision} by {p.source}", "magenta")
        elif isinstance(p, ev.TurnRestarted):
            # the text printed so far cannot be taken back: say it is void, start again
            self._end_text()
            self._note(f"~ attempt {p.attempt}: {RESTARTED}", "bold yellow")
            self._streamed = ""
            self._shown_text = False
        elif isinstance(p, ev.Status):
            self._note(f"- {p.message}", "dim")
        elif isinstance(p, ev.Artifact):
            self._note(f"+ artifact {p.name}" + (f" ({p.path})" if p.path else ""), "cyan")
        elif isinstance(p, ev.TurnFailed):
            self._end_text()
            self._note("failed: " + failure_text(p.reason, p.message, p.hint), "bold red")
        elif isinstance(p, ev.TurnCancelled):
            self._end_text()
            self._note(f"cancelled by {p.by}", "bold yellow")
        elif isinstance(p, ev.SessionClosed):
            self._note("session closed", "dim")

    @property
    def at_line_start(self) -> bool:
        """Whether the answer's last line is complete (a status line would not cut into it)."""
        return self._at_line_start

    def summary(self, status: str, usage: Usage | None, seconds: float) -> None:
        self._end_text()
        style = {"completed": "bold green", "cancelled": "bold yellow"}.get(status, "bold red")
        parts = [usage_text(usage) or "usage unknown", duration_text(seconds)]
        self.chrome.write(status, style)
        self.chrome.line(" | " + " | ".join(parts), "dim")

    def _text(self, text: str) -> None:
        if not text:
            return
        self.text.write(text)
        self._shown_text = True
        self._at_line_start = text.endswith("\n")

    def _end_text(self) -> None:
        if not self._at_line_start:
            self.text.write("\n")
            self._at_line_start = True
        self._streamed = ""

    def _note(self, text: str, style: str) -> None:
        # A note between pieces of streamed text starts on its own line.
        if not self._at_line_start:
            self.text.write("\n")
            self._at_line_start = True
        self.chrome.line(text, style)
