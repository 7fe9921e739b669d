"""Which credentials a session gets (seed 004 section 6.3): every resolver is asked; a grant
for another agent, or a fallback for another vendor, is not this session's; an agent-level grant
for a purpose replaces the vendor fallback for that purpose; then the highest priority wins."""

from __future__ import annotations

from typing import Any

from harness_hookspecs import Credential, CredentialRequest, HarnessDescriptor


async def resolve_credentials(
    hook: Any, descriptor: HarnessDescriptor, agent: str | None, user: str | None
) -> dict[str, Credential]:
    """The credentials a session gets: every resolver asked, then per variable the best of
    what is this session's (an agent-level grant beats the vendor-wide fallback)."""
    request = CredentialRequest(
        harness=descriptor.harness, vendor=descriptor.vendor, agent=agent, user=user
    )
    found: list[Credential] = []
    for awaitable in hook.credentials_resolve(request=request):
        if awaitable is not None:
            found.extend(await awaitable)
    eligible = [
        credential
        for credential in found
        # a grant for another agent, or a fallback for another vendor, is not this session's
        if (credential.agent is None or credential.agent == agent)
        and (credential.agent is not None or credential.vendor in (None, descriptor.vendor))
    ]
    # Seed 004 section 6.3: an agent-level grant for a purpose replaces the vendor fallback
    # for that purpose (not just for the same variable name).
    granted = {c.purpose for c in eligible if c.agent is not None}
    chosen: dict[str, Credential] = {}
    for credential in eligible:
        if credential.agent is None and credential.purpose in granted:
            continue
        rank = (credential.agent is not None, credential.priority)
        current = chosen.get(credential.env_var)
        if current is None or rank > (current.agent is not None, current.priority):
            chosen[credential.env_var] = credential
    return chosen
