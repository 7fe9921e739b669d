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
    def instructions(self) -> str | None:
        """The host's instructions for the harness (``OpenSessionRequest.instructions``): an
        adapter declaring the ``instructions`` feature delivers them through its CLI's own
        system-prompt mechanism on every turn; for any other the runtime has already put them
        before the session's first prompt."""
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

    def report_vendor_session_id(self, value: str) -> None:
        """Say the CLI's own id of this session (a Codex thread, an OpenCode session...) once
        the adapter knows it: at open or resume, or during the first turn. The runtime keeps it
        in the session record (``vendor_session_id``) and in ``session.opened`` /
        ``session.resumed``. An empty or over-long value is ignored."""

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
    """Append-only event ledger.

    **Durable before delivered.** Appends may be buffered; once ``flush`` returns, every event
    appended before it survives a crash of this process (the store documents what more it
    promises, e.g. an OS crash). The runtime hands an event to anyone (the turn's iterator,
    observers, the CLI) only after a flush covering it returned, so what a caller saw is in the
    ledger. A store that cannot promise that (memory) says so in its docs.

    **One writer per session** (:meth:`claim`, :meth:`release`). Whoever opens, resumes or runs a
    session claims it first; while a live owner (another store, usually another process) holds
    it, ``claim`` raises ``HarnessError("session-busy")`` and nothing is appended. A claim whose
    owner is gone (its process died, or its lease expired) is taken over. Each successful claim
    gets a writer epoch greater than every earlier one of that session; once another store has
    claimed the session, this store's appends to it are refused with ``ledger-failed`` (fenced),
    so a writer that lost its claim cannot interleave with the new one. Appends to a session
    nobody claimed are accepted (tools and tests write ledgers directly).
    """

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

    def claim(self, session_id: str) -> int:
        """Become the session's one writer; return the writer epoch (``session-busy`` if held).

        Claiming a session this store already holds returns the same epoch.
        """
        ...

    def release(self, session_id: str) -> None:
        """Give up this store's claim on the session (idempotent; the epoch stays used)."""

    def claimed(self, session_id: str) -> bool:
        """Whether a live writer (this store or another) holds the session now.

        Readers use it to tell a turn still running from one a dead process left open.
        """
        ...

    def close(self) -> None:
        """Flush, release every claim this store holds, close."""


@runtime_checkable
class CommitsOnAppend(Protocol):
    """A store whose ``append`` has already done what ``flush`` would when it returns.

    The runtime then skips the flush before delivering an event (no thread hop). The memory
    store is one (it promises nothing past the process), and so is the JSONL store for a crash
    of the process (its ``flush`` adds the fsync: ``syncs_on_flush``, so the runtime runs it in
    a worker thread; a store whose flush does nothing more is not flushed at all).
    """

    commits_on_append: bool
    syncs_on_flush: bool


@runtime_checkable
class NotifyingStore(Protocol):
    """A store that can report a finished flush by calling back instead of blocking a thread.

    ``flush_notify(callback)`` queues a flush and returns ``True``; ``callback()`` runs (on the
    store's writer thread) once everything appended before the call is durable, and the caller
    then calls ``raise_failure()`` to raise what went wrong (``ledger-failed``). Returns
    ``False`` (and never calls back) when there is nothing to wait for.
    """

    def flush_notify(self, callback: Callable[[], object]) -> bool: ...

    def raise_failure(self) -> None: ...
