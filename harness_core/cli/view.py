"""How events look to a person: one line per event (``--events``, ``harness events``) and the
readable default view of ``harness run`` (the answer as it streams, compact tool/approval lines,
a one-line summary).

The readable view writes the assistant's text to stdout and everything else (session line, tool
calls, approvals, failures, the summary) to stderr, so ``harness run NAME PROMPT > answer.txt``
keeps just the answer while a terminal shows both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .output import Out

if TYPE_CHECKING:
    from harness_hookspecs import Event, Usage


def format_event(event: Event) -> str:
    """One readable line per event."""
    return f"{event.sequence:>5}  {event.type:<21} {_detail(event)}".rstrip()


def _detail(event: Event) -> str:
    from harness_hookspecs import events as ev

    p = event.payload
    if isinstance(p, ev.SessionOpened):
        return f"{p.harness} ({p.target}) posture={p.posture} sandbox={p.sandbox}"
    if isinstance(p, ev.SessionResumed):
        return f"{p.harness} ({p.target})"
    if isinstance(p, ev.TurnStarted):
        return clip(p.prompt)
    if isinstance(p, ev.MessageDelta):
        return clip(p.text)
    if isinstance(p, ev.MessageCompleted):
        return f"[{p.role}] {clip(p.text)}"
    if isinstance(p, ev.ToolStarted | ev.ToolCompleted):
        status = "" if isinstance(p, ev.ToolStarted) else (" ok" if p.ok else " error")
        return f"{p.name}{status}" + (f" - {p.summary}" if p.summary else "")
    if isinstance(p, ev.PermissionRequested):
        return f"{p.request_id} {p.summary}"
    if isinstance(p, ev.PermissionResolved):
        return f"{p.request_id} {p.decision} by {p.source}"
    if isinstance(p, ev.UsageReported):
        return usage_text(p.usage) or "-"
    if isinstance(p, ev.Status):
        return p.message
    if isinstance(p, ev.Artifact):
        return p.name + (f" {p.path}" if p.path else "")
    if isinstance(p, ev.TurnCompleted):
        if p.output is not None:
            import json

            return "output " + clip(json.dumps(p.output, ensure_ascii=False))
        return clip(p.text or "")
    if isinstance(p, ev.TurnFailed):
        return failure_text(p.reason, p.message, p.hint)
    if isinstance(p, ev.TurnCancelled):
        return f"by {p.by}"
    return ""


def clip(text: str, limit: int = 160) -> str:
    flat = text.replace("\n", "\\n")
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def failure_text(reason: str, message: str, hint: str | None) -> str:
    return f"{reason}: {message}" + (f" ({hint})" if hint else "")


def usage_text(usage: Usage | None) -> str:
    """``12 in / 34 out tokens, $0.0012`` with unknown parts left out ('' when all unknown)."""
    if usage is None:
        return ""
    parts = []
    if usage.input_tokens is not None or usage.output_tokens is not None:
        parts.append(f"{_n(usage.input_tokens)} in / {_n(usage.output_tokens)} out tokens")
    if usage.cost_usd is not None:
        parts.append(cost_text(usage.cost_usd))
    return ", ".join(parts)


def cost_text(cost: float | None) -> str:
    if cost is None:
        return "-"
    return f"${cost:.4f}" if cost < 1 else f"${cost:.2f}"


def _n(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def duration_text(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m{rest:02d}s"


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
