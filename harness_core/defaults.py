"""The runtime's own default hook implementations: dispatch to the registered objects.

They are ``trylast`` so a plugin can answer first and host ``wrapper=True`` implementations wrap
them; plugin authors never write dispatch code.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Sequence
from typing import TYPE_CHECKING, Any

from harness_hookspecs import (
    CancelTurnRequest,
    CloseSessionRequest,
    Credential,
    CredentialRequest,
    HarnessDescriptor,
    HarnessError,
    OpenSessionRequest,
    Payload,
    ResumeSessionRequest,
    RunTurnRequest,
    SandboxHandle,
    SandboxRequest,
    SessionContext,
    SessionRef,
    hookimpl,
)

if TYPE_CHECKING:
    from .plugins import Plugins

DIRECT_SANDBOX = "direct"


class CoreHooks:
    def __init__(self, plugins: Plugins) -> None:
        self.plugins = plugins

    @hookimpl(trylast=True)
    def harness_describe(self, harness: str) -> HarnessDescriptor:
        descriptor: HarnessDescriptor = self.plugins.adapter(harness).describe()
        return descriptor

    @hookimpl(trylast=True)
    def harness_open_session(
        self, request: OpenSessionRequest, context: SessionContext
    ) -> Awaitable[SessionRef]:
        result: Awaitable[SessionRef] = self.plugins.adapter(request.harness).open_session(
            request, context
        )
        return result

    @hookimpl(trylast=True)
    def harness_resume_session(
        self, request: ResumeSessionRequest, context: SessionContext
    ) -> Awaitable[SessionRef]:
        result: Awaitable[SessionRef] = self.plugins.adapter(
            request.session.provider
        ).resume_session(request, context)
        return result

    @hookimpl(trylast=True)
    def harness_run_turn(
        self, request: RunTurnRequest, context: SessionContext
    ) -> AsyncIterator[Payload]:
        result: AsyncIterator[Payload] = self.plugins.adapter(request.session.provider).run_turn(
            request, context
        )
        return result

    @hookimpl(trylast=True)
    def harness_cancel_turn(
        self, request: CancelTurnRequest, context: SessionContext
    ) -> Awaitable[None]:
        result: Awaitable[None] = self.plugins.adapter(request.session.provider).cancel_turn(
            request, context
        )
        return result

    @hookimpl(trylast=True)
    def harness_close_session(
        self, request: CloseSessionRequest, context: SessionContext
    ) -> Awaitable[None]:
        result: Awaitable[None] = self.plugins.adapter(request.session.provider).close_session(
            request, context
        )
        return result

    @hookimpl(trylast=True)
    def sandbox_provision(self, request: SandboxRequest) -> Awaitable[SandboxHandle]:
        name = request.spec.provider
        if name is None:
            return _direct(request)
        provider = self.plugins.sandbox_providers.get(name)
        if provider is None:
            raise HarnessError("sandbox-failed", f"unknown sandbox provider {name!r}"[:240])
        result: Awaitable[SandboxHandle] = provider.provision(request)
        return result

    @hookimpl(trylast=True)
    def sandbox_finalize(self, handle: SandboxHandle, outcome: str) -> Awaitable[None]:
        provider = self.plugins.sandbox_providers.get(handle.provider)
        if provider is None:
            return _noop()
        result: Awaitable[None] = provider.finalize(handle, outcome)
        return result

    @hookimpl(trylast=True)
    def credentials_resolve(self, request: CredentialRequest) -> Awaitable[Sequence[Credential]]:
        return _ask_all(list(self.plugins.credential_resolvers.values()), request)


async def _direct(request: SandboxRequest) -> SandboxHandle:
    # No sandbox named: run processes directly in the workspace (network policy not enforced).
    if request.spec.network != "open":
        raise HarnessError("policy-refused", "network policies need a sandbox provider")
    return SandboxHandle(provider=DIRECT_SANDBOX, workspace=request.workspace)


async def _noop() -> None:
    return None


async def _ask_all(resolvers: list[Any], request: CredentialRequest) -> Sequence[Credential]:
    found: list[Credential] = []
    for resolver in resolvers:
        found.extend(await resolver.resolve(request))
    return found
