"""Helpers for tests of steer, fork, checkpoint and rewind: a one-function harness body that
answers with the conversation it sees, and a hash of a workspace tree."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

__all__ = ["seen", "shaped_reply", "tree_hash"]


async def shaped_reply(message: Any, session: Any) -> str:
    """A one-function harness's answer: the conversation it sees (``role=text;...``); the
    prompt "wait" first waits for a steer (``steered: TEXTS // conversation``), "write NAME
    TEXT" writes the file into the workspace first."""
    if message.content == "wait":
        steered = await session.wait_steering()
        return "steered: " + " | ".join(steered) + " // " + seen(session)
    if message.content.startswith("write "):
        _, name, text = message.content.split(" ", 2)
        Path(session.workspace, name).write_text(text)
    return seen(session)


def seen(session: Any) -> str:
    return ";".join(f"{role}={text}" for role, text in session.history)


def tree_hash(root: str | os.PathLike[str]) -> str:
    """Every path below ``root`` with its mode and, for files, its bytes: equal hashes are
    byte-for-byte equal trees."""
    digest = hashlib.sha256()
    for path in sorted(Path(root).rglob("*")):
        relative = path.relative_to(root).as_posix()
        digest.update(f"{relative}\0{os.lstat(path).st_mode:o}\0".encode())
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
    return digest.hexdigest()
