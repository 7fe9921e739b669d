"""The host side: a controller that looks like the local one but drives session workflows.

A host switches from one machine to a cluster by constructing :class:`TemporalController`
instead of ``harness_core.Controller``: ``open_session`` / ``turn`` / ``run_turn`` /
``cancel_turn`` / ``close_session`` / ``events`` keep their shapes. A turn's events come from the
shared ledger's live tail (never through Temporal); its result is the workflow's summary.
Permission requests show up as ``permission.requested`` events (and in
``pending_permissions``); ``approve`` answers one with the contract's ``PermissionDecision``.
``steer`` / ``fork`` / ``checkpoint`` / ``rewind`` keep the local controller's shapes too: they
are workflow updates (a steer reaches the worker running the turn, the others run on a worker
while no turn runs; see :mod:`.workflow`).

**asyncio only.** ``temporalio``'s client runs on asyncio, so this controller does too (the
local ``Controller`` also runs on trio). Used under trio it refuses with one line,
``unsupported-feature``, rather than failing inside the SDK.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from types import TracebackType
from typing import Any

import anyio.lowlevel
import anyio.to_thread
from harness_hookspecs import (
    TERMINAL_TYPES,
    Event,
    HarnessError,
    LedgerStore,
    PermissionDecision,
    PermissionHandler,
    PermissionRequest,
    SessionRef,
    SessionRewound,
)
from harness_hookspecs.errors import MESSAGES
from harness_hookspecs.permissions import request_from_dict
from temporalio.client import (
    Client,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateHandle,
    WorkflowUpdateRPCTimeoutOrCancelledError,
    WorkflowUpdateStage,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from harness_core.ledger import open_ledger
from harness_core.ledger.tail import follow
from harness_core.plugin_manager import get_plugins
from harness_core.retry import turn_ended

from .connection import TemporalConnection
from .host_approvals import ASKED_GRACE, TurnApprovers
from .shapes import (
    ANSWER_PERMISSION,
    NAMESPACE,
    STEER,
    TASK_QUEUE,
    ExecutorOptions,
    ForkRequest,
    RewindSummary,
    SessionRefShape,
    SessionSpec,
    SessionStart,
    SteerRequest,
    TurnRequest,
    TurnSummary,
)
from .workflow import SessionWorkflow

#: Seconds a fork, checkpoint or rewind asked just after a turn's terminal waits for the turn
#: to settle in its workflow (see ``TemporalController._between_turns``).
SETTLE_GRACE = 10.0
#: Seconds a cancelled caller waits for its turn's end on the worker before it leaves anyway.
CANCEL_WAIT = 30.0


class RemoteTurn:
    """A turn running on some worker; iterate it for its events (from the ledger)."""

    def __init__(
        self, ledger: LedgerStore, session_id: str, turn_id: str, after: int, update: Any
    ) -> None:
        self.session_id = session_id
        self.turn_id = turn_id
        self._ledger = ledger
        self._after = after
        self._update: WorkflowUpdateHandle[TurnSummary] = update
        self.events: list[Event] = []
        self.terminal: Event | None = None
        self.settled = False  # its summary came back: nothing left to cancel

    @property
    def finished(self) -> bool:
        return self.terminal is not None

    async def __aiter__(self) -> AsyncIterator[Event]:
        if self.terminal is not None:
            return
        async for event in follow(self._ledger, self.session_id, after=self._after):
            self._after = event.sequence
            if event.turn_id != self.turn_id:
                continue
            self.events.append(event)
            yield event
            # The crash recovery's ``interrupted`` ends a lost attempt: its retry follows.
            if event.type in TERMINAL_TYPES and turn_ended([event]):
                self.terminal = event
                return

    async def result(self) -> TurnSummary:
        with _refusals():
            summary = await self._update.result()
        self.settled = True
        return summary


class TemporalController:
    """Open, run and close sessions on Temporal workers. ``async with`` it, like Controller."""

    def __init__(
        self,
        client: Client,
        *,
        ledger: LedgerStore | str | None,
        task_queue: str = TASK_QUEUE,
        options: ExecutorOptions | None = None,
        permission_handler: PermissionHandler | None = None,
    ) -> None:
        """``permission_handler``: the host's approver, the same async callable the local
        ``Controller`` takes (see :mod:`.host_approvals`); without one, answer requests with
        :meth:`approve`. Unanswered requests are denied after ``options.approval_timeout``."""
        self.client = client
        self.permission_handler = permission_handler
        self._approvers: TurnApprovers | None = None
        self.task_queue = task_queue
        self.options = options if options is not None else ExecutorOptions()
        self._owns_ledger = ledger is None or isinstance(ledger, str)
        self.ledger: LedgerStore = (
            open_ledger(ledger, schemes=get_plugins().ledger_schemes)
            if ledger is None or isinstance(ledger, str)
            else ledger
        )

    @classmethod
    async def connect(
        cls,
        address: str,
        *,
        ledger: LedgerStore | str | None,
        namespace: str = NAMESPACE,
        connection: TemporalConnection | None = None,
        **kw: Any,
    ) -> TemporalController:
        """Connect to Temporal at ``address``; ``ledger``: the workers' shared ledger.
        ``connection``: TLS and an API key (:mod:`.connection`; it names the address and
        namespace itself)."""
        require_asyncio()
        if connection is None:
            connection = TemporalConnection(address, namespace)
        client = await connection.client()
        return cls(client, ledger=ledger, **kw)

    async def __aenter__(self) -> TemporalController:
        require_asyncio()
        if self.permission_handler is not None:
            self._approvers = await TurnApprovers(self.permission_handler).start()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._approvers is not None:
            await self._approvers.stop()
            self._approvers = None
        if self._owns_ledger:
            self.ledger.close()

    def _handle(self, session: SessionRef | str) -> WorkflowHandle[Any, Any]:
        require_asyncio()  # every Temporal call goes through a handle
        session_id = session if isinstance(session, str) else session.session_id
        return self.client.get_workflow_handle(session_id)

    async def open_session(self, **fields: Any) -> SessionRef:
        """Start the session's workflow and open the session on a worker."""
        require_asyncio()
        session_id = str(uuid.uuid4())
        try:
            spec = SessionSpec(**fields)
        except TypeError:
            raise HarnessError("invalid-request", "unknown session field") from None
        start = SessionStart(session_id=session_id, spec=spec, options=self.options)
        with _refusals():
            handle = await self.client.start_workflow(
                SessionWorkflow.run, start, id=session_id, task_queue=self.task_queue
            )
            shape: SessionRefShape = await handle.execute_update(
                "open", result_type=SessionRefShape
            )
        return SessionRef(provider=shape.provider, target=shape.target, session_id=shape.session_id)

    @asynccontextmanager
    async def turn(
        self, session: SessionRef | str, prompt: str, *, turn_id: str | None = None
    ) -> AsyncIterator[RemoteTurn]:
        """Submit a turn; iterate the yielded turn for its events. Leaving early cancels it."""
        session_id = session if isinstance(session, str) else session.session_id
        if self.permission_handler is not None and self._approvers is None:
            raise HarnessError(
                "invalid-request", "a permission_handler answers inside `async with` the controller"
            )
        turn_id = turn_id or "turn_" + uuid.uuid4().hex[:24]
        after = await anyio.to_thread.run_sync(self.ledger.last_sequence, session_id)
        with _refusals():
            update = await self._handle(session_id).start_update(
                SessionWorkflow.turn,
                TurnRequest(turn_id=turn_id, prompt=prompt, streamed=True),
                wait_for_stage=WorkflowUpdateStage.ACCEPTED,
            )
        turn = RemoteTurn(self.ledger, session_id, turn_id, after, update)
        approving = None
        if self._approvers is not None:
            approving = await self._approvers.watch(self, session_id, turn_id, after)
        try:
            yield turn
        finally:
            if approving is not None:
                approving.cancel()
            if not (turn.finished or turn.settled):
                with anyio.CancelScope(shield=True):
                    await self.cancel_turn(session_id, turn_id)
                    await turn.result()

    async def run_turn(
        self,
        session: SessionRef | str,
        prompt: str,
        *,
        on_event: Callable[[Event], Any] | None = None,
        turn_id: str | None = None,
    ) -> TurnSummary:
        """Run a turn to its end; ``on_event`` sees its events as the ledger records them."""
        if on_event is None and self.permission_handler is None:
            return await self._run_unwatched(session, prompt, turn_id)
        async with self.turn(session, prompt, turn_id=turn_id) as turn:
            if on_event is None:
                return await turn.result()
            async for event in turn:
                on_event(event)
        return await turn.result()

    async def _run_unwatched(
        self, session: SessionRef | str, prompt: str, turn_id: str | None
    ) -> TurnSummary:
        """A turn nobody watches on the way: one update call that returns its summary (no
        ledger read, no second round trip for the result). Cancelled, it cancels the turn
        and waits for its end, as leaving :meth:`turn` early does."""
        session_id = session if isinstance(session, str) else session.session_id
        turn_id = turn_id or "turn_" + uuid.uuid4().hex[:24]
        handle = self._handle(session_id)
        update_id = str(uuid.uuid4())
        try:
            with _refusals():
                summary: TurnSummary = await handle.execute_update(
                    "turn",
                    TurnRequest(turn_id=turn_id, prompt=prompt),
                    id=update_id,
                    result_type=TurnSummary,
                )
            return summary
        except (anyio.get_cancelled_exc_class(), WorkflowUpdateRPCTimeoutOrCancelledError):
            # (the SDK turns the caller's cancellation into its own error)
            with (
                anyio.CancelScope(shield=True),
                anyio.move_on_after(CANCEL_WAIT),
                suppress(HarnessError),
                _refusals(),
            ):
                await self.cancel_turn(session_id, turn_id)
                await handle.get_update_handle(update_id, result_type=TurnSummary).result()
            await anyio.lowlevel.checkpoint()  # the caller's cancellation, as such
            raise HarnessError(
                "provider-unavailable", "the Temporal service did not answer in time"
            ) from None

    async def cancel_turn(self, session: SessionRef | str, turn_id: str | None = None) -> None:
        with _refusals():
            await self._handle(session).signal(SessionWorkflow.cancel, turn_id)

    async def close_session(self, session: SessionRef | str) -> None:
        """Close the session (idempotent): its workflow then completes."""
        try:
            with _refusals():
                await self._handle(session).execute_update("close")
        except HarnessError as error:
            if error.reason != "session-closed":
                raise

    async def approve(
        self, session: SessionRef | str, request_id: str, decision: PermissionDecision
    ) -> PermissionDecision:
        """Answer the pending permission request ``request_id`` (from a ``permission.requested``
        event) with the contract's decision; returns it as recorded (``source="host"``).
        ``invalid-request`` when no request waits under that id (unknown, answered, timed out)."""
        if not isinstance(decision, PermissionDecision):
            raise HarnessError("invalid-request", "approve takes a PermissionDecision")
        session_id = session if isinstance(session, str) else session.session_id
        handle = self._handle(session_id)
        deadline = anyio.current_time() + ASKED_GRACE
        while True:
            try:
                with _refusals():
                    answer: dict[str, Any] = await handle.execute_update(
                        ANSWER_PERMISSION, args=[request_id, decision.to_dict()], result_type=dict
                    )
                return PermissionDecision.from_dict(answer)
            except HarnessError as error:
                if error.reason != "invalid-request" or anyio.current_time() > deadline:
                    raise
                if not await anyio.to_thread.run_sync(self._asked, session_id, request_id):
                    raise
            await anyio.sleep(0.02)

    def _asked(self, session_id: str, request_id: str) -> bool:
        """The ledger shows ``request_id`` requested and not yet resolved."""
        asked = False
        for event in self.ledger.events(session_id):
            if getattr(event.payload, "request_id", None) == request_id:
                asked = event.type == "permission.requested"
        return asked

    async def pending_permissions(self, session: SessionRef | str) -> list[PermissionRequest]:
        """The session's permission requests waiting for an answer."""
        with _refusals():
            pending = await self._handle(session).query("pending_permissions", result_type=list)
        return [request_from_dict(data) for data in pending]

    def events(self, session_id: str, *, after: int = 0, limit: int | None = None) -> list[Event]:
        return self.ledger.events(session_id, after=after, limit=limit)

    # -- branching ----------------------------------------------------------------------------

    async def steer(
        self, session: SessionRef | str, text: str, *, turn_id: str | None = None
    ) -> None:
        """Add ``text`` to the session's running turn (``turn_id``: only if it is that one);
        returns once the worker running it handed the text to the harness (``turn.steered``).
        ``turn-not-found`` without a running turn, ``unsupported-feature`` without ``steer``."""
        if not isinstance(text, str) or not text.strip():
            raise HarnessError("invalid-request", "the steer text is empty")
        with _refusals():
            await self._handle(session).execute_update(STEER, SteerRequest(text, turn_id))

    async def fork(
        self,
        session: SessionRef | str,
        *,
        at: str | None = None,
        session_id: str | None = None,
        **fields: Any,
    ) -> SessionRef:
        """A child of ``session`` whose conversation is the parent's up to its event ``at``
        (default: its last), run by a workflow of its own; ``fields`` change the child's
        workspace, model, posture, agent, user or config. Refused while a turn runs."""
        child_id = session_id if session_id is not None else str(uuid.uuid4())
        try:
            uuid.UUID(child_id)
        except (ValueError, TypeError, AttributeError):
            raise HarnessError("invalid-request", "the session id is a UUID") from None
        request = ForkRequest(child_id, at, dict(fields))
        shape: SessionRefShape = await self._between_turns(
            session, "fork", request, result_type=SessionRefShape
        )
        return SessionRef(provider=shape.provider, target=shape.target, session_id=shape.session_id)

    async def checkpoint(self, session: SessionRef | str) -> str:
        """Snapshot the session's workspace on a worker; the checkpoint id
        (``checkpoint.created``). Refused while a turn runs."""
        checkpoint_id: str = await self._between_turns(session, "checkpoint", result_type=str)
        return checkpoint_id

    async def _between_turns(self, session: SessionRef | str, name: str, *args: Any,
                             result_type: type) -> Any:  # fmt: skip
        """Run the update ``name``, refused (``turn-active``) while a turn runs. A turn whose
        terminal is in the ledger may still be settling in its workflow: asked meanwhile, the
        update is asked again for up to :data:`SETTLE_GRACE` seconds."""
        session_id = session if isinstance(session, str) else session.session_id
        deadline = anyio.current_time() + SETTLE_GRACE
        while True:
            try:
                with _refusals():
                    return await self._handle(session_id).execute_update(
                        name, args=args, result_type=result_type
                    )
            except HarnessError as error:
                if error.reason != "turn-active" or anyio.current_time() > deadline:
                    raise
                if not await anyio.to_thread.run_sync(self._last_turn_ended, session_id):
                    raise
            await anyio.sleep(0.05)

    def _last_turn_ended(self, session_id: str) -> bool:
        """The ledger's last turn has its terminal (its workflow update may not have returned)."""
        events = self.ledger.events(session_id)
        last = next((e.turn_id for e in reversed(events) if e.turn_id is not None), None)
        return last is None or turn_ended([e for e in events if e.turn_id == last])

    async def rewind(self, session: SessionRef | str, checkpoint: str) -> SessionRewound:
        """Go back to ``checkpoint`` (an id of this session's, or a unique prefix) on a worker;
        the ``session.rewound`` it recorded. Refused while a turn runs."""
        if not isinstance(checkpoint, str) or not checkpoint:
            raise HarnessError("invalid-request", "checkpoint (an id) is required")
        summary: RewindSummary = await self._between_turns(
            session, "rewind", checkpoint, result_type=RewindSummary
        )
        return SessionRewound(
            checkpoint_id=summary.checkpoint_id,
            turn_id=summary.turn_id,
            conversation=summary.conversation,
            turns_kept=summary.turns_kept,
        )


