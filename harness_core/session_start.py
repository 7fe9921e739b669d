"""Starting a session: its sandbox, credentials, context and MCP bridge, then the adapter's
open or resume (``call``), shared by ``Controller.open_session`` and ``resume_session``; and its
ledger record."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import anyio
import anyio.abc
import attrs
from attrs import frozen
from harness_hookspecs import (
    HarnessDescriptor,
    HarnessError,
    HostTool,
    OpenSessionRequest,
    ResumeSessionRequest,
    SandboxHandle,
    SandboxRequest,
    SandboxSpec,
    SessionOpened,
    SessionRecord,
    SessionRef,
)
from harness_hookspecs.host_tools import ToolCaller
from harness_hookspecs.protocols import LedgerStore
from harness_hookspecs.values import Value

from .approvals import Approvals
from .budgets import SessionLimits
from .clock import now
from .context import RuntimeSessionContext, make_state_dir, state_path
from .credentials import resolve_credentials
from .delivery import Delivery
from .diagnostics import harness_raised
from .dispatch import direct_sandbox
from .hook_calls import HookCalls
from .plugin_manager import Plugins
from .recorder import SessionRecorder
from .redaction import Redactor, add_known_secrets
from .session_config import resolved_config
from .tool_hooks import AfterTool
from .turn import CLEANUP_GRACE, LiveSession, as_error


class SessionStarter(Protocol):
    """What starting a session needs from the controller (a protocol: no import circle)."""

    plugins: Plugins
    ledger: LedgerStore
    state_root: Path
    #: where the session logs go (:mod:`.diagnostics`)
    log_directory: Path
    env_passthrough: tuple[str, ...]
    approvals: Approvals
    #: the host's after_tool hooks (:mod:`.tool_hooks`)
    after_tool: AfterTool
    host_tools: tuple[HostTool, ...]
    clock: Callable[[], float]
    call: HookCalls
    delivery: Delivery
    task_group: anyio.abc.TaskGroup | None
    live_sessions: dict[str, LiveSession]

    @property
    def hook(self) -> Any: ...

    async def finalize_sandbox(self, handle: SandboxHandle, outcome: str) -> None: ...


def create_record(
    ledger: LedgerStore,
    ref: SessionRef,
    request: OpenSessionRequest | ResumeSessionRequest,
    config: Mapping[str, Any] | None = None,
    *,
    parent: tuple[str, str] | None = None,
    vendor_session_id: str | None = None,
) -> None:
    """Record a new (or a resumed-anew) session as open; ``config``: the request's config as
    the record keeps it (secrets as references, see :mod:`.session_config`); ``parent``: a
    child session's parent session id and the parent's event that started it."""
    stamp = now()
    ledger.create_session(
        SessionRecord(
            ref=ref,
            status="open",
            created_at=stamp,
            updated_at=stamp,
            workspace=request.workspace,
            model=request.model,
            posture=request.posture,
            agent=request.agent,
            user=request.user,
            config=config or {},
            parent_session_id=parent[0] if parent else None,
            parent_event_id=parent[1] if parent else None,
            vendor_session_id=vendor_session_id,
        )
    )


def keep_vendor_session_id(ledger: LedgerStore, session_id: str, value: str) -> None:
    """Put the CLI's own id of a session into its record (an adapter reported it later than
    the record was made, or a new one)."""
    record = ledger.get_session(session_id)
    if record is not None and record.vendor_session_id != value:
        ledger.update_session(attrs.evolve(record, vendor_session_id=value, updated_at=now()))


def opened_event(ledger: LedgerStore, session_id: str) -> SessionOpened | None:
    """The ``session.opened`` a session's ledger starts with (what it was opened with: its
    instructions, whether it records thinking), or ``None`` (imported, or none recorded)."""
    first = ledger.events(session_id, limit=1)
    payload = first[0].payload if first else None
    return payload if isinstance(payload, SessionOpened) else None


def resume_fields(
    ledger: LedgerStore, record: SessionRecord | None, fields: Mapping[str, Any]
) -> dict[str, Any]:
    """A resume's request fields: ``fields``, with what they leave out from the session's
    record (workspace, model, posture, agent, user, config - a config key given again replaces
    its own) and its ``session.opened`` (instructions, record_thinking)."""
    given = dict(fields)
    given.setdefault("workspace", record.workspace if record else None)
    given.setdefault("model", record.model if record else None)
    given.setdefault("posture", record.posture if record else "auto")
    if record is None:
        return given
    given.setdefault("agent", record.agent)
    given.setdefault("user", record.user)
    opened = opened_event(ledger, record.ref.session_id)
    if opened is not None:  # what the session was opened with, unless said again
        given.setdefault("instructions", opened.instructions)
        given.setdefault("record_thinking", opened.record_thinking)
    given["config"] = {**resolved_config(record.config), **(given.get("config") or {})}
    return given


@frozen(repr=False, eq=False)
class SessionFields(Value):
    """What opening and resuming a session both say about it (the fields of
    ``OpenSessionRequest`` and ``ResumeSessionRequest``), with the target it runs on."""

    target: str
    workspace: str | None
    model: str | None
    posture: str
    sandbox: SandboxSpec
    agent: str | None
    user: str | None
    config: Mapping[str, Any]
    instructions: str | None = None
    record_thinking: bool = True

    @classmethod
    def of(cls, request: OpenSessionRequest | ResumeSessionRequest, target: str) -> SessionFields:
        return cls(
            target,
            request.workspace,
            request.model,
            request.posture,
            request.sandbox,
            request.agent,
            request.user,
            request.config,
            request.instructions,
            request.record_thinking,
        )


async def attach_session(
    controller: SessionStarter,
    descriptor: HarnessDescriptor,
    session_id: str,
    fields: SessionFields,
    call: Callable[[RuntimeSessionContext], Any],
    expect: SessionRef | None = None,
) -> LiveSession:
    """The sandbox, credentials, context and bridge of a session; ``call`` (the adapter's open
    or resume) then gives its ref. On failure everything started is stopped again."""
    if (
        fields.workspace is not None
        and fields.target == "local"
        and not os.path.isdir(fields.workspace)
    ):
        raise HarnessError("invalid-request", _no_workspace(fields.workspace))
    sandbox = await _sandbox(controller, descriptor, session_id, fields)
    redactor = Redactor()
    resolvers = controller.plugins.credential_resolvers
    if resolvers:
        add_known_secrets(redactor, resolvers.values())
    context: RuntimeSessionContext | None = None
    try:
        context = await _context(controller, descriptor, session_id, fields, sandbox, redactor)
        ref = _checked_ref(controller, descriptor, await call(context), fields.target, expect)
    except BaseException as error:
        with anyio.CancelScope(shield=True):
            if context is not None:
                await context.kill_processes("turn", CLEANUP_GRACE)
                await context.kill_processes("session", CLEANUP_GRACE)
                await context.close_bridge()
            await controller.finalize_sandbox(sandbox, "failure")
        if isinstance(error, Exception):
            harness_raised(
                error,
                directory=controller.log_directory,
                session_id=session_id,
                harness=descriptor.harness,
                redact=redactor.text,
            )
            raise as_error(error) from None
        raise
    context.session_id = ref.session_id
    live = LiveSession(
        ref=ref,
        descriptor=descriptor,
        context=context,
        sandbox=sandbox,
        recorder=SessionRecorder(
            ref, ledger=controller.ledger, delivery=controller.delivery, redactor=redactor
        ),
        limits=SessionLimits(started=controller.clock()),
        record_thinking=fields.record_thinking,
    )
    controller.live_sessions[ref.session_id] = live
    return live


async def _sandbox(
    controller: SessionStarter,
    descriptor: HarnessDescriptor,
    session_id: str,
    fields: SessionFields,
) -> SandboxHandle:
    # The state dir (CLI config, native session ids) is created before provisioning when a
    # sandbox may bind it writable. The direct sandbox (no provider named, no plugin
    # answering the hook) needs no request: the context creates the dir on first use.
    if fields.sandbox.provider is None and controller.call.sole("sandbox_provision") is not None:
        return direct_sandbox(fields.sandbox, fields.workspace)
    return await _provision(
        controller,
        SandboxRequest(
            session_id=session_id,
            harness=descriptor.harness,
            workspace=fields.workspace,
            spec=fields.sandbox,
            agent=fields.agent,
            user=fields.user,
            posture=fields.posture,
            state_dir=state_path(controller.state_root, descriptor.harness, session_id),
        ),
    )


async def _context(
    controller: SessionStarter,
    descriptor: HarnessDescriptor,
    session_id: str,
    fields: SessionFields,
    sandbox: SandboxHandle,
    redactor: Redactor,
) -> RuntimeSessionContext:
    """The session's context: its credentials resolved (and redacted), its bridge started."""
    credentials = (
        await resolve_credentials(controller.hook, descriptor, fields.agent, fields.user)
        if controller.plugins.credential_resolvers
        or not controller.call.sole("credentials_resolve")
        else {}  # nobody to ask
    )
    for credential in credentials.values():
        redactor.add(credential.value)
    context = RuntimeSessionContext(
        session_id=session_id,
        harness=descriptor.harness,
        target=fields.target,
        workspace=fields.workspace,
        model=fields.model,
        posture=fields.posture,
        config=fields.config,
        credential_env={k: c.value for k, c in credentials.items()},
        sandbox=sandbox,
        state_root=controller.state_root,
        redactor=redactor,
        task_group=controller.task_group,
        env_passthrough=controller.env_passthrough,
        approvals=controller.approvals,
        ledger=controller.ledger,
        instructions=fields.instructions,
        after_tool=controller.after_tool,
    )
    if controller.plugins.host_tools or controller.host_tools:
        from .host_tools import merge_tools, start_bridge  # start-up: only a session with tools

        tools = merge_tools(controller.plugins.host_tools.values(), controller.host_tools)
        caller = ToolCaller(
            session_id=session_id,
            harness=descriptor.harness,
            agent=fields.agent,
            user=fields.user,
            posture=fields.posture,
        )
        context.bridge = await start_bridge(tools, fields.config, controller.task_group, caller)
    return context


