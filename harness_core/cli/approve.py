"""``harness run --approve``: ask on the terminal (y/n) before each tool call the harness wants.

The question goes to stderr with the tool and its one-line input summary, and the tool's whole
input (one line, bounded, control characters removed) above it when there is one; the answer is
read from the controlling terminal, so a prompt piped on stdin does not answer it. Without a
terminal ``--approve`` is refused up front (one clear line) rather than denying everything.
"""

from __future__ import annotations

import json
import sys
from typing import IO, Any

from harness_hookspecs import PermissionDecision, PermissionRequest, safe_line

from .errors import CliError

YES = ("y", "yes")
NO = ("n", "no", "")
#: Characters of a tool's input shown above the question.
INPUT_SHOWN = 500


def input_line(request: PermissionRequest) -> str | None:
    """The tool's input as one bounded line (``None``: the tool has none)."""
    if not request.input:
        return None
    text = json.dumps(dict(request.input), ensure_ascii=False, sort_keys=True, default=str)
    return safe_line(text, INPUT_SHOWN)


def open_terminal() -> IO[str]:
    """The controlling terminal for reading answers (``invalid-request`` without one)."""
    try:
        return open("/dev/tty", encoding="utf-8", errors="replace")
    except OSError:
        raise CliError("invalid-request", "--approve needs a terminal to ask on") from None


class TerminalApprover:
    """The controller's ``permission_handler`` for ``--approve``."""

    def __init__(self, answers: IO[str], questions: IO[str] | None = None) -> None:
        self.answers = answers
        self.questions = questions or sys.stderr

    def _ask(self, request: PermissionRequest) -> PermissionDecision:
        shown = safe_line(request.summary, 200)
        given = input_line(request)
        if given is not None:
            self.questions.write(f"harness: {safe_line(request.tool, 128)} input: {given}\n")
        while True:
            self.questions.write(f"harness: allow {shown}? [y/N] ")
            self.questions.flush()
            line = self.answers.readline()
            if not line:  # the terminal went away: nobody allowed it
                return PermissionDecision.deny("no answer on the terminal")
            answer = line.strip().lower()
            if answer in YES:
                return PermissionDecision.allow()
            if answer in NO:
                return PermissionDecision.deny("denied on the terminal")

    async def __call__(self, request: PermissionRequest) -> PermissionDecision:
        import anyio

        # Cancellable: a timeout or Ctrl-C abandons the question (the read thread ends with
        # the next line or at exit).
        decision: PermissionDecision = await anyio.to_thread.run_sync(
            self._ask, request, abandon_on_cancel=True
        )
        return decision

    def close(self) -> Any:
        return self.answers.close()