@contextmanager
def _refusals() -> Iterator[None]:
    """A workflow's refusal (validator, failed update) becomes the HarnessError it names."""
    try:
        yield
    except WorkflowUpdateFailedError as error:
        cause: BaseException | None = error.cause
        while cause is not None and not isinstance(cause, ApplicationError):
            cause = cause.__cause__
        if isinstance(cause, ApplicationError) and cause.type in MESSAGES:
            # the workflow's and the activities' messages are safe summaries (HarnessError hints)
            hint = cause.message if cause.message != cause.type else None
            raise HarnessError(cause.type, hint) from None
        raise HarnessError("provider-failed") from None
    except RPCError as error:
        if "already completed" in error.message:
            raise HarnessError("session-closed") from None  # the workflow ends at close
        if error.status == RPCStatusCode.NOT_FOUND:
            raise HarnessError("session-not-found") from None
        raise HarnessError("provider-unavailable", "the Temporal service refused") from None


def require_asyncio() -> None:
    """temporalio's client needs a running asyncio loop (not trio): one clear line otherwise."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        raise HarnessError(
            "unsupported-feature", "the Temporal controller runs on asyncio only, not trio"
        ) from None


async def workflow_gone(client: Client, session_id: str) -> bool:
    """Whether the session's workflow no longer runs: not found (never started, or lost with a
    dev server's in-memory state) or ended (completed, failed, terminated, timed out)."""
    from temporalio.client import WorkflowExecutionStatus

    try:
        described = await client.get_workflow_handle(session_id).describe()
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            return True
        raise HarnessError("provider-unavailable", "the Temporal service refused") from None
    return described.status != WorkflowExecutionStatus.RUNNING
