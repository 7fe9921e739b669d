"""Credential hooks: which secrets a session's processes carry."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence

from ..markers import hookspec
from ..models import Credential, CredentialRequest


@hookspec
def credentials_resolve(request: CredentialRequest) -> Awaitable[Sequence[Credential]] | None:
    """Resolve the credentials a session may carry.

    Called by the controller once per session open or resume - injection happens then and only
    into that session's process environment. Not ``firstresult``: every implementation answers
    (the default asks every registered resolver); the controller keeps, per environment variable,
    an agent-level grant over a vendor-scoped fallback, then the highest priority. Returns an
    awaitable of a sequence of :class:`Credential`. Every injected value is redacted from events,
    the ledger and exports.
    """
