"""The `{{ cookiecutter.plugin_name }}` adapter: spawn the agent command per turn, map its JSONL.

What the runtime does for you: sessions and their ledger, envelopes and ordering, deadlines,
exactly one terminal event per turn, and killing the turn's process group when the turn ends,
times out or is cancelled (`context.spawn` starts it in its own process group, inside the
session's sandbox, with a minimal environment plus the injected credentials).

What the adapter does: build the command line, map each native line to a contract payload
(`parse_line`), map failures to fixed reasons (raw provider text never crosses), and stop the
process on cancel.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import AsyncIterator, Mapping
from typing import Any

from harness_hookspecs import (
    CancelTurnRequest,
    CloseSessionRequest,
    HarnessDescriptor,
    HarnessError,
    MessageDelta,
    OpenSessionRequest,
    Payload,
    ProcessHandle,
    ResumeSessionRequest,
    RunTurnRequest,
    SessionContext,
    SessionRef,
    ToolCompleted,
    ToolStarted,
    TurnCancelled,
    TurnCompleted,
    TurnFailed,
    Usage,
    UsageReported,
    assert_supported,
)

from . import __version__

NAME = {{ cookiecutter.plugin_name | tojson }}
#: Host variable that overrides the command (a JSON list or a shell-style string).
ENV_COMMAND = "{{ cookiecutter.__env_prefix }}_COMMAND"
#: The bundled stand-in agent, run by path so it needs nothing on the child's PYTHONPATH.
FAKE_AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_agent.py")
#: Native error kinds -> the contract's fixed reasons.
ERROR_REASONS = {
    "auth": "authentication-required",
    "unavailable": "provider-unavailable",
    "rate_limit": "provider-unavailable",
}


def parse_line(line: bytes) -> Payload | None:
    """Map one native output line to a contract payload, or ``None`` for lines to ignore.

    Unknown native types and unknown fields are dropped (forward compatibility); a line that is
    not JSON is a ``provider-failed`` error whose hint we author ourselves.
    """
    if not line.strip():
        return None
    try:
        data = json.loads(line)
    except ValueError:
        raise HarnessError("provider-failed", "the agent wrote a line that is not JSON") from None
    if not isinstance(data, dict):
        raise HarnessError("provider-failed", "the agent wrote a line that is not an object")
    kind = data.get("type")
    try:
        if kind == "text":
            delta = data.get("delta")
            return MessageDelta(text=delta) if isinstance(delta, str) and delta else None
        if kind == "tool":
            call_id, name = str(data.get("id")), str(data.get("name"))
            if data.get("phase") == "start":
                return ToolStarted(call_id=call_id, name=name, summary=f"running {name}")
            return ToolCompleted(call_id=call_id, name=name, ok=bool(data.get("ok", True)))
        if kind == "usage":
            return UsageReported(
                usage=Usage(input_tokens=data.get("input"), output_tokens=data.get("output"))
            )
        if kind == "result":
            text = data.get("text")
            return TurnCompleted(text=text if isinstance(text, str) else None)
        if kind == "error":
            reason = ERROR_REASONS.get(str(data.get("kind")), "provider-failed")
            return TurnFailed(reason=reason)
    except (TypeError, ValueError):
        raise HarnessError("provider-failed", f"the agent wrote an invalid {kind} line") from None
    return None  # init, thinking, anything new: not part of the contract


class _Session:
    def __init__(self, command: list[str], resumed: bool) -> None:
        self.command = command
        self.resumed = resumed
        self.process: ProcessHandle | None = None
        self.cancelled = False


class {{ cookiecutter.__class_prefix }}Adapter:
    """A full harness adapter (see `harness_hookspecs.HarnessAdapter`)."""

    name = NAME

    def __init__(self) -> None:
        self._sessions: dict[str, _Session] = {}

    def describe(self) -> HarnessDescriptor:
        return HarnessDescriptor(
            provider=self.name,
            targets=["local"],
            # Claim only what really works: the conformance kit checks each claim.
            features=["resume", "cancel", "usage"],
            version=__version__,
        )

    def _command(self, config: Mapping[str, Any]) -> list[str]:
        raw: Any = config.get("command") or os.environ.get(ENV_COMMAND)
        if not raw:
            return [sys.executable, FAKE_AGENT]
        if isinstance(raw, str):
            try:
                raw = json.loads(raw) if raw.lstrip().startswith("[") else shlex.split(raw)
            except ValueError:
                raise HarnessError("invalid-request", "command is not valid") from None
        if not isinstance(raw, list | tuple) or not raw or not all(isinstance(a, str) for a in raw):
            raise HarnessError("invalid-request", "command must be a non-empty list of strings")
        return list(raw)

    async def open_session(
        self, request: OpenSessionRequest, context: SessionContext
    ) -> SessionRef:
        assert_supported(self.describe(), request.target)
        self._sessions[context.session_id] = _Session(self._command(context.config), False)
        return SessionRef(provider=self.name, target=request.target, session_id=context.session_id)

    async def resume_session(
        self, request: ResumeSessionRequest, context: SessionContext
    ) -> SessionRef:
        assert_supported(self.describe(), request.session.target, "resume")
        ref = request.session  # preserved verbatim
        self._sessions[ref.session_id] = _Session(self._command(context.config), True)
        return ref

    async def run_turn(
        self, request: RunTurnRequest, context: SessionContext
    ) -> AsyncIterator[Payload]:
        session = self._sessions.get(request.session.session_id)
        if session is None:
            raise HarnessError("session-not-found")
        argv = [
            *session.command,
            "--session-id",
            request.session.session_id,
            "--state-dir",
            context.state_dir,
        ]
        if session.resumed:
            argv.append("--resume")
        if context.model:
            argv += ["--model", context.model]
        argv += ["-p", request.prompt]
        session.resumed = False
        session.cancelled = False
        process = await context.spawn(argv)  # lifetime="turn": killed when the turn ends
        session.process = process
        try:
            async for line in process.lines():
                payload = parse_line(line)
                if payload is None:
                    continue
                yield payload
                if payload.TYPE in ("turn.completed", "turn.failed", "turn.cancelled"):
                    return
            code = await process.wait()
            if session.cancelled:  # we stopped it (cancel_turn): that is a cancel, not a failure
                yield TurnCancelled(by="host")
                return
            yield TurnFailed(
                reason="provider-failed",
                hint=f"the agent exited with status {code} without ending the turn",
            )
        finally:
            # The runtime kills the turn's process group once the turn has ended.
            session.process = None

    async def cancel_turn(self, request: CancelTurnRequest, context: SessionContext) -> None:
        # The runtime also cancels the turn and kills its process group; stopping the agent here
        # is the provider-side cancel (a CLI with a cancel message would get it here instead).
        session = self._sessions.get(request.session.session_id)
        if session is not None and session.process is not None:
            session.cancelled = True
            await session.process.terminate(grace=1.0)

    async def close_session(self, request: CloseSessionRequest, context: SessionContext) -> None:
        session = self._sessions.pop(request.session.session_id, None)
        if session is not None and session.process is not None:
            await session.process.terminate(grace=1.0)
