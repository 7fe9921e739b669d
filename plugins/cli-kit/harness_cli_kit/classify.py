"""A failure's fixed reason from an HTTP status and the CLI's error text (the text is read
here and never forwarded). Each adapter brings its CLI's patterns; the order is the same for all:
rejected credentials, then an endpoint that is down or overloaded, else ``provider-failed``."""

from __future__ import annotations

import re
from collections.abc import Container
from typing import Any

#: Statuses that say "try later": timeout, rate limit, gateway errors, overloaded.
UNAVAILABLE = frozenset({408, 429, 502, 503, 504, 529})


def auth_hint(cli: str, key_var: str | None) -> str:
    """The hint of an ``authentication-required`` failure: how ``cli`` gets credentials (the
    adapters never read the host's environment themselves; credentials-env injects the key)."""
    if key_var is None:
        return f"{cli} has no valid credentials: grant them (credentials-env, grants.toml)"
    return (
        f"{cli} has no valid credentials: set {key_var} (credentials-env passes it to the "
        "session) or grant it in grants.toml"
    )


def reason_from(
    status: Any,
    text: str,
    *,
    auth: re.Pattern[str] | None = None,
    unreachable: re.Pattern[str] | None = None,
    unavailable: Container[Any] = UNAVAILABLE,
) -> str:
    """``auth`` matching ``text`` (or a 401/403) -> ``authentication-required``; a status in
    ``unavailable``, or no status and ``unreachable`` matching -> ``provider-unavailable``."""
    if status in (401, 403) or (auth is not None and auth.search(text)):
        return "authentication-required"
    if status in unavailable:
        return "provider-unavailable"
    if status is None and unreachable is not None and unreachable.search(text):
        return "provider-unavailable"
    return "provider-failed"
