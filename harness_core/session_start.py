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
from harness_hookspecs import (
    HarnessDescriptor,
    HarnessError,
    HostTool,
    OpenSessionRequest,
    ResumeSessionRequest,
    SandboxHandle,
    SandboxRequest,
    SessionRecord,
    SessionRef,
)
from harness_hookspecs.protocols import LedgerStore

from .approvals import Approvals
from .budgets import SessionLimits
from .clock import now
from .context import RuntimeSessionContext, make_state_dir, state_path
from .credentials import resolve_credentials
from .diagnostics import harness_raised
from .digests import event_id_prefix
from .dispatch import direct_sandbox
from .hook_calls import HookCalls
from .host_tools import merge_tools, start_bridge
from .plugin_manager import Plugins
from .redaction import Redactor, add_known_secrets
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
    host_tools: tuple[HostTool, ...]
    clock: Callable[[], float]
    _call: HookCalls
    _task_group: anyio.abc.TaskGroup | None
    _live: dict[str, LiveSession]

    @property
    def hook(self) -> Any: ...

    async def _finalize_sandbox(self, handle: SandboxHandle, outcome: str) -> None: ...


def create_record(
    ledger: LedgerStore,
    ref: SessionRef,
    request: OpenSessionRequest | ResumeSessionRequest,
    config: Mapping[str, Any] | None = None,
) -> None:
    """Record a new (or a resumed-anew) session as open; ``config``: the request's config as
    the record keeps it (secrets as references, see :mod:`.session_config`)."""
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
        )
    )


async def attach_session(
    controller: SessionStarter,
    descriptor: HarnessDescriptor,
    *,
    session_id: str,
    target: str,
    workspace: str | None,
    model: str | None,
    posture: str,
    spec: Any,
    agent: str | None,
    user: str | None,
    config: Mapping[str, Any],
    call: Callable[[RuntimeSessionContext], Any],
    expect: SessionRef | None = None,
) -> LiveSession:
    """The sandbox, credentials, context and bridge of a session; ``call`` (the adapter's open
    or resume) then gives its ref. On failure everything started is stopped again."""
    if workspace is not None and target == "local" and not os.path.isdir(workspace):
        raise HarnessError("invalid-request", "the workspace directory does not exist")
    # The state dir (CLI config, native session ids) is created before provisioning when a
    # sandbox may bind it writable. The direct sandbox (no provider named, no plugin
    # answering the hook) needs no request: the context creates the dir on first use.
    if spec.provider is None and controller._call.sole("sandbox_provision") is not None:
        sandbox = direct_sandbox(spec, workspace)
    else:
        sandbox = await _provision(
            controller,
            SandboxRequest(
                session_id=session_id,
                harness=descriptor.provider,
                workspace=workspace,
                spec=spec,
                agent=agent,
                user=user,
                posture=posture,
                state_dir=state_path(controller.state_root, descriptor.provider, session_id),
            ),
        )
    redactor = Redactor()
    resolvers = controller.plugins.credential_resolvers
    if resolvers:
        add_known_secrets(redactor, resolvers.values())
    context: RuntimeSessionContext | None = None
    try:
        credentials = (
            await resolve_credentials(controller.hook, descriptor, agent, user)
            if resolvers or not controller._call.sole("credentials_resolve")
            else {}  # nobody to ask
        )
        for credential in credentials.values():
            redactor.add(credential.value)
        context = RuntimeSessionContext(
            session_id=session_id,
            harness=descriptor.provider,
            target=target,
            workspace=workspace,
            model=model,
            posture=posture,
            config=config,
            credential_env={k: c.value for k, c in credentials.items()},
            sandbox=sandbox,
            state_root=controller.state_root,
            redactor=redactor,
            task_group=controller._task_group,
            env_passthrough=controller.env_passthrough,
            approvals=controller.approvals,
            ledger=controller.ledger,
        )
        if controller.plugins.host_tools or controller.host_tools:
            tools = merge_tools(controller.plugins.host_tools.values(), controller.host_tools)
            context.bridge = await start_bridge(tools, config, controller._task_group)
        ref = await call(context)
        if not isinstance(ref, SessionRef):
            raise HarnessError("provider-failed", "the adapter returned no session ref")
        if ref.provider != descriptor.provider or ref.target != target:
            raise HarnessError("provider-failed", "the adapter returned a foreign session ref")
        if expect is not None and ref != expect:
            raise HarnessError("provider-failed", "the adapter changed the session ref")
        if ref.session_id in controller._live:
            raise HarnessError("provider-failed", "the adapter reused a live session id")
    except BaseException as error:
        with anyio.CancelScope(shield=True):
            if context is not None:
                await context.kill_processes("turn", CLEANUP_GRACE)
                await context.kill_processes("session", CLEANUP_GRACE)
                await context.close_bridge()
            await controller._finalize_sandbox(sandbox, "failure")
        if isinstance(error, Exception):
            harness_raised(
                error,
                directory=controller.log_directory,
                session_id=session_id,
                harness=descriptor.provider,
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
        prefix=event_id_prefix(ref.session_id),
        limits=SessionLimits(started=controller.clock()),
    )
    controller._live[ref.session_id] = live
    return live


async def _provision(controller: SessionStarter, request: SandboxRequest) -> SandboxHandle:
    # Made before provisioning: a sandbox may bind it writable (adapters keep CLI config
    # and native session ids there).
    if request.state_dir is not None:
        make_state_dir(request.state_dir)
    try:
        sandbox: SandboxHandle = await controller._call("sandbox_provision", request=request)
    except HarnessError:
        raise
    except Exception:
        raise HarnessError("sandbox-failed") from None
    return sandbox
