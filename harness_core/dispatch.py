"""The runtime's own hook implementations: each lifecycle hook is dispatched to the object
registered for it (the session's harness adapter, the spec's sandbox provider, every credential
resolver).

They are ``trylast`` so a plugin can answer first and host ``wrapper=True`` implementations wrap
them; plugin authors never write dispatch code. (This module was ``harness_core.defaults``, its
class ``CoreHooks``.)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Sequence
from typing import Any

from harness_hookspecs import (
    CancelTurnRequest,
    CloseSessionRequest,
    Credential,
    CredentialRequest,
    CredentialResolver,
    ForkSessionRequest,
    HarnessDescriptor,
    HarnessError,
    OpenSessionRequest,
    Payload,
    ResumeSessionRequest,
    RewindSessionRequest,
    RunTurnRequest,
    SandboxHandle,
    SandboxRequest,
    SandboxSpec,
    SessionContext,
    SessionRef,
    SteerTurnRequest,
    hookimpl,
)

from .registry import Registries

DIRECT_SANDBOX = "direct"


class DispatchHooks:
    """Dispatches the lifecycle, sandbox and credential hooks to the registered objects."""

    def __init__(self, registries: Registries) -> None:
        self.registries = registries

    @hookimpl(trylast=True)
    def harness_describe(self, harness: str) -> HarnessDescriptor:
        return self.registries.adapter(harness).describe()

    @hookimpl(trylast=True)
    def harness_open_session(
        self, request: OpenSessionRequest, context: SessionContext
    ) -> Awaitable[SessionRef]:
        return self.registries.adapter(request.harness).open_session(request, context)

    @hookimpl(trylast=True)
    def harness_resume_session(
        self, request: ResumeSessionRequest, context: SessionContext
    ) -> Awaitable[SessionRef]:
        adapter = self.registries.adapter(request.session.harness)
        return adapter.resume_session(request, context)

    @hookimpl(trylast=True)
    def harness_run_turn(
        self, request: RunTurnRequest, context: SessionContext
    ) -> AsyncIterator[Payload]:
        return self.registries.adapter(request.session.harness).run_turn(request, context)

    @hookimpl(trylast=True)
    def harness_cancel_turn(
        self, request: CancelTurnRequest, context: SessionContext
    ) -> Awaitable[None]:
        return self.registries.adapter(request.session.harness).cancel_turn(request, context)

    @hookimpl(trylast=True)
    def harness_close_session(
        self, request: CloseSessionRequest, context: SessionContext
    ) -> Awaitable[None] | None:
        adapter = self.registries.adapter(request.session.harness)
        at_once = getattr(adapter, "close_at_once", None)  # a close that waits for nothing
        if at_once is not None:
            at_once(request)
            return None
        return adapter.close_session(request, context)

    @hookimpl(trylast=True)
    def harness_steer_turn(
        self, request: SteerTurnRequest, context: SessionContext
    ) -> Awaitable[None]:
        adapter = self.registries.adapter(request.session.harness)
        return _optional(adapter, "steer_turn", "steer")(request, context)  # type: ignore[no-any-return]

    @hookimpl(trylast=True)
    def harness_fork_session(
        self, request: ForkSessionRequest, context: SessionContext
    ) -> Awaitable[SessionRef]:
        adapter = self.registries.adapter(request.harness)
        return _optional(adapter, "fork_session", "fork")(request, context)  # type: ignore[no-any-return]

    @hookimpl(trylast=True)
    def harness_rewind_session(
        self, request: RewindSessionRequest, context: SessionContext
    ) -> Awaitable[None]:
        adapter = self.registries.adapter(request.session.harness)
        return _optional(adapter, "rewind_session", "checkpoint")(request, context)  # type: ignore[no-any-return]

    @hookimpl(trylast=True)
    def sandbox_provision(self, request: SandboxRequest) -> Awaitable[SandboxHandle]:
        name = request.spec.provider
        if name is None:
            return _direct(request)
        provider = self.registries.sandbox_providers.get(name)
        if provider is None:
            raise HarnessError("sandbox-failed", f"unknown sandbox provider {name!r}"[:240])
        return provider.provision(request)

    @hookimpl(trylast=True)
    def sandbox_finalize(self, handle: SandboxHandle, outcome: str) -> Awaitable[None] | None:
        provider = self.registries.sandbox_providers.get(handle.provider)
        if provider is None:
            return None  # the direct sandbox: nothing to finalize, nothing to await
        return provider.finalize(handle, outcome)

    @hookimpl(trylast=True)
    def credentials_resolve(self, request: CredentialRequest) -> Awaitable[Sequence[Credential]]:
        return _ask_all(list(self.registries.credential_resolvers.values()), request)


def _optional(adapter: object, method: str, feature: str) -> Any:
    """The adapter's ``method`` for an optional feature; ``unsupported-feature`` without it."""
    found = getattr(adapter, method, None)
    if found is None:
        name = getattr(adapter, "name", "the harness")
        raise HarnessError("unsupported-feature", f"{name} does not support {feature}"[:240])
    return found


def direct_sandbox(spec: SandboxSpec, workspace: str | None) -> SandboxHandle:
    """No sandbox named: processes run directly in the workspace (no network policy)."""
    if spec.network != "open":
        raise HarnessError("policy-refused", "network policies need a sandbox provider")
    return SandboxHandle(provider=DIRECT_SANDBOX, workspace=workspace)


async def _direct(request: SandboxRequest) -> SandboxHandle:
    return direct_sandbox(request.spec, request.workspace)


async def _ask_all(
    resolvers: list[CredentialResolver], request: CredentialRequest
) -> Sequence[Credential]:
    found: list[Credential] = []
    for resolver in resolvers:
        found.extend(await resolver.resolve(request))
    return found
