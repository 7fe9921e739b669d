"""One line per failure: ``harness: error: <reason>: <message> (<hint>)`` and a documented exit code.

Exit codes (also in the README):

====  ==========================================================================================
0     success (for ``run``: the turn completed)
1     the turn ran and failed (``turn.failed``), or conformance checks failed
2     bad input or a refused request: unknown harness, bad option, no such session, policy...
69    something the command needs is unavailable: the harness CLI, credentials, the sandbox
      (also a ``run`` whose turn failed ``authentication-required`` or ``provider-unavailable``)
74    the ledger could not be read or written
70    an internal error (a bug): set ``HARNESS_DEBUG=1`` for the traceback
130   the turn was cancelled (Ctrl-C, SIGTERM, ``harness cancel``)
====  ==========================================================================================
"""

from __future__ import annotations

import sys

from harness_hookspecs import HarnessError

from .exits import (
    EXIT_CANCELLED,
    EXIT_INTERNAL,
    EXIT_LEDGER,
    EXIT_OK,
    EXIT_TURN_FAILED,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
)

_UNAVAILABLE = frozenset(
    {"provider-unavailable", "authentication-required", "sandbox-failed", "plugin-failed"}
)


class CliError(HarnessError):
    """A CLI-side refusal: a fixed reason plus a hint the CLI wrote itself (never user data)."""

    def __init__(self, reason: str, hint: str | None = None) -> None:
        # The hint is CLI-authored, so keep it even when it is longer than an event's bound.
        super().__init__(reason)
        self.hint = hint.replace("\n", " ") if hint else None
        Exception.__init__(self, str(self))


def file_error(what: str, path: str, error: OSError) -> CliError:
    """``invalid-request`` naming the file and the OS's reason: ``cannot read the prompt file
    notes.md (No such file or directory)``."""
    return CliError("invalid-request", f"{what} {path[-200:]} ({error.strerror or error})")


def exit_code_for(reason: str) -> int:
    if reason in _UNAVAILABLE:
        return EXIT_UNAVAILABLE
    if reason == "ledger-failed":
        return EXIT_LEDGER
    return EXIT_USAGE


def unwrap(error: BaseException) -> BaseException:
    """The ``HarnessError`` inside (nested) exception groups, else their only leaf, else ``error``.

    anyio task groups wrap whatever their body raised; the user must see the reason, not
    ``ExceptionGroup`` (and a closed stdout pipe must stay a quiet ``BrokenPipeError``).
    """
    if not isinstance(error, BaseExceptionGroup):
        return error
    leaves = [unwrap(inner) for inner in error.exceptions]
    for leaf in leaves:
        if isinstance(leaf, HarnessError | KeyboardInterrupt):
            return leaf
    return leaves[0] if len(leaves) == 1 else error


def error_line(error: HarnessError) -> str:
    """``harness: error: <reason>: <hint>``, or the reason's fixed message when there is no hint."""
    return f"harness: error: {error.reason}: {error.hint or error.message}"


def report(error: HarnessError) -> int:
    """Print the one line for ``error`` and return its exit code."""
    sys.stderr.write(error_line(error) + "\n")
    sys.stderr.flush()
    return exit_code_for(error.reason)


def internal(error: BaseException) -> int:
    sys.stderr.write(
        f"harness: error: internal error ({type(error).__name__}); "
        "set HARNESS_DEBUG=1 for details\n"
    )
    return EXIT_INTERNAL


__all__ = [
    "EXIT_CANCELLED",
    "EXIT_INTERNAL",
    "EXIT_LEDGER",
    "EXIT_OK",
    "EXIT_TURN_FAILED",
    "EXIT_UNAVAILABLE",
    "EXIT_USAGE",
    "CliError",
    "exit_code_for",
    "file_error",
    "internal",
    "report",
    "unwrap",
]