def _checked_ref(
    controller: SessionStarter,
    descriptor: HarnessDescriptor,
    ref: Any,
    target: str,
    expect: SessionRef | None,
) -> SessionRef:
    """The ref the adapter's open or resume returned, if it is one this session may have."""
    if not isinstance(ref, SessionRef):
        raise HarnessError("provider-failed", "the adapter returned no session ref")
    if ref.harness != descriptor.harness or ref.target != target:
        raise HarnessError("provider-failed", "the adapter returned a foreign session ref")
    if expect is not None and ref != expect:
        raise HarnessError("provider-failed", "the adapter changed the session ref")
    if ref.session_id in controller.live_sessions:
        raise HarnessError("provider-failed", "the adapter reused a live session id")
    return ref


async def _provision(controller: SessionStarter, request: SandboxRequest) -> SandboxHandle:
    # Made before provisioning: a sandbox may bind it writable (adapters keep CLI config
    # and native session ids there).
    if request.state_dir is not None:
        make_state_dir(request.state_dir)
    try:
        sandbox: SandboxHandle = await controller.call("sandbox_provision", request=request)
    except HarnessError:
        raise
    except Exception:
        raise HarnessError("sandbox-failed") from None
    return sandbox


def _no_workspace(path: str) -> str:
    """What is wrong with a workspace that is no directory, naming it (the host's own path;
    a path with control characters is not repeated)."""
    shown = path if len(path) <= 160 and path.isprintable() else None
    if shown is None:
        return "the workspace directory does not exist"
    what = "is not a directory" if os.path.exists(path) else "does not exist"
    return f"the workspace {shown} {what}"
