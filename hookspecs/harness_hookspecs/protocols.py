"""Structural types for the objects plugins provide and the runtime hands them.

Plugins register *objects* (an adapter, a sandbox provider, a credential resolver, a ledger store
factory) through the registration hooks; these protocols say what those objects look like. The
runtime passes adapters a :class:`SessionContext` so that spawning a process goes through the
sandbox and the runtime's process-group bookkeeping - adapters never hard-code either.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from .events import Event, Payload
from .models import (
    CancelTurnRequest,
    CloseSessionRequest,
    Credential,
    CredentialRequest,
    HarnessDescriptor,
    OpenSessionRequest,
    ResumeSessionRequest,
    RunTurnRequest,
    SandboxHandle,
    SandboxRequest,
    SessionRecord,
    SessionRef,
)
from .permissions import PermissionDecision, PermissionRequest

#: The host's approver given to the ``Controller``: an async callable (like the Agent SDK's
#: ``can_use_tool``) answering a request, or returning ``None`` to leave it to the policy hooks.
PermissionHandler = Callable[[PermissionRequest], Awaitable[PermissionDecision | None]]


class ProcessHandle(Protocol):
    """A process the runtime spawned in its own process group inside the session's sandbox."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    def lines(self) -> AsyncIterator[bytes]:
        """Stdout, line by line (without the newline), until EOF."""
        ...

    async def send(self, data: bytes) -> None:
        """Write to stdin."""

    async def close_stdin(self) -> None: ...

    async def wait(self) -> int:
        """Wait for exit and return the exit code."""
        ...

    async def terminate(self, grace: float = 2.0) -> None:
        """SIGTERM the whole process group, SIGKILL it after ``grace`` seconds."""

    def stderr_tail(self) -> bytes:
        """The last few KiB of stderr: for adapter-side classification, and shown to the user
        only through :func:`~harness_hookspecs.stderr_diagnostics` (never raw in an event)."""
        ...


class SessionContext(Protocol):
    """What the runtime gives an adapter for one session (also passed to every turn)."""

    @property
    def session_id(self) -> str: ...

    @property
    def harness(self) -> str: ...

    @property
    def target(self) -> str: ...

    @property
    def workspace(self) -> str | None:
        """The working directory inside the sandbox (as provisioned)."""
        ...

    @property
    def model(self) -> str | None: ...

    @property
    def posture(self) -> str: ...

    @property
    def config(self) -> Mapping[str, object]:
        """Harness configuration from the open/resume request."""
        ...

    @property
    def env(self) -> Mapping[str, str]:
        """Injected credentials and sandbox variables for this session's processes."""
        ...

    @property
    def state_dir(self) -> str:
        """A durable directory private to this adapter and session (survives resume)."""
        ...

    @property
    def deadline(self) -> float | None:
        """The current turn's absolute deadline (``time.monotonic()`` clock), if any."""
        ...

    async def spawn(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stdin: bool = False,
        lifetime: str = "turn",
    ) -> ProcessHandle:
        """Start ``argv`` in its own process group, inside the sandbox.

        ``env`` is added on top of a minimal base environment plus :attr:`env`; nothing else from
        the host's environment leaks in. ``lifetime`` is ``"turn"`` (killed when the turn ends,
        is cancelled or times out) or ``"session"`` (killed on close).
        """
        ...

    def add_secret(self, value: str) -> None:
        """Register a value the adapter learned that must be redacted everywhere."""

    async def request_permission(self, request: PermissionRequest) -> PermissionDecision:
        """Ask the host whether a tool call may run, and wait for the decision.

        Answered by the host's handler, then the ``harness_permission_decide`` hook, then the
        posture's default; no answer within the approval timeout is a deny with
        ``source="timeout"``. Records ``permission.requested`` and ``permission.resolved`` in
        the running turn. Never raises for a deny: the adapter tells its CLI.
        """
        ...


@runtime_checkable
class HarnessAdapter(Protocol):
    """A full harness adapter. A one-function harness is wrapped into one by the runtime."""

    name: str

    def describe(self) -> HarnessDescriptor: ...

    async def open_session(
        self, request: OpenSessionRequest, context: SessionContext
    ) -> SessionRef: ...

    async def resume_session(
        self, request: ResumeSessionRequest, context: SessionContext
    ) -> SessionRef: ...

    def run_turn(self, request: RunTurnRequest, context: SessionContext) -> AsyncIterator[Payload]:
        """Yield payloads for one turn, ending with exactly one terminal payload."""
        ...

    async def cancel_turn(self, request: CancelTurnRequest, context: SessionContext) -> None:
        """Provider-side cancel (e.g. ACP ``session/cancel``); the runtime also cancels the task."""

    async def close_session(self, request: CloseSessionRequest, context: SessionContext) -> None:
        """Release adapter-owned resources; idempotent."""


@runtime_checkable
class SandboxProvider(Protocol):
    name: str

    async def provision(self, request: SandboxRequest) -> SandboxHandle: ...

    async def finalize(self, handle: SandboxHandle, outcome: str) -> None: ...


@runtime_checkable
class CredentialResolver(Protocol):
    name: str

    async def resolve(self, request: CredentialRequest) -> Sequence[Credential]: ...


@runtime_checkable
class LedgerStore(Protocol):
    """Append-only event ledger. Appends may be buffered; ``flush`` makes them durable."""

    def create_session(self, record: SessionRecord) -> None: ...

    def update_session(self, record: SessionRecord) -> None: ...

    def get_session(self, session_id: str) -> SessionRecord | None: ...

    def list_sessions(self, *, limit: int | None = None) -> list[SessionRecord]: ...

    def append(self, events: Sequence[Event]) -> None: ...

    def flush(self) -> None: ...

    def events(
        self, session_id: str, *, after: int = 0, limit: int | None = None
    ) -> list[Event]: ...

    def last_sequence(self, session_id: str) -> int: ...

    def close(self) -> None: ...
