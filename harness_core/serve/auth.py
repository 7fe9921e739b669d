"""The bearer token that guards every state-changing request of ``harness serve``.

Reads (pages, lists, event streams) are open to whoever can reach the socket, which is
127.0.0.1 unless the operator says otherwise. Anything that changes state (open, run, cancel,
approve, close) needs ``Authorization: Bearer <token>``; the token is compared in constant time.
A header, never a cookie: a page from another origin cannot make the browser send it (no CSRF).
"""

from __future__ import annotations

import hmac
import os
import secrets

from harness_hookspecs import HarnessError

TOKEN_BYTES = 32
MIN_TOKEN_LENGTH = 16


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_from_env(variable: str) -> str:
    """The token held in environment variable ``variable``; refuse a missing or short one."""
    value = os.environ.get(variable)
    if not value:
        missing = "is not set" if value is None else "is empty"
        raise HarnessError("invalid-request", f"--token-env: ${variable} {missing}"[:240])
    if len(value) < MIN_TOKEN_LENGTH:
        raise HarnessError(
            "invalid-request", f"--token-env: the token needs {MIN_TOKEN_LENGTH}+ characters"
        )
    return value


def bearer_matches(header: str | None, token: str) -> bool:
    """Whether an ``Authorization`` header carries ``token`` (constant-time comparison)."""
    if not header:
        return False
    scheme, _, presented = header.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(presented.strip().encode(), token.encode())
