"""What may leave an adapter: bounded names and ids, prompts that cannot become flags."""

from __future__ import annotations

import re
from typing import Any

_SAFE_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")
_SAFE_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,256}$")


def safe_name(value: Any, default: str = "tool") -> str:
    """A tool name as the CLI reported it when it is a short plain token, else ``default``."""
    return value if isinstance(value, str) and _SAFE_NAME.match(value) else default


def is_safe_name(value: Any) -> bool:
    return isinstance(value, str) and _SAFE_NAME.match(value) is not None


def safe_id(value: Any) -> str | None:
    """A call or session id when it is a plain token of at most 256 characters."""
    return value if isinstance(value, str) and _SAFE_ID.match(value) else None


def safe_prompt(prompt: str, leading: tuple[str, ...] = ("-",)) -> str:
    """The prompt as a CLI argument: a leading ``-`` (or another special start) must not become
    a flag, so it gets a space in front."""
    return " " + prompt if prompt.startswith(leading) else prompt


def tool_summary(summaries: dict[str, str], name: str, default: str = "used a tool") -> str:
    """An adapter-authored summary for a tool (never the tool's input or output)."""
    return summaries.get(name, default)
