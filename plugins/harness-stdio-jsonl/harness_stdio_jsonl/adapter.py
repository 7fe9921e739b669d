"""The stdio-jsonl adapter (contract in this plugin's README)."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio
from harness_cli_kit import COMMAND_PROPERTY, Sessions, command_of, json_object, local_descriptor
from harness_hookspecs import (
    REASONS,
    CancelTurnRequest,
    CloseSessionRequest,
    HarnessDescriptor,
    HarnessError,
    OpenSessionRequest,
    Payload,
    PermissionDecision,
    PermissionRequest,
    ProcessHandle,
    ResumeSessionRequest,
    RunTurnRequest,
    SessionContext,
    SessionRef,
    TurnFailed,
    assert_supported,
    make_payload,
    stderr_diagnostics,
)
from harness_hookspecs.names import normalize_event

PROTOCOL = 1
#: Seconds a program whose output ended has to exit before its turn fails without its code.
EXIT_GRACE = 2.0
ENV_COMMAND = "HARNESS_JSONL_COMMAND"
# Output types the contract maps; anything else is ignored for forward compatibility.
MAPPED = {
    "message.delta",
    "thinking.delta",
    "thinking.completed",
    "model.requested",
    "model.completed",
    "message.completed",
    "tool.started",
    "tool.completed",
    "status",
    "usage",
    "artifact",
    "turn.completed",
    "turn.failed",
    "turn.cancelled",
}
USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "requests",
    "cost_usd",
)


def _stop_when_it_exits(process: Any, context: SessionContext) -> None:
    """Once the program has exited, stop what it left running after :data:`EXIT_GRACE`: a
    child that inherited its stdout would keep the output open, and the turn would wait for
    its deadline (forever without one) instead of ending as the contract says of a program
    that exits without a terminal line. A session task (the runtime's ``start_soon``)."""
    start_soon = getattr(context, "start_soon", None)
    if start_soon is None:
        return

    async def stop() -> None:
        await process.wait()
        await anyio.sleep(EXIT_GRACE)
        await process.terminate(grace=0)  # nothing if the runtime already did

    start_soon(stop)


def parse_line(line: bytes) -> Payload | None:
    """Map one output line to a payload; ``None`` for ignorable lines.

    Raises ``HarnessError("provider-failed")`` for garbage, with no provider text attached.
    """
    try:
        data = json_object(line)
    except ValueError:
        raise HarnessError("provider-failed", "the program wrote a line that is not JSON") from None
    if data is None:
        return None
    if not isinstance(data.get("type"), str):
        raise HarnessError("provider-failed", "the program wrote a line without a type")
    # a program may speak seed 001's names (run.completed, tool.requested...): ours from here
    kind, fields = normalize_event(data["type"], data)
    if kind not in MAPPED:
        return None
    data = fields
    if kind == "usage":
        fields = {"usage": {k: data[k] for k in USAGE_FIELDS if k in data}}
    elif kind == "turn.failed":
        reason = data.get("reason")
        fields = {"reason": reason if reason in REASONS else "provider-failed"}
    elif kind == "message.completed":
        fields = {"text": data.get("text", ""), "role": "assistant"}
    try:
        return make_payload(kind, fields)
    except (TypeError, ValueError):
        raise HarnessError("provider-failed", f"the program wrote an invalid {kind} line") from None


def permission_request_of(line: bytes) -> PermissionRequest | None:
    """A ``permission.request`` line as the approval seam's request; ``None`` for any other
    line. Raises ``provider-failed`` for a request line with invalid fields."""
    try:
        data = json_object(line)
    except ValueError:
        return None  # parse_line reports it
    if data is None or data.get("type") != "permission.request":
        return None
    request_id, tool = data.get("id"), data.get("tool")
    command, path, given = data.get("command"), data.get("path"), data.get("input")
    try:
        if not isinstance(request_id, str) or not isinstance(tool, str):
            raise ValueError("id and tool are strings")
        return PermissionRequest.for_tool(
            tool,
            kind=str(data.get("kind", "other")),
            command=command if isinstance(command, str) else None,
            path=path if isinstance(path, str) else None,
            input=given if isinstance(given, Mapping) else {},
            can_edit=isinstance(given, Mapping),
            request_id=request_id,
        )
    except (TypeError, ValueError):
        raise HarnessError(
            "provider-failed", "the program wrote an invalid permission.request line"
        ) from None


def permission_response(request_id: str, decision: PermissionDecision) -> bytes:
    """The stdin line answering one request: ``behavior``, ``reason``, the edited ``input``."""
    answer: dict[str, Any] = {
        "type": "permission.response",
        "id": request_id,
        "behavior": decision.behavior,
        "reason": decision.reason,
    }
    if decision.updated_input is not None:
        answer["input"] = dict(decision.updated_input)
    return (json.dumps(answer) + "\n").encode()


class StdioJsonlAdapter:
    name = "stdio-jsonl"

    def __init__(self) -> None:
        self._sessions: Sessions[_Session] = Sessions()

    def describe(self) -> HarnessDescriptor:
        features = ["resume", "cancel", "usage", "permissions"]
        details = {"protocol": str(PROTOCOL)}
        config = {
            "command": COMMAND_PROPERTY,
            "mode": {"enum": ["per-turn", "session"]},
            "permissions": {"type": "boolean"},
        }
        return local_descriptor(self.name, "Any JSONL program", features, details, config=config)

    def _command(self, config: Mapping[str, Any]) -> list[str]:
        raw = config.get("command") or os.environ.get(ENV_COMMAND)
        if not raw:
            raise HarnessError("invalid-request", "stdio-jsonl needs a command (config or env)")
        return command_of({"command": raw}, [])

    def _open(self, ref: SessionRef, context: SessionContext, resumed: bool) -> SessionRef:
        mode = context.config.get("mode", "per-turn")
        if mode not in ("per-turn", "session"):
            raise HarnessError("invalid-request", "mode must be per-turn or session")
        self._sessions[ref.session_id] = _Session(
            command=self._command(context.config), mode=str(mode), resumed=resumed
        )
        return ref

    async def open_session(
        self, request: OpenSessionRequest, context: SessionContext
    ) -> SessionRef:
        assert_supported(self.describe(), request.target)
        ref = SessionRef(provider=self.name, target=request.target, session_id=context.session_id)
        return self._open(ref, context, resumed=False)

    async def resume_session(
        self, request: ResumeSessionRequest, context: SessionContext
    ) -> SessionRef:
        assert_supported(self.describe(), request.session.target, "resume")
        return self._open(request.session, context, resumed=True)

    def _env(self, context: SessionContext) -> dict[str, str]:
        env = {
            "HARNESS_SESSION_ID": context.session_id,
            "HARNESS_STATE_DIR": context.state_dir,
        }
        if context.workspace:
            env["HARNESS_WORKSPACE"] = context.workspace
        if context.model:
            env["HARNESS_MODEL"] = context.model
        return env

    async def run_turn(
        self, request: RunTurnRequest, context: SessionContext
    ) -> AsyncIterator[Payload]:
        session = self._sessions.of(request.session)
        line = (
            json.dumps(
                {
                    "type": "turn",
                    "protocol": PROTOCOL,
                    "turn_id": request.turn_id,
                    "session_id": request.session.session_id,
                    "prompt": request.prompt,
                    "resumed": session.resumed,
                }
            )
            + "\n"
        ).encode()
        session.resumed = False
        if session.mode == "per-turn":
            process = await context.spawn(session.command, env=self._env(context), stdin=True)
            _stop_when_it_exits(process, context)
            await process.send(line)
            if context.config.get("permissions") is not True:
                await process.close_stdin()  # the turn line is all it reads
            lines = process.lines()
        else:
            if session.process is None or session.process.returncode is not None:
                session.process = await context.spawn(
                    session.command, env=self._env(context), stdin=True, lifetime="session"
                )
                _stop_when_it_exits(session.process, context)
                session.lines = session.process.lines()
            process = session.process
            await process.send(line)
            assert session.lines is not None
            lines = session.lines
        async for raw in lines:
            asked = permission_request_of(raw)
            if asked is not None:
                decision = await context.request_permission(asked)
                await process.send(permission_response(asked.request_id, decision))
                continue
            payload = parse_line(raw)
            if payload is None:
                continue
            yield payload
            if payload.TYPE in ("turn.completed", "turn.failed", "turn.cancelled"):
                return
        # The output ended: the program is exiting, or closed its stdout and lives on (the
        # runtime stops it after the turn); either way the turn ends now, not at its deadline.
        code: int | None = None
        with anyio.move_on_after(EXIT_GRACE):
            code = await process.wait()
        # The program's last stderr lines go beside the failure (status events), never in it.
        for diagnostic in stderr_diagnostics(process.stderr_tail()):
            yield diagnostic
        if code is None:
            hint = "the program closed its output without ending the turn"
        elif code == 0:
            hint = "the program exited without ending the turn"
        else:
            hint = f"the program exited with status {code} without ending the turn"
        yield TurnFailed(reason="provider-failed", hint=hint)

    async def cancel_turn(self, request: CancelTurnRequest, context: SessionContext) -> None:
        session = self._sessions.get(request.session.session_id)
        if (
            session is not None
            and session.process is not None
            and session.process.returncode is None
        ):
            message = {"type": "cancel", "turn_id": request.turn_id}
            try:
                await session.process.send((json.dumps(message) + "\n").encode())
            except Exception:  # the runtime kills the group anyway
                pass

    async def close_session(self, request: CloseSessionRequest, context: SessionContext) -> None:
        self._sessions.pop(request.session.session_id, None)


class _Session:
    def __init__(self, command: list[str], mode: str, resumed: bool) -> None:
        self.command = command
        self.mode = mode
        self.resumed = resumed
        self.process: ProcessHandle | None = None
        self.lines: AsyncIterator[bytes] | None = None
