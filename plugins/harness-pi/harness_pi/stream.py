"""``pi --mode rpc`` lines -> contract payloads (the parsing is pure; only
:meth:`PiStream.respond` does I/O: the approval answers and the end of stdin).

**Pi exits 0 when the model call failed**: the outcome is read from the stream (``stopReason:
"error"`` + ``errorMessage``, classified here and never forwarded), not from the exit code alone.
RPC mode writes no session header: the id comes from the ``get_state`` response. The structured
answer is the ``details`` of the answer tool's successful ``tool_execution_end``.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from harness_cli_kit import (
    JsonLinesStream,
    ModelSteps,
    Thinking,
    count,
    positive_cost,
    safe_name,
    usage_report,
)
from harness_cli_kit.calls import audit_summary
from harness_cli_kit.classify import reason_from
from harness_cli_kit.tools import SHELL_AND_FILES, ToolCalls, call_id_of
from harness_hookspecs import (
    MessageCompleted,
    MessageDelta,
    Payload,
    PermissionDecision,
    PermissionRequest,
    ProcessHandle,
    Status,
    ToolCompleted,
    TurnCompleted,
    TurnFailed,
    Usage,
    UsageReported,
)

from . import rpc

Approver = Callable[[PermissionRequest], Awaitable[PermissionDecision]]
#: Invalid answer-tool calls pi sends back to the model before the turn ends ``invalid-output``
#: (pi itself retries a failed validation without limit).
MAX_ANSWER_ERRORS = 3
DENIED = "the tool call was denied by the permission policy"

TOOL_SUMMARIES = {
    **SHELL_AND_FILES,
    "find": "listed files",
    "ls": "listed a directory",
    rpc.ANSWER_TOOL: "gave the structured answer",
    "mcp": "used an MCP tool (pi-mcp-adapter)",
}
_STATUS = re.compile(r"^\s*(\d{3})\b")
#: "No API key found for <provider>": Pi's refusal of a prompt it has no key for.
_AUTH = re.compile(r"unauthori[sz]ed|invalid api key|authentication|no api key", re.I)
_UNREACHABLE = re.compile(
    r"connection error|ECONNREFUSED|ENOTFOUND|EAI_AGAIN|fetch failed|unable to connect|"
    r"cannot connect|socket hang up|ETIMEDOUT|network",
    re.I,
)


def classify(message: Any) -> str:
    """Map Pi's ``errorMessage`` to a fixed reason (the text itself never leaves the adapter)."""
    text = message if isinstance(message, str) else ""
    match = _STATUS.match(text)
    if match:  # a leading HTTP status decides alone
        return reason_from(int(match.group(1)), text)
    return reason_from(None, text, auth=_AUTH, unreachable=_UNREACHABLE)


