"""`HarnessError`: the one error type that crosses the contract, with a fixed reason.

Messages are fixed per reason so raw provider text, exception dumps and secrets never cross the
boundary. An adapter may add a short ``hint`` it authored itself (bounded, no control characters).
"""

from __future__ import annotations

from typing import Literal, get_args

from .bounds import STATUS_MAX, has_control

Reason = Literal[
    "unsupported-target",
    "unsupported-feature",
    "invalid-request",
    "authentication-required",
    "provider-unavailable",
    "session-not-found",
    "session-closed",
    "turn-not-found",
    "turn-active",
    "timeout",
    "provider-failed",
    "limit-exceeded",
    "permission-denied",
    "sandbox-failed",
    "policy-refused",
    "plugin-failed",
    "ledger-failed",
    "session-busy",
    "interrupted",
    "invalid-output",
]

REASONS: tuple[str, ...] = get_args(Reason)

MESSAGES: dict[str, str] = {
    "unsupported-target": "the harness does not support this target",
    "unsupported-feature": "the harness does not support this feature",
    "invalid-request": "the request is invalid",
    "authentication-required": "the provider requires valid credentials",
    "provider-unavailable": "the provider is unavailable",
    "session-not-found": "no such session",
    "session-closed": "the session is closed",
    "turn-not-found": "no such active turn",
    "turn-active": "a turn is already active in this session",
    "timeout": "the turn exceeded its deadline",
    "provider-failed": "the provider failed",
    "limit-exceeded": "the turn exceeded a configured limit",
    "permission-denied": "permission was denied",
    "sandbox-failed": "the sandbox could not be provisioned",
    "policy-refused": "the requested configuration is refused by policy",
    "plugin-failed": "a plugin failed to load or register",
    "ledger-failed": "the ledger could not be read or written",
    "session-busy": "another process is running this session",
    "interrupted": "the turn was interrupted: the process running it ended before the turn did",
    "invalid-output": "the final answer did not match the turn's output schema",
}

#: Reasons only the runtime knows (a deadline, a limit, a dead process, ownership): a harness
#: reporting one of them is not believed (recorded as ``provider-failed``).
RUNTIME_REASONS: frozenset[str] = frozenset(
    {"timeout", "limit-exceeded", "interrupted", "session-busy", "turn-active", "ledger-failed"}
)


class HarnessError(Exception):
    """The single failure type of the contract.

    ``reason`` is one of :data:`REASONS`; ``message`` is fixed by the reason. ``hint`` is an
    optional adapter- or core-authored safe summary (1-240 chars, no control characters) - never
    provider output or exception text.
    """

    #: one of :data:`REASONS` (``invalid-request``, ``session-not-found``, ``limit-exceeded``,
    #: ...): what a host branches on
    reason: str
    #: the fixed sentence of the reason (``MESSAGES[reason]``)
    message: str
    #: an optional safe detail (names the object: a path, an id, a limit); a hint that is too
    #: long or holds control characters is dropped
    hint: str | None

    def __init__(self, reason: str, hint: str | None = None) -> None:
        if reason not in MESSAGES:
            raise ValueError(f"unknown HarnessError reason: {reason!r}")
        if hint is not None and (not 1 <= len(hint) <= STATUS_MAX or has_control(hint)):
            hint = None
        self.reason = reason
        self.message = MESSAGES[reason]
        self.hint = hint
        super().__init__(str(self))

    def __str__(self) -> str:
        text = f"{self.reason}: {self.message}"
        return f"{text} ({self.hint})" if self.hint else text

    def __reduce__(self) -> tuple[type[HarnessError], tuple[str, str | None]]:
        return (type(self), (self.reason, self.hint))
