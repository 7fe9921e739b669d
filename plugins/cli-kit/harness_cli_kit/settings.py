"""Session config every CLI adapter reads the same way: key, endpoint, extra environment."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness_hookspecs import HarnessError, SessionContext


def api_key(context: SessionContext, default_var: str) -> str | None:
    """``api_key`` from the config (then registered as a secret), else the injected credential
    named by ``api_key_env`` (default ``default_var``); never the host environment."""
    value = context.config.get("api_key")
    if isinstance(value, str) and value:
        context.add_secret(value)
        return value
    return context.env.get(str(context.config.get("api_key_env") or default_var))


def base_url(context: SessionContext, env_var: str) -> str | None:
    """``base_url`` from the config, else the injected ``env_var``; must be a string."""
    value = context.config.get("base_url") or context.env.get(env_var)
    if value is not None and not isinstance(value, str):
        raise HarnessError("invalid-request", "base_url must be a string")
    return value or None


def extra_env(config: Mapping[str, Any]) -> dict[str, str]:
    """The config's ``env`` mapping as strings (added to the CLI's environment last)."""
    extra = config.get("env")
    return {str(k): str(v) for k, v in extra.items()} if isinstance(extra, Mapping) else {}


def int_setting(config: Mapping[str, Any], key: str, default: int, high: int) -> int:
    """An integer setting in ``0..high`` or ``invalid-request``."""
    value = config.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= high:
        raise HarnessError("invalid-request", f"{key} must be an integer 0-{high}")
    return value


def require_workspace(context: SessionContext, harness: str) -> str:
    if context.workspace is None:
        raise HarnessError("invalid-request", f"{harness} needs a local workspace")
    return context.workspace
