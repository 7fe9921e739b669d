"""``harness steer ID TEXT``: text into the turn another process (``harness run``) runs.

The steering process writes the text whole (a rename) into the session's inbox under the state
root and sends the running ``harness run`` (its pid from the session's active file, as
``harness cancel`` finds it) ``SIGUSR1``; the run takes each message in order, hands it to
``Controller.steer`` and writes the outcome beside it (``.done``: ``{"ok": true}`` or the fixed
reason), which the steering process waits for and reports.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from harness_hookspecs import HarnessError

from ..digests import sha256_hex

#: How long ``harness steer`` waits for the run to answer (seconds).
ANSWER_WAIT = 15.0


def inbox(state_root: Path, session_id: str) -> Path:
    return state_root / "steer" / sha256_hex(session_id.encode())[:32]


def post(state_root: Path, session_id: str, text: str) -> Path:
    """Leave ``text`` for the run; returns where its answer will be."""
    directory = inbox(state_root, session_id)
    directory.mkdir(parents=True, exist_ok=True)
    name = f"{time.time_ns():020d}-{os.getpid()}"
    partial = directory / f"{name}.tmp"
    partial.write_text(text)
    os.replace(partial, directory / f"{name}.txt")
    return directory / f"{name}.done"


def wait_answer(answer: Path, wait: float = ANSWER_WAIT) -> dict[str, Any] | None:
    """The run's answer to a posted message (``None``: no answer in time)."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            data: dict[str, Any] = json.loads(answer.read_text())
        except (FileNotFoundError, ValueError):
            time.sleep(0.05)
            continue
        answer.unlink(missing_ok=True)
        return data
    return None


async def deliver(controller: Any, session_id: str, state_root: Path) -> None:
    """In the run: hand every waiting message to ``controller.steer``, oldest first."""
    directory = inbox(state_root, session_id)
    try:
        waiting = sorted(p for p in directory.iterdir() if p.suffix == ".txt")
    except FileNotFoundError:
        return
    for message in waiting:
        try:
            text = message.read_text()
        except OSError:
            continue
        message.unlink(missing_ok=True)
        try:
            await controller.steer(session_id, text)
            outcome: dict[str, Any] = {"ok": True}
        except HarnessError as error:
            outcome = {"ok": False, "reason": error.reason, "hint": error.hint}
        done = message.with_suffix(".done")
        partial = message.with_suffix(".part")
        partial.write_text(json.dumps(outcome))
        os.replace(partial, done)