class PiStream(JsonLinesStream):
    """Turns ``pi --mode rpc`` lines into payloads; answers pi's approval dialogs through
    ``approver`` (``context.request_permission``) and dismisses any other dialog."""

    cli = "pi"

    def __init__(self, approver: Approver | None = None) -> None:
        super().__init__()
        self.approver = approver
        #: The turn offers the answer tool; ``wrapped``: its arguments are ``{"value": ...}``.
        self.structured = False
        self.wrapped = False
        self.output: Any = None
        self._answer_errors = 0
        self._dialogs: list[Mapping[str, Any]] = []
        self._denied: set[str] = set()
        self._stdin_open = True
        self.ended = False
        self.aborted = False
        self.requests = 0
        self._usage: dict[str, int] = {}
        self._cost = 0.0
        self._tools = ToolCalls(TOOL_SUMMARIES)
        #: written once pi answered the turn's branch command (``fork``/``clone``), if any
        self.after_branch: bytes | None = None
        #: pi made the turn's branch: the session is the new one
        self.branched = False
        #: the session file ``get_state`` named, and the entry ids it held before the turn
        self.session_file: str | None = None
        self.known_entries: frozenset[str] = frozenset()
        #: each assistant message (``message_start`` .. ``message_end``) is one model call
        self.steps = ModelSteps()
        self.thinking = Thinking()

    def event(self, data: dict[str, Any]) -> list[Payload]:
        kind = data.get("type")
        out: list[Payload] = []
        if kind == "response":
            self._response(data)
        elif kind == "extension_ui_request":
            if str(data.get("method")) in rpc.DIALOGS:  # any JSON value may come
                self._dialogs.append(data)
        elif kind == "message_start":
            message = data.get("message")
            if isinstance(message, Mapping) and message.get("role") == "assistant":
                out.extend(self.steps.requested(message.get("model")))
        elif kind == "message_update":
            event = data.get("assistantMessageEvent")
            etype = event.get("type") if isinstance(event, Mapping) else None
            if etype == "text_delta":
                delta = event.get("delta")
                if isinstance(delta, str) and delta:
                    out.append(MessageDelta(text=delta))
            elif etype == "thinking_delta":
                out.extend(self.thinking.delta(event.get("delta")))
            elif etype == "thinking_end":
                out.extend(self.thinking.completed(event.get("content")))
        elif kind == "message_end":
            out.extend(self._message_end(data.get("message")))
        elif kind in ("tool_execution_start", "tool_execution_end"):
            call_id, name = call_id_of(data.get("toolCallId")), safe_name(data.get("toolName"))
            if call_id is not None:
                out += self._tools.start(call_id, name, audit_summary(name, data.get("args")))
                if kind == "tool_execution_end":
                    out += self._finish(call_id, name, data)
        elif kind == "auto_retry_start":
            out.append(Status(message="pi is retrying the model call"))
        elif kind == "agent_end":
            self.ended = True
        return out

    def _response(self, data: Mapping[str, Any]) -> None:
        if data.get("id") == rpc.STATE_ID:
            state = data.get("data")
            sid = state.get("sessionId") if isinstance(state, Mapping) else None
            if isinstance(sid, str) and sid and self.session_id is None:
                self.session_id = sid
            path = state.get("sessionFile") if isinstance(state, Mapping) else None
            self.session_file = path if isinstance(path, str) and path else None
        elif data.get("id") == rpc.BRANCH_ID:
            answer = data.get("data")
            cancelled = not isinstance(answer, Mapping) or answer.get("cancelled") is not False
            if data.get("success") is not True or cancelled:
                self.failure = "branch"
            else:
                self.branched = True
        elif data.get("id") == rpc.PROMPT_ID and data.get("success") is not True:
            # pi refused the prompt (its text is read here, and stays here)
            self.failure = classify(data.get("error"))

    def _finish(self, call_id: str, name: str, data: Mapping[str, Any]) -> list[Payload]:
        if call_id in self._denied and call_id not in self._tools.completed:
            self._tools.completed.add(call_id)
            return [ToolCompleted(call_id=call_id, name=name, ok=False, summary=DENIED)]
        ok = not data.get("isError")
        if self.structured and name == rpc.ANSWER_TOOL:
            result = data.get("result")
            details = result.get("details") if isinstance(result, Mapping) else None
            if ok and isinstance(details, Mapping):
                self.output = details.get("value") if self.wrapped else dict(details)
            elif not ok:
                self._answer_errors += 1
                if self._answer_errors >= MAX_ANSWER_ERRORS:
                    self.failure = "invalid-output"
        return self._tools.finish(call_id, name, ok)

    def finished(self) -> bool:
        return self.ended  # agent_end: the prompt's run is over

    async def respond(self, process: ProcessHandle) -> list[Payload]:
        """Answer each dialog pi waits on; close stdin once the agent ended (pi then exits)."""
        if self.branched and self.after_branch is not None:
            commands, self.after_branch = self.after_branch, None
            await process.send(commands)
        while self._dialogs:
            dialog = self._dialogs.pop(0)
            await process.send(await self._answer(dialog))
        if self.ended and self._stdin_open:
            self._stdin_open = False
            await process.close_stdin()
        return []

    async def _answer(self, dialog: Mapping[str, Any]) -> bytes:
        request = rpc.permission_of(dialog) if rpc.is_permission(dialog) else None
        if request is None or self.approver is None:
            return rpc.dismissed(dialog.get("id"))
        decision = await self.approver(request)
        if not decision.allowed:
            self._denied.add(request.request_id)
        return rpc.decision_answer(dialog.get("id"), decision)

    def _message_end(self, message: Any) -> list[Payload]:
        if not isinstance(message, Mapping) or message.get("role") != "assistant":
            return []
        self.requests += 1
        usage = message.get("usage")
        step: dict[str, int] = {}
        if isinstance(usage, Mapping):
            for key, source in (
                ("input_tokens", "input"),
                ("output_tokens", "output"),
                ("cache_read_tokens", "cacheRead"),
                ("cache_write_tokens", "cacheWrite"),
            ):
                value = count(usage.get(source))
                if value is not None:
                    step[key] = value
                    self._usage[key] = self._usage.get(key, 0) + value
            cost = usage.get("cost")
            total = cost.get("total") if isinstance(cost, Mapping) else None
            self._cost += positive_cost(total) or 0.0
        ended = self.steps.completed(Usage(**step) if step else None, message.get("model"))
        return ended + self._answer_of(message)

    def _answer_of(self, message: Mapping[str, Any]) -> list[Payload]:
        stop = message.get("stopReason")
        if stop == "error":
            self.error = classify(message.get("errorMessage"))
            return []
        if stop == "aborted":
            self.aborted = True
        content = message.get("content")
        texts = (
            [
                block.get("text")
                for block in content
                if isinstance(block, Mapping)
                and block.get("type") == "text"
                and isinstance(block.get("text"), str)
            ]
            if isinstance(content, list)
            else []
        )
        text = "".join(t for t in texts if t)
        if not text:
            return []
        # The previous message's error (if any) was retried away.
        self.error = None
        self.last_text = text
        return [MessageCompleted(text=text)]

    def usage(self) -> UsageReported | None:
        return usage_report(
            dict(self._usage),
            requests=self.requests or None,
            cost_usd=self._cost if self._cost > 0 else None,
        )

    def terminal(self, exit_code: int | None) -> Payload:
        if self.failure == "invalid-output":
            return TurnFailed(reason="invalid-output", hint="pi ran out of answer retries")
        if self.failure == "branch":
            return TurnFailed(reason="provider-failed", hint="pi could not branch the session")
        if self.failure is not None:
            return self.failed(self.failure)
        if self.error is not None:
            return TurnFailed(reason=self.error, hint="pi reported a model error")
        if self.aborted:
            return TurnFailed(reason="provider-failed", hint="pi aborted the turn")
        failure = self.exit_failure(exit_code)
        if failure is None and not self.ended:
            failure = TurnFailed(reason="provider-failed", hint="pi exited before the agent ended")
        return failure or TurnCompleted(text=self.last_text, output=self.output)


parse_stream = PiStream.parse
