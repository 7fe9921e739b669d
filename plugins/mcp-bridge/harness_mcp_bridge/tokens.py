"""Per-run bearer tokens: minted with ``secrets``, kept only as SHA-256 digests.

A grant is what a token buys: read-only scope, an audience (the bridge's URL), an expiry (the
turn's deadline) and - for a session-lived agent's token - validity only while one of the
session's runs is active. Revoking a run's grant makes its token worthless at once. A run whose
approvals go through the bridge (Claude Code's permission-prompt tool) has its grant widened
by :data:`APPROVAL_SCOPE`; no other token can see or call the approval tool.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass, field

READ_SCOPE = "tools:read"
#: Lets the CLI ask the host's approval seam (the bridge's permission-prompt tool).
APPROVAL_SCOPE = "permissions:ask"
#: What :meth:`TokenTable.verify` answers for a valid session token while no run is active: the
#: agent may connect and list tools (it does so when its session starts), not call one.
IDLE = ""
#: How long a run's token lives when the turn has no deadline.
DEFAULT_LIFETIME = 3600.0


def digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


@dataclass
class Grant:
    """One token's rights. ``run_id`` is None for a session token (honoured during any run)."""

    run_id: str | None
    audience: str
    expires_at: float  # time.monotonic()
    scopes: frozenset[str] = frozenset({READ_SCOPE})
    revoked: bool = False


@dataclass
class TokenTable:
    """The bridge's tokens by digest, and the run that is active now (at most one per session)."""

    audience: str
    _grants: dict[bytes, Grant] = field(default_factory=dict)
    active_run: str | None = None

    @property
    def grants(self) -> tuple[Grant, ...]:
        """What the table stores for its live tokens (their digests' grants, never a token)."""
        return tuple(self._grants.values())

    def mint(
        self,
        run_id: str | None,
        *,
        expires_at: float | None = None,
        scopes: frozenset[str] = frozenset({READ_SCOPE}),
    ) -> str:
        """A new token for ``run_id`` (None: the session's token); returned once, stored hashed."""
        token = "hmcp_" + secrets.token_urlsafe(32)
        expiry = expires_at if expires_at is not None else time.monotonic() + DEFAULT_LIFETIME
        self._grants[digest(token)] = Grant(run_id, self.audience, expiry, scopes)
        return token

    def revoke_run(self, run_id: str) -> None:
        """Revoke the run's token(s) and end the run (a session token then waits for the next)."""
        for grant in self._grants.values():
            if grant.run_id == run_id:
                grant.revoked = True
        if self.active_run == run_id:
            self.active_run = None

    def grant_scope(self, run_id: str, scope: str) -> None:
        """Widen the run's token(s) by ``scope`` (only while the run is not revoked)."""
        for grant in self._grants.values():
            if grant.run_id == run_id and not grant.revoked:
                grant.scopes = grant.scopes | {scope}

    def revoke_all(self) -> None:
        for grant in self._grants.values():
            grant.revoked = True
        self.active_run = None

    def verify(self, presented: str | None, *, scope: str = READ_SCOPE) -> str | None:
        """The active run the token may act for now, :data:`IDLE` (a session token between
        runs), or None (refused)."""
        checked = self.check(presented)
        if checked is None or scope not in checked[1]:
            return None
        return checked[0]

    def check(self, presented: str | None) -> tuple[str, frozenset[str]] | None:
        """Like :meth:`verify` for the read scope, with the grant's scopes: ``(run, scopes)``."""
        if not presented:
            return None
        wanted = digest(presented)
        grant = None
        # Compare every digest in constant time (a dict lookup by digest would be fine too;
        # the table holds a handful of entries).
        for key, candidate in self._grants.items():
            if hmac.compare_digest(key, wanted):
                grant = candidate
        if grant is None or grant.revoked or grant.audience != self.audience:
            return None
        if time.monotonic() >= grant.expires_at or READ_SCOPE not in grant.scopes:
            return None
        run = self.active_run
        if grant.run_id is None:
            return (run if run is not None else IDLE), grant.scopes
        if run is None or grant.run_id != run:
            return None
        return run, grant.scopes
