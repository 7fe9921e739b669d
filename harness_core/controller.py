"""The controller: sessions, turns and the guarantees the contract promises.

- one session-wide, gap-free ``sequence``; every event goes to the ledger, then to observers;
- one active turn per session (``turn-active``); exactly one terminal event per turn, last;
- a stream that ends without a terminal is recorded as ``failed``, never ``completed``;
- a raised exception is ``provider-failed`` with no raw text; deadlines are ``timeout``;
  event-count limits are ``limit-exceeded``; cancel reaches the caller as ``turn.cancelled``;
- close is idempotent; resume works from a complete :class:`SessionRef` in a new controller;
- durable before delivered (:mod:`.delivery`); a producer task drives a turn that is iterated,
  ``run_turn`` drives it in the caller's task when no commit wait sits between events (:mod:`.turn`);
- one writer per session: open and resume claim it in the ledger (``session-busy``, nothing
  appended); resume ends a turn a dead process left open with ``turn.failed(interrupted)``,
  unless it is the turn the caller is about to retry (:mod:`.retry`).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Collection, Mapping, Sequence
from contextlib import AbstractContextManager, asynccontextmanager, nullcontext
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import attrs
from harness_hookspecs import (
    CancelTurnRequest,
    CloseSessionRequest,
    Event,
    HarnessDescriptor,
    HarnessError,
    HostTool,
    OpenSessionRequest,
    PermissionHandler,
    ResumeSessionRequest,
    SandboxHandle,
    SessionClosed,
    SessionOpened,
    SessionRecord,
    SessionRef,
    SessionResumed,
    SessionRewound,
    assert_supported,
)
from harness_hookspecs.protocols import LedgerStore

from .approvals import DEFAULT_PERMISSION_TIMEOUT, Approvals
from .branching import Checkpoints, steer
from .budgets import DEFAULT_OUTPUT_RETRIES, Budget, SessionLimits
from .clock import backend_clock, now
from .config_check import check_config
from .context import default_state_root
from .delivery import Delivery
from .diagnostics import ledger_files, log_directory
from .hook_calls import HookCalls
from .ledger import open_ledger
from .observer_queue import DEFAULT_OBSERVER_QUEUE
from .plugin_manager import CORE_PLUGIN_NAME, Plugins, get_plugins
from .redaction import Redactor
from .request_checks import (
    is_uuid,
    new_session_id,
    ref_of,
    require_asking,
    require_dangerous_grant,
    require_same_workspace,
    require_usage_for,
    safe_hint,
)
from .retry import dangling_turn, recovered
from .session_config import stored_config
from .session_start import (
    SessionFields,
    attach_session,
    create_record,
    keep_vendor_session_id,
    resume_fields,
)
from .tool_hooks import AfterTool, ToolHook
from .turn import (
    CLEANUP_GRACE,
    LiveSession,
    Turn,
    TurnResult,
    as_error,
    end_interrupted,
    end_unretried,
)
from .turn_start import TurnOptions, begin_turn

if TYPE_CHECKING:
    from .checkpoints import CheckpointSettings
    from .command_policy import CommandPolicy
    from .delegation import Delegation

PROVIDER_CANCEL_WAIT = 1.0
#: How long a clean-up hook (an adapter's close, a sandbox's finalize) may take.
CLEANUP_DEADLINE = 10.0
#: Entered where a close needs no shield (nothing in it can wait); reusable.
_NO_SCOPE: AbstractContextManager[None] = nullcontext()


def closed_record(record: SessionRecord, stamp: str) -> SessionRecord:
    """``attrs.evolve(record, status="closed", updated_at=stamp)``, built directly (evolve
    looks the fields up every call: ~1.5 us a close)."""
    return SessionRecord(
        record.ref,
        "closed",
        record.created_at,
        stamp,
        record.workspace,
        record.model,
        record.posture,
        record.agent,
        record.user,
        record.config,
        record.parent_session_id,
        record.parent_event_id,
        record.vendor_session_id,
        record.imported,
    )


class Controller:
    """Owns sessions and turns. Use as ``async with Controller(...) as controller``."""

    def __init__(
        self,
        *,
        plugins: Plugins | None = None,
        ledger: LedgerStore | str | None = None,
        state_dir: str | os.PathLike[str] | None = None,
        turn_timeout: float | None = None,
        max_events_per_turn: int | None = None,
        env_passthrough: Sequence[str] = (),
        permission_handler: PermissionHandler | None = None,
        permission_timeout: float = DEFAULT_PERMISSION_TIMEOUT,
        command_policy: CommandPolicy | None = None,
        budget: Budget | Mapping[str, Any] | None = None,
        host_tools: Sequence[HostTool] = (),
        dangerous_grant: bool | Collection[str] = False,
        tool_hooks: Sequence[ToolHook] = (),
        observer_queue: int = DEFAULT_OBSERVER_QUEUE,
        max_backlog: int | None = None,
        checkpoints: CheckpointSettings | bool = False,
        delegation: Delegation | None = None,
    ) -> None:
        """Every argument is keyword-only; a controller is entered with ``async with``.

        :param plugins: the plugins to use (default: every installed entry point of the
            ``harness_core`` group, :func:`get_plugins`; :func:`plugins_from` for an exact set).
        :param ledger: a ``LedgerStore`` or a ledger URL (``memory:``, ``jsonl:DIR``,
            ``sqlite:PATH``, a plugin's scheme); default ``$HARNESS_LEDGER``, else
            ``sqlite:.harness/ledger.sqlite`` in the current directory.
        :param state_dir: where each session's adapter keeps its durable state
            (``<state_dir>/<harness>/<digest of the session id>``: native ids, transcripts;
            a relative path is taken from the current directory at construction); default
            ``$HARNESS_STATE_DIR``, else ``$XDG_STATE_HOME/harness-core`` (``~/.local/state``).
            A resume in another process needs the same directory.
        :param turn_timeout: default deadline of every turn, in seconds (``None``: none); a
            turn past it ends ``turn.failed(timeout)``.
        :param max_events_per_turn: default event limit of a turn (``turn.failed(limit-exceeded)``).
        :param env_passthrough: names of host environment variables passed to the processes
            sessions spawn, on top of the minimal base (``PATH``, ``HOME``, ``LANG``, ...), the
            sandbox's variables and the session's credentials; nothing else of the host's
            environment reaches them.
        :param permission_handler: the host's approver, ``async def handler(request) ->
            PermissionDecision | None``, asked for each permission request of a turn (``None``
            from it, or no handler: policy plugins and the posture decide; see
            :mod:`.approvals`).
        :param permission_timeout: seconds a request may wait for an answer; then it is
            denied with ``source="timeout"``.
        :param command_policy: the ``auto`` posture's command policy (default: the built-in
            rules, :class:`~harness_core.command_policy.CommandPolicy`).
        :param budget: limits of every session (a ``Budget`` or a mapping of its field names;
            ``open_session(budget=...)`` can only tighten them; see :mod:`.budgets`).
        :param host_tools: the host's own tools, offered to harnesses over each session's
            loopback MCP bridge (with the ``register_host_tools`` hook's).
        :param dangerous_grant: lets sessions take the ``dangerous`` posture: ``True`` for
            all, or a collection of the agent names allowed (otherwise ``dangerous`` is
            ``policy-refused`` and nothing opens).
        :param tool_hooks: the host's ``before_tool``/``after_tool`` hooks (:mod:`.tool_hooks`).
        :param observer_queue: how many events an ``async def`` ``on_event`` observer may lag (fed
            by a task, never awaited by a turn; beyond: dropped, reported; :mod:`.observer_queue`).
        :param max_backlog: events all turns together may record ahead of the ledger's commits
            before each waits for it (``None``: no bound; see ``docs/host-apps.md``).
        :param checkpoints: snapshot workspaces around each turn (``True``, or settings).
        :param delegation: lets sessions run other harnesses (:mod:`.delegation`); default: no.
        """
        self.plugins = plugins if plugins is not None else get_plugins()
        self._set_storage(ledger, state_dir, checkpoints)
        self.turn_timeout = turn_timeout
        self.max_events_per_turn = max_events_per_turn
        self.env_passthrough = tuple(env_passthrough)
        self.approvals = Approvals(
            handler=permission_handler,
            timeout=permission_timeout,
            policy=command_policy,
            hook=self.plugins.pm.hook,
            hooks=tuple(tool_hooks),
        )
        self.budget = Budget.of(budget)
        self.dangerous_grant = dangerous_grant
        self._set_delivery(tool_hooks, observer_queue, max_backlog)
        self._set_tools(host_tools, delegation)
        self._set_backend()

    def _set_tools(self, host_tools: Sequence[HostTool], delegation: Delegation | None) -> None:
        #: the host's delegation settings (``None``: sessions cannot run other harnesses)
        self.delegation = delegation
        if delegation is not None:  # (delegation's module loads only for a host that allows it)
            from .delegation import TOOL_NAME, delegation_tool

            if not any(t.name == TOOL_NAME for t in host_tools):
                host_tools = (*host_tools, delegation_tool(self))
        #: The host's own tools, served with the plugins' over each session's MCP bridge.
        self.host_tools = tuple(host_tools)

    def _set_backend(self) -> None:
        """What the async backend supplies, set for real when the controller is entered."""
        #: the sessions open in this controller, by id (see :meth:`live`)
        self.live_sessions: dict[str, LiveSession] = {}
        #: where turns' producers, bridges and session-lived tasks run (``None`` until entered)
        self.task_group: anyio.abc.TaskGroup | None = None
        self.event_class: Callable[[], anyio.Event] = anyio.Event
        self.scope_class: Callable[..., anyio.CancelScope] = anyio.CancelScope
        #: ``anyio.current_time`` and the cancellation class of the backend we run on
        self.clock: Callable[[], float] = anyio.current_time
        self.cancelled_class: type[BaseException] | None = None  # known once entered

    def _set_storage(
        self,
        ledger: LedgerStore | str | None,
        state_dir: str | os.PathLike[str] | None,
        checkpoints: CheckpointSettings | bool,
    ) -> None:
        """The ledger (opened here from a URL or the default), the state root, the log
        directory and the workspace checkpoints."""
        self.ledger: LedgerStore = (
            ledger
            if ledger is not None and not isinstance(ledger, str)
            else open_ledger(ledger, schemes=self.plugins.ledger_schemes)
        )
        self._owns_ledger = ledger is None or isinstance(ledger, str)
        # Absolute: an adapter hands paths under it to a CLI that runs in the workspace.
        root = Path(state_dir) if state_dir is not None else default_state_root()
        self.state_root = root.absolute()
        #: where each session's diagnostic log goes (:mod:`.diagnostics`): beside the ledger
        self.log_directory = log_directory(self.ledger, self.state_root)
        #: the sessions' workspace checkpoints (:mod:`.branching`)
        if checkpoints is True:
            from .checkpoints import CheckpointSettings

            checkpoints = CheckpointSettings()
        self.checkpoints = Checkpoints(
            checkpoints or None,
            self.state_root,
            (self.log_directory, *ledger_files(self.ledger)),
        )

    def _set_delivery(
        self, tool_hooks: Sequence[ToolHook], observer_queue: int, max_backlog: int | None
    ) -> None:
        """The hook fast path, the delivery every session's recorder shares, and the host's
        after_tool hooks fed from it."""
        #: ``call(hook, **kwargs)``: a lifecycle hook, straight to the core's default when no
        #: plugin wraps it (the fast path every module of the runtime calls hooks through)
        self.call = HookCalls(self.plugins.pm.hook, self.plugins.pm.get_plugin(CORE_PLUGIN_NAME))
        #: what is recorded, durable and seen (shared by every session's recorder)
        self.delivery = Delivery(
            self.ledger,
            self.plugins.pm.hook,
            self.call.implementations("on_event"),
            spawn=lambda: self.task_group,
            observer_queue=observer_queue,
            max_backlog=max_backlog,
        )
        #: the host's after_tool hooks, fed what is recorded (tasks of this controller)
        self.after_tool = AfterTool(tool_hooks, lambda: self.task_group)
        if self.after_tool.hooks:
            self.delivery.listeners.append(self.after_tool)

    @property
    def hook(self) -> Any:
        return self.plugins.hook

    # -- lifetime ---------------------------------------------------------------------------

    async def __aenter__(self) -> Controller:
        self.task_group = anyio.create_task_group()
        await self.task_group.__aenter__()
        self.event_class, self.scope_class = type(anyio.Event()), type(anyio.CancelScope())
        self.clock, self.cancelled_class = backend_clock(), anyio.get_cancelled_exc_class()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        with anyio.CancelScope(shield=True):
            for live in list(self.live_sessions.values()):
                await self._release(live, closing=False)
                self.ledger.release(live.ref.session_id)
            self.live_sessions.clear()
            await self.delivery.close_observers()
        assert self.task_group is not None
        self.task_group.cancel_scope.cancel()
        # The body's own exception is not handed to the task group, so a HarnessError raised
        # in `async with Controller()` reaches the host as itself, not wrapped in a group.
        await self.task_group.__aexit__(None, None, None)
        self.task_group = None
        await self.delivery.deliver()
        await self.delivery.flush()
        if self._owns_ledger:
            self.ledger.close()
        return None

    # -- describe ---------------------------------------------------------------------------

    def describe(self, harness: str) -> HarnessDescriptor:
        try:
            descriptor: HarnessDescriptor | None = self.call("harness_describe", harness=harness)
        except HarnessError:
            raise
        except Exception as error:
            raise as_error(error) from None
        if descriptor is None:
            raise HarnessError("invalid-request", f"unknown harness {harness!r}"[:240])
        return descriptor

    # -- open / resume ----------------------------------------------------------------------

    async def open_session(
        self,
        request: OpenSessionRequest | None = None,
        /,
        *,
        session_id: str | None = None,
        budget: Budget | Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> SessionRef:
        """Open a session: ``open_session(OpenSessionRequest(...))`` or keyword fields.
        ``session_id``: a UUID to propose (e.g. a Temporal workflow id); by default a new one.
        ``budget`` adds this session's limits to the controller's."""
        if session_id is not None and not is_uuid(session_id):
            raise HarnessError("invalid-request", "the session id is a UUID")
        limits = self.budget if budget is None else self.budget.tighter(Budget.of(budget))
        if request is None:
            try:
                request = OpenSessionRequest(**fields)
            except (TypeError, ValueError) as error:
                raise HarnessError("invalid-request", safe_hint(error)) from None
        live = await self.open_live(request, session_id, limits)
        return live.ref

    async def open_live(
        self,
        request: OpenSessionRequest,
        session_id: str | None,
        limits: Budget,
        *,
        fork: Callable[[Any], Any] | None = None,
        parent: tuple[str, str] | None = None,
    ) -> LiveSession:
        """:meth:`open_session` once its request is built: the checks, the adapter's open (or,
        ``fork``, its fork: feature ``fork`` checked), the record and ``session.opened``
        (``parent``: a child session's parent session id and the parent's event that started
        it, :meth:`open_child`)."""
        descriptor = self.describe(request.harness)
        assert_supported(descriptor, request.target, "fork" if fork is not None else None)
        require_asking(descriptor, request.posture)
        require_dangerous_grant(request.posture, request.agent, self.dangerous_grant)
        require_usage_for(descriptor, limits)
        check_config(descriptor, request.config)
        proposed = session_id if session_id is not None else new_session_id()
        live = await self._attach(
            descriptor,
            proposed,
            SessionFields.of(request, request.target),
            fork
            or (
                lambda context: self.call("harness_open_session", request=request, context=context)
            ),
        )
        live.limits.budget = limits
        live.turn_ids = set()  # a new session: no turn yet
        if request.instructions is not None and "instructions" not in descriptor.features:
            live.instructions_pending = request.instructions
        create_record(
            self.ledger,
            live.ref,
            request,
            stored_config(request.config, live.context.redactor),
            parent=parent,
            vendor_session_id=live.context.vendor_session_id,
        )
        self._keep_vendor_ids(live)
        self.ledger.claim(live.ref.session_id)
        live.recorder.record(
            None,
            SessionOpened(
                provider=live.ref.harness,
                target=live.ref.target,
                model=request.model,
                posture=request.posture,
                sandbox=live.sandbox.provider,
                network=request.sandbox.network,
                instructions=request.instructions,
                record_thinking=request.record_thinking,
                parent_session_id=parent[0] if parent else None,
                parent_event_id=parent[1] if parent else None,
                vendor_session_id=live.context.vendor_session_id,
            ),
        )
        self._allow_delegation(live)
        await live.recorder.deliver()
        return live

    async def open_child(
        self, request: OpenSessionRequest, budget: Budget, parent: LiveSession, started_by: str
    ) -> LiveSession:
        """Open a child session of ``parent`` (delegation, :mod:`.delegation`) that its event
        ``started_by`` asked for: ``budget`` carved from the parent's; its usage counts
        against the parent's budget as it happens; it closes with the parent."""
        live = await self.open_live(
            request, None, budget, parent=(parent.ref.session_id, started_by)
        )
        live.parent, live.depth = parent, parent.depth + 1
        live.limits.parent = parent.limits
        parent.children.append(live.ref.session_id)
        return live

    def _allow_delegation(self, live: LiveSession) -> None:
        """Give the session's context ``run_agent`` when the host allows delegation."""
        if self.delegation is not None:
            from .delegation import run_agent_in_turn

            live.context.delegate = partial(run_agent_in_turn, self, live.ref.session_id)

    async def resume_session(
        self,
        session: SessionRef | str | ResumeSessionRequest,
        /,
        *,
        budget: Budget | Mapping[str, Any] | None = None,
        retrying: str | None = None,
        **fields: Any,
    ) -> SessionRef:
        """Reattach to a session from its complete ref (or its id, looked up in the ledger);
        ``budget`` as for :meth:`open_session` (what the session used before counts).
        ``retrying``: the turn id the caller retries next, kept open if a dead process left it
        so (its retry ends it once; see :mod:`.retry`). The session's record gives what
        ``fields`` leave out: its workspace, model, posture, agent, user and config (a config
        key given again replaces its own; a secret is resolved again from its reference)."""
        limits = self.budget if budget is None else self.budget.tighter(Budget.of(budget))
        record = self.ledger.get_session(
            session if isinstance(session, str) else ref_of(session).session_id
        )
        if isinstance(session, str):
            if record is None:
                raise HarnessError("session-not-found")
            session = record.ref
        if isinstance(session, SessionRef):
            fields = resume_fields(self.ledger, record, fields)
            try:
                request = ResumeSessionRequest(session=session, **fields)
            except (TypeError, ValueError) as error:
                raise HarnessError("invalid-request", safe_hint(error)) from None
        else:
            request = session
        ref = request.session
        if ref.session_id in self.live_sessions:
            live = self.live_sessions[ref.session_id]
            if live.closed:
                raise HarnessError("session-closed")
            return live.ref
        if record is not None and record.status == "closed":
            raise HarnessError("session-closed")
        if record is not None and record.ref != ref:
            raise HarnessError("invalid-request", "the session ref does not match the ledger")
        descriptor = self.describe(ref.harness)
        assert_supported(descriptor, ref.target, "resume")
        require_asking(descriptor, request.posture)
        agent = request.agent or (record.agent if record is not None else None)
        require_dangerous_grant(request.posture, agent, self.dangerous_grant)
        require_usage_for(descriptor, limits)
        check_config(descriptor, request.config)
        if record is not None:
            require_same_workspace(record.workspace, request.workspace)
            if not limits.empty:  # a spent budget refuses here, before session.resumed
                self._refuse_spent(limits, ref.session_id)
        # Claimed before the adapter starts: a second process gets session-busy, leaves no trace.
        self.ledger.claim(ref.session_id)
        try:
            live = await self._resume_attached(descriptor, request, record, retrying)
            # a rewind a killed process left half done is finished (and recorded) first
            await self.checkpoints.recover(live, self.call, self.ledger)
            live.limits.budget = limits
            events = self.ledger.events(ref.session_id)
            live.limits.load(events)
            live.turn_ids = {event.turn_id for event in events if event.turn_id is not None}
            # what its children spent counts against its budget too (delegation)
            from .delegation import count_children

            has_children = count_children(live.limits, self.ledger, ref.session_id, events)
        except BaseException:
            self.ledger.release(ref.session_id)
            raise
        await live.recorder.deliver()
        if has_children:  # those a dead process left open end with it (turns interrupted)
            await self._close_children(ref.session_id)
        return live.ref

    def _refuse_spent(self, limits: Budget, session_id: str) -> None:
        """``limit-exceeded`` when the session (with its children) has spent ``limits``."""
        spent = SessionLimits(budget=limits)
        events = self.ledger.events(session_id)
        spent.load(events)
        from .delegation import count_children

        count_children(spent, self.ledger, session_id, events)
        spent.before_turn(anyio.current_time())

    async def _resume_attached(
        self,
        descriptor: HarnessDescriptor,
        request: ResumeSessionRequest,
        record: SessionRecord | None,
        retrying: str | None,
    ) -> LiveSession:
        ref = request.session
        live = await self._attach(
            descriptor,
            ref.session_id,
            SessionFields.of(request, ref.target),
            lambda ctx: self.call("harness_resume_session", request=request, context=ctx),
            expect=ref,
        )
        if record is None:
            create_record(
                self.ledger, ref, request, stored_config(request.config, live.context.redactor)
            )
        recorder = live.recorder
        recorder.next_sequence = self.ledger.last_sequence(ref.session_id) + 1
        # A turn a dead process left open (we hold the claim: its owner is gone) gets its end,
        # or its retry's (then the turn stays open until its retry, or until the session moves on).
        dangling = dangling_turn(self.ledger, ref.session_id, recorder.next_sequence - 1)
        interrupted, live.retrying = recovered(dangling, retrying)
        if interrupted is not None:
            end_interrupted(live, interrupted)
        vendor = live.context.vendor_session_id
        if vendor is not None:
            keep_vendor_session_id(self.ledger, ref.session_id, vendor)
        self._keep_vendor_ids(live)
        recorder.record(
            None, SessionResumed(provider=ref.harness, target=ref.target, vendor_session_id=vendor)
        )
        self._allow_delegation(live)
        return live

    def _keep_vendor_ids(self, live: LiveSession) -> None:
        """A vendor session id the adapter reports from now on goes into the record."""
        live.context.on_vendor_session_id = partial(
            keep_vendor_session_id, self.ledger, live.ref.session_id
        )

    async def _attach(
        self,
        descriptor: HarnessDescriptor,
        session_id: str,
        fields: SessionFields,
        call: Callable[[Any], Any],
        expect: SessionRef | None = None,
    ) -> LiveSession:
        """:func:`~.session_start.attach_session` for this controller."""
        return await attach_session(self, descriptor, session_id, fields, call, expect)

    # -- turns ------------------------------------------------------------------------------

    def live(self, session: SessionRef | str) -> LiveSession:
        """The open session ``session`` (a ref or an id) of this controller: its context,
        recorder, limits and active turn. ``session-not-found`` when this controller does not
        hold it open, ``session-closed`` once closed."""
        session_id = session if isinstance(session, str) else session.session_id
        live = self.live_sessions.get(session_id)
        if live is None:
            record = self.ledger.get_session(session_id)
            if record is not None and record.status == "closed":
                raise HarnessError("session-closed")
            raise HarnessError("session-not-found")
        if live.closed:
            raise HarnessError("session-closed")
        return live

    @asynccontextmanager
    async def turn(
        self,
        session: SessionRef | str,
        prompt: str,
        *,
        timeout: float | None = None,
        max_events: int | None = None,
        turn_id: str | None = None,
        attempt: int = 1,
        output_schema: Mapping[str, Any] | None = None,
        output_retries: int = DEFAULT_OUTPUT_RETRIES,
        parent_event_id: str | None = None,
    ) -> AsyncIterator[Turn]:
        """Start a turn; iterate the yielded :class:`Turn` for its events.

        Leaving the block before the terminal event cancels the turn (recorded as cancelled).
        ``turn_id`` + ``attempt``: the caller's id for a turn it may retry (see
        :mod:`harness_core.retry`); by default a new id. ``output_schema``: the JSON Schema the
        final answer must match (see :mod:`harness_core.structured_output`), retried at most
        ``output_retries`` times. ``parent_event_id``: the earlier event of this session this
        turn's input answers (the previous turn's decision), recorded on ``turn.started``.
        """
        options = TurnOptions(
            timeout, max_events, turn_id, attempt, output_schema, output_retries, parent_event_id
        )
        turn = await begin_turn(self, self.live(session), prompt, options, inline=False)
        try:
            yield turn
        finally:
            if not (turn.finished and turn.settled):
                with anyio.CancelScope(shield=True):
                    if not turn.finished:
                        await turn.cancel("host")
                    await turn.settle()

    async def run_turn(
        self,
        session: SessionRef | str,
        prompt: str,
        *,
        on_event: Callable[[Event], Any] | None = None,
        timeout: float | None = None,
        max_events: int | None = None,
        turn_id: str | None = None,
        attempt: int = 1,
        output_schema: Mapping[str, Any] | None = None,
        output_retries: int = DEFAULT_OUTPUT_RETRIES,
        parent_event_id: str | None = None,
    ) -> TurnResult:
        """Run a turn to its terminal event and return the result (events included; with an
        ``output_schema``, the decision as ``result.output``)."""
        live = self.live(session)
        options = TurnOptions(
            timeout, max_events, turn_id, attempt, output_schema, output_retries, parent_event_id
        )
        if not (self.delivery.instant or (on_event is None and not self.delivery.observed)):
            # Events reach the caller and observers only once durable: the producer and the
            # iterator group the commits (see Turn).
            keywords = attrs.asdict(options, recurse=False)
            async with self.turn(live.ref.session_id, prompt, **keywords) as turn:
                async for event in turn:
                    if on_event is not None:
                        on_event(event)
            return turn.result()
        # Nothing to wait for between events: the caller's task drives the turn.
        turn = await begin_turn(self, live, prompt, options, inline=True)
        await turn.run_inline(on_event)
        return turn.result()

    def active_turn(self, session: SessionRef | str) -> Turn | None:
        return self.live(session).active

    def redactor(self, session: SessionRef | str) -> Redactor:
        """The open session's redactor (its resolved credentials): for what leaves the host."""
        return self.live(session).context.redactor

    async def cancel_turn(self, session: SessionRef | str, turn_id: str | None = None) -> None:
        """Cancel the active turn; its caller receives a ``turn.cancelled`` terminal event."""
        live = self.live(session)
        turn = live.active
        if turn is None or (turn_id is not None and turn.turn_id != turn_id):
            raise HarnessError("turn-not-found")
        assert_supported(live.descriptor, live.ref.target, "cancel")
        request = CancelTurnRequest(session=live.ref, turn_id=turn.turn_id)
        turn.cancel_requested = "host"  # a harness answering the cancel itself: the host's
        with anyio.move_on_after(PROVIDER_CANCEL_WAIT):
            try:
                awaitable = self.call("harness_cancel_turn", request=request, context=live.context)
                if awaitable is not None:
                    await awaitable
            except Exception:
                pass
        await turn.cancel("host")

    # -- steer / fork / checkpoint / rewind (:mod:`.branching`) ------------------------------

    async def steer(self, session: SessionRef | str, text: str) -> None:
        """Add ``text`` to the session's running turn (feature ``steer``): the harness hands it
        to the model before its next request in the turn; ``turn.steered`` is recorded.
        ``turn-not-found`` when no turn runs, ``unsupported-feature`` without ``steer``."""
        live = self.live(session)
        await steer(live, live.active, text, self.call)
        await live.recorder.deliver()

    async def fork(
        self,
        session: SessionRef | str,
        *,
        at: str | None = None,
        session_id: str | None = None,
        **fields: Any,
    ) -> SessionRef:
        """Open a child of ``session`` (feature ``fork``) whose conversation is the parent's
        up to its event ``at`` (an event id; default: its last event) and nothing after;
        ``fields`` override what the child takes from the parent's record (workspace, model,
        posture, config...). ``session.forked`` is recorded in both sessions."""
        from .fork import fork_session  # only a fork needs it

        return await fork_session(self, session, at, session_id, fields)

    async def checkpoint(self, session: SessionRef | str) -> str:
        """Snapshot the session's workspace now (every harness: :mod:`.checkpoints`); returns
        the checkpoint id, recorded as ``checkpoint.created``."""
        live = self.live(session)
        checkpoint_id = await self.checkpoints.create(live)
        await live.recorder.deliver()
        return checkpoint_id

    async def rewind(self, session: SessionRef | str, checkpoint: str) -> SessionRewound:
        """Go back to ``checkpoint`` (an id of this session's, or a unique prefix): its files
        restored byte-exact and, where the harness claims ``checkpoint``, the conversation
        taken back to the turns before it. Recorded as ``session.rewound``; nothing deleted."""
        live = self.live(session)
        self.ledger.flush()
        events = await anyio.to_thread.run_sync(self.ledger.events, live.ref.session_id)
        rewound = await self.checkpoints.rewind(live, checkpoint, events, self.call, self.ledger)
        await live.recorder.deliver()
        await live.recorder.flush()
        return rewound

    # -- close ------------------------------------------------------------------------------

    async def close_session(self, session: SessionRef | str) -> None:
        """Close a session: idempotent; a closed session refuses turns with ``session-closed``.
        A session not live here is closed in the ledger alone (its harness is not started; a
        turn its dead owner left open ends ``interrupted``)."""
        session_id = session if isinstance(session, str) else session.session_id
        live = self.live_sessions.get(session_id)
        if live is None:
            record = self.ledger.get_session(session_id)
            if record is None:
                raise HarnessError("session-not-found")
            if record.status == "closed":
                return
            from .delegation import delegated

            if delegated(self.ledger.events(session_id)):
                await self._close_children(session_id)
            await self._close_record(record)
            return
        if live.closed:
            return
        if live.children:
            await self._close_children(session_id, live.children)
        # Shielded, so a cancelled caller still closes the session whole - unless nothing in
        # the close can wait (then nothing can be cancelled; an adapter close or sandbox
        # finalize that waits is shielded on its own, see _bounded).
        with self.scope_class(shield=True) if self._close_may_wait(live) else _NO_SCOPE:
            await self._release(live, closing=True)
            live.recorder.record(None, SessionClosed())
            record = self.ledger.get_session(session_id)
            if record is not None:
                self.ledger.update_session(closed_record(record, now()))
            await live.recorder.deliver()
            await live.recorder.flush()
            self.ledger.release(session_id)
        live.closed = True
        # Forgotten here (the ledger says it is closed): a long-lived controller keeps no
        # closed session, and its exit does not release it twice.
        self.live_sessions.pop(session_id, None)

    async def _close_children(self, session_id: str, live_children: Sequence[str] = ()) -> None:
        """Close the child sessions of ``session_id`` before it (delegation): those open here,
        and those the ledger records open (a dead process's: their open turns end
        ``interrupted``). Shielded: a parent's close closes its children whole."""
        from .delegation import children_of

        with self.scope_class(shield=True):
            for child_id in list(live_children):
                await self.close_session(child_id)
            for record in children_of(self.ledger, session_id):
                if record.status == "open" and record.session_id not in self.live_sessions:
                    try:
                        await self.close_session(record.session_id)
                    except HarnessError:
                        pass  # another live process holds it (session-busy): its to close

    async def _close_record(self, record: SessionRecord) -> None:
        """Close a session no live process holds without starting its harness (see
        :mod:`.record_close`); ``session-busy`` while its owner lives."""
        from .record_close import record_ends  # start-up: only a session no process holds

        session_id = record.session_id
        with self.scope_class(shield=True):
            self.ledger.claim(session_id)
            try:
                recorder = record_ends(self.ledger, self.delivery, record)
                self.ledger.update_session(closed_record(record, now()))
                await recorder.deliver()
                await recorder.flush()
            finally:
                self.ledger.release(session_id)

    def _close_may_wait(self, live: LiveSession) -> bool:
        """Whether closing ``live`` can wait for anything but its clean-up hooks: a turn to end,
        processes to stop, a bridge to close, the store to commit."""
        return (
            live.active is not None
            or live.context.closing_waits
            or not (self.delivery.instant and self.delivery.free_flush)
        )

    async def _release(self, live: LiveSession, *, closing: bool) -> None:
        """Finish any active turn, close adapter resources, kill processes, finalize sandbox."""
        end_unretried(live)
        turn = live.active
        if turn is not None and not turn.finished:
            await turn.cancel("close")
            await turn.settle()
        await self._bounded(
            "harness_close_session",
            request=CloseSessionRequest(session=live.ref),
            context=live.context,
        )
        context = live.context
        for scope in context.background_scopes:
            scope.cancel()
        if context.closing_waits:
            await context.kill_processes("turn", CLEANUP_GRACE)
            await context.kill_processes("session", CLEANUP_GRACE)
            await context.close_bridge()
        await self.finalize_sandbox(live.sandbox, live.outcome)
        if not closing:
            self.live_sessions.pop(live.ref.session_id, None)

    async def finalize_sandbox(self, handle: SandboxHandle, outcome: str) -> None:
        """Finalize a session's sandbox (``outcome``: success, failure or cancelled): bounded,
        shielded, its failure ignored (a clean-up)."""
        await self._bounded("sandbox_finalize", handle=handle, outcome=outcome)

    async def _bounded(self, hook: str, **kwargs: Any) -> None:
        """Call a clean-up hook and await what it returns for at most 10 s, shielded from the
        caller's cancel, ignoring its failure (the scope only when there is something to
        await: the direct sandbox's finalize and a function harness's close return nothing)."""
        try:
            awaitable = self.call(hook, **kwargs)
        except Exception:
            return
        if awaitable is not None:
            with self.scope_class(deadline=self.clock() + CLEANUP_DEADLINE, shield=True):
                try:
                    await awaitable
                except Exception:
                    pass

    # -- reading back -----------------------------------------------------------------------

    def sessions(self, *, limit: int | None = None) -> list[SessionRecord]:
        return self.ledger.list_sessions(limit=limit)

    def events(self, session_id: str, *, after: int = 0, limit: int | None = None) -> list[Event]:
        return self.ledger.events(session_id, after=after, limit=limit)

    def export(self, session_id: str) -> dict[str, Any]:
        from .export import export_session

        self.ledger.flush()
        bundle: dict[str, Any] = export_session(self.ledger, session_id)
        return bundle
