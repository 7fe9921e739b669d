"""Claude Code's ``stream-json`` lines -> contract payloads (the parsing is pure; only
:meth:`ClaudeStream.respond` does I/O: the permission answers on stdin).

Failures are classified from the stream, never forwarded: the CLI's error text stays here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from harness_cli_kit import JsonLinesStream, ModelSteps, Thinking, count, safe_id, usage_of
from harness_cli_kit import safe_name as tool_name
from harness_cli_kit.calls import audit_summary, permission_request
from harness_cli_kit.classify import reason_from
from harness_hookspecs import (
    MessageCompleted,
    MessageDelta,
    Payload,
    PermissionDecision,
    PermissionRequest,
    PermissionRequested,
    PermissionResolved,
    ProcessHandle,
    Status,
    ToolCompleted,
    ToolStarted,
    TurnCompleted,
    TurnFailed,
    Usage,
    UsageReported,
)

Approver = Callable[[PermissionRequest], Awaitable[PermissionDecision]]

#: Adapter-authored summaries per Claude Code tool (never the tool's input or output).
TOOL_SUMMARIES = {
    "Bash": "ran a shell command",
    "Write": "wrote a file",
    "Edit": "edited a file",
    "MultiEdit": "edited a file",
    "NotebookEdit": "edited a notebook",
    "Read": "read a file",
    "Glob": "listed files",
    "Grep": "searched files",
    "LS": "listed a directory",
    "WebFetch": "fetched a web page",
    "WebSearch": "searched the web",
    "TodoWrite": "updated the todo list",
    "Task": "ran a sub-agent task",
    "Agent": "ran a sub-agent task",
    "Skill": "used a skill",
    "ToolSearch": "searched the tool list",
    "StructuredOutput": "gave the structured answer",
}
#: Connection failures before any byte (the endpoint is down), as opposed to a dropped stream.
_UNREACHABLE = re.compile(
    r"ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|Connection refused|"
    r"Unable to connect|ETIMEDOUT|timed out|Request timed out",
    re.I,
)
#: "Not logged in · Please run /login" is Claude Code's answer when it has no key at all.
_AUTH = re.compile(r"authenticat|invalid api key|401|not logged in|/login\b", re.I)
#: The ``error`` of Claude Code's own (synthetic) assistant message that means the key is
#: missing or rejected (claude 2.x; the text beside it is the CLI's, never forwarded).
_AUTH_ERRORS = frozenset({"authentication_failed"})
#: Claude retries these; any 5xx means the endpoint is down or overloaded.
_UNAVAILABLE = frozenset({408, 429, 529, *range(500, 600)})


def tool_summary(name: str) -> str:
    if name.startswith("mcp__"):
        return "called an MCP tool"
    return TOOL_SUMMARIES.get(name, "used a tool")


def classify_result(result: Mapping[str, Any]) -> str:
    """Map an ``is_error`` result line to a fixed reason (its text is read here, never sent)."""
    status = result.get("api_error_status")
    text = result.get("result") if isinstance(result.get("result"), str) else ""
    return reason_from(
        status, text or "", auth=_AUTH, unreachable=_UNREACHABLE, unavailable=_UNAVAILABLE
    )


#: The hook events whose callbacks add the host's after_tool context (one id for both).
HOOK_EVENTS = ("PostToolUse", "PostToolUseFailure")
AFTER_TOOL_CALLBACK = "after_tool"


def control_response(request_id: Any, response: Mapping[str, Any]) -> bytes:
    """A ``control_response`` line answering control request ``request_id``."""
    body = {"subtype": "success", "request_id": request_id, "response": dict(response)}
    return json.dumps({"type": "control_response", "response": body}).encode() + b"\n"


def hooks_initialize(wait: float) -> bytes:
    """The ``initialize`` control request registering the after_tool hook callback for every
    tool (as the Agent SDKs register in-process hooks); ``wait``: its timeout, in seconds."""
    matcher = {"hookCallbackIds": [AFTER_TOOL_CALLBACK], "timeout": wait}
    request = {"subtype": "initialize", "hooks": {event: [matcher] for event in HOOK_EVENTS}}
    line = {"type": "control_request", "request_id": "harness-initialize", "request": request}
    return json.dumps(line).encode() + b"\n"


class ClaudeStream(JsonLinesStream):
    """Turns ``claude -p --output-format stream-json --verbose`` lines into payloads (pure)."""

    cli = "claude"
    key_var = "ANTHROPIC_API_KEY"

    def __init__(self, expected: str | None = None, approver: Approver | None = None) -> None:
        super().__init__()
        #: ``context.request_permission`` when the CLI asks the host: on stdout
        #: (``--permission-prompt-tool stdio``), answered on stdin; or, with :attr:`stdio`
        #: off, through the bridge's permission-prompt tool (:meth:`answer_prompt_tool`)
        self.approver = approver
        self.stdio = approver is not None
        self._asks: list[Mapping[str, Any]] = []
        self._stdin_open = True
        #: The session id the turn runs under (``--session-id``/``--resume``).
        self.expected = expected
        self.result: dict[str, Any] | None = None
        self._streamed_blocks: set[tuple[str, int]] = set()
        self._message_id: str | None = None
        self._messages: set[str] = set()
        self._tools: dict[str, str] = {}
        self._completed: set[str] = set()
        self._denied: set[str] = set()
        #: denied calls as the tool results' ``tool_result_meta`` says (summaries only)
        self._rejected: set[str] = set()
        #: The turn was run with ``--json-schema``: the answer is the result's structured_output.
        self.structured = False
        #: The transcript uuid of the turn's last main assistant message (where a later fork
        #: or rewind resumes: ``--resume-session-at``).
        self.last_uuid: str | None = None
        #: each API message of the main conversation is one model step
        self.steps = ModelSteps()
        self._step_usage: dict[str, int | None] = {}
        self.thinking = Thinking()
        #: ``context.after_tool_context`` when the host's after_tool hooks add context: each
        #: tool call's PostToolUse hook callback (registered by :func:`hooks_initialize`) is
        #: answered with it, as ``additionalContext`` for the model's next request
        self.tool_context: Callable[[str], Awaitable[str | None]] | None = None
        self._hook_calls: list[tuple[Any, str | None, str]] = []

    def event(self, data: dict[str, Any]) -> list[Payload]:
        sid = data.get("session_id")
        if isinstance(sid, str) and sid and self.session_id is None:
            self.session_id = sid
        kind = data.get("type")
        main = data.get("parent_tool_use_id") is None
        if kind == "stream_event" and main:
            return self._stream_event(data.get("event"))
        if kind == "assistant":
            if data.get("error") in _AUTH_ERRORS:
                self.failure = "authentication-required"  # will not get better: end now
                return []
            payloads = self._assistant(data.get("message"), main)
            uuid = safe_id(data.get("uuid"))
            if main and uuid is not None and not self._synthetic(data.get("message")):
                self.last_uuid = uuid
            return payloads
        if kind == "user":
            return self._user(data.get("message"), data.get("tool_result_meta"))
        if kind == "system":
            return self._system(data)
        if kind == "result":
            self.result = data
        if kind == "control_request":
            request = data.get("request")
            subtype = request.get("subtype") if isinstance(request, Mapping) else None
            if subtype == "can_use_tool" and self.stdio:
                self._asks.append(data)
            elif subtype == "hook_callback" and self.tool_context is not None:
                assert isinstance(request, Mapping)
                return self._hook_callback(data.get("request_id"), request)
        return []

    @property
    def reads_stdin(self) -> bool:
        """Whether the CLI reads stream-json on stdin (answers, hook outputs, steers)."""
        return self.stdio or self.tool_context is not None

    def _hook_callback(self, request_id: Any, request: Mapping[str, Any]) -> list[Payload]:
        """A PostToolUse (or PostToolUseFailure) hook callback: the tool call is done, so its
        ``tool.completed`` is recorded now (the tool_result line after it adds nothing) and
        the answer waits for the host's hooks (:meth:`respond`)."""
        given = request.get("input")
        hook_input: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
        event_name = hook_input.get("hook_event_name")
        if event_name not in HOOK_EVENTS:
            event_name = HOOK_EVENTS[0]
        call_id = safe_id(request.get("tool_use_id") or hook_input.get("tool_use_id"))
        self._hook_calls.append((request_id, call_id, str(event_name)))
        if call_id is None:
            return []
        self._tools.setdefault(call_id, tool_name(hook_input.get("tool_name")))
        completed = self._complete(call_id, failed=event_name == "PostToolUseFailure")
        return [completed] if completed is not None else []

    def finished(self) -> bool:
        return self.result is not None  # the result line is the last the turn needs

    async def respond(self, process: ProcessHandle) -> list[Payload]:
        """Answer each ``can_use_tool`` control request through the approval seam; close
        stdin once the result is in (the CLI then exits)."""
        while self._asks and self.approver is not None:
            await process.send(await self._answer(self._asks.pop(0)))
        while self._hook_calls and self.tool_context is not None:
            request_id, call_id, event_name = self._hook_calls.pop(0)
            text = await self.tool_context(call_id) if call_id is not None else None
            output: dict[str, Any] = {}
            if text:
                specific = {"hookEventName": event_name, "additionalContext": text}
                output = {"hookSpecificOutput": specific}
            await process.send(control_response(request_id, output))
        if self.result is not None and self.reads_stdin and self._stdin_open:
            self._stdin_open = False
            await process.close_stdin()
        return []

    async def _answer(self, data: Mapping[str, Any]) -> bytes:
        native = data["request"]
        answer = await self.ask(native, fallback_id=safe_id(data.get("request_id")))
        return control_response(data.get("request_id"), answer)

    async def answer_prompt_tool(self, arguments: Mapping[str, Any]) -> str:
        """The bridge's permission-prompt tool (``--permission-prompt-tool mcp__S__T``): Claude
        Code calls it with ``{tool_name, input, tool_use_id}`` and parses the one text block
        it returns as the same answer object the stdio protocol carries."""
        return json.dumps(await self.ask(arguments))

    async def ask(
        self, native: Mapping[str, Any], fallback_id: str | None = None
    ) -> dict[str, Any]:
        """Ask the approval seam about one tool call (``tool_name``, ``input``,
        ``tool_use_id`` as Claude Code names them); Claude Code's answer object."""
        assert self.approver is not None
        name = tool_name(native.get("tool_name"))
        given = native.get("input")
        arguments: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
        call_id = safe_id(native.get("tool_use_id"))
        request = permission_request(
            name, arguments, request_id=call_id or fallback_id, can_edit=True
        )
        decision = await self.approver(request)
        if decision.allowed:
            edited = decision.updated_input
            return {
                "behavior": "allow",
                "updatedInput": dict(edited) if edited is not None else dict(arguments),
            }
        if call_id is not None:
            self._denied.add(call_id)
        return {"behavior": "deny", "message": decision.reason or "denied by the host"}

    def _stream_event(self, event: Any) -> list[Payload]:
        if not isinstance(event, Mapping):
            return []
        etype = event.get("type")
        if etype == "message_start":
            message = event.get("message")
            mid = message.get("id") if isinstance(message, Mapping) else None
            self._message_id = mid if isinstance(mid, str) else None
            if not isinstance(message, Mapping):
                return []
            usage = message.get("usage")
            usage = usage if isinstance(usage, Mapping) else {}
            self._step_usage = {
                "input_tokens": count(usage.get("input_tokens")),
                "cache_read_tokens": count(usage.get("cache_read_input_tokens")),
                "cache_write_tokens": count(usage.get("cache_creation_input_tokens")),
            }
            return self.steps.requested(message.get("model"))
        elif etype == "message_delta":
            usage = event.get("usage")
            if isinstance(usage, Mapping):
                self._step_usage["output_tokens"] = count(usage.get("output_tokens"))
        elif etype == "message_stop":
            fields = self._step_usage
            self._step_usage = {}
            known = any(value is not None for value in fields.values())
            step = Usage(
                input_tokens=fields.get("input_tokens"),
                output_tokens=fields.get("output_tokens"),
                cache_read_tokens=fields.get("cache_read_tokens"),
                cache_write_tokens=fields.get("cache_write_tokens"),
            )
            return self.steps.completed(step if known else None)
        elif etype == "content_block_delta":
            delta = event.get("delta")
            if isinstance(delta, Mapping) and delta.get("type") == "thinking_delta":
                return self.thinking.delta(delta.get("thinking"))
            if isinstance(delta, Mapping) and delta.get("type") == "text_delta":
                text = delta.get("text")
                index = event.get("index")
                if isinstance(text, str) and text:
                    if self._message_id is not None and isinstance(index, int):
                        self._streamed_blocks.add((self._message_id, index))
                    return [MessageDelta(text=text)]
        return []

    @staticmethod
    def _synthetic(message: Any) -> bool:
        return isinstance(message, Mapping) and message.get("model") == "<synthetic>"

    def _assistant(self, message: Any, main: bool) -> list[Payload]:
        if not isinstance(message, Mapping):
            return []
        if self._synthetic(message):
            # The CLI's own error notice (carries raw provider text): classified from `result`.
            return []
        mid = message.get("id")
        if isinstance(mid, str):
            self._messages.add(mid)
        out: list[Payload] = []
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, Mapping):
                continue
            btype = block.get("type")
            if btype == "thinking" and main:
                out.extend(self.thinking.completed(block.get("thinking")))
            elif btype == "text" and main:
                text = block.get("text")
                if isinstance(text, str) and text:
                    self.last_text = text
                    out.append(MessageCompleted(text=text))
            elif btype == "tool_use":
                call_id = safe_id(block.get("id"))
                if call_id is None or call_id in self._tools:
                    continue
                name = tool_name(block.get("name"))
                self._tools[call_id] = name
                summary = audit_summary(name, block.get("input")) or tool_summary(name)
                out.append(ToolStarted(call_id=call_id, name=name, summary=summary))
        return out

    def _user(self, message: Any, meta: Any = None) -> list[Payload]:
        if not isinstance(message, Mapping):
            return []
        self._note_rejections(meta)
        content = message.get("content")
        out: list[Payload] = []
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, Mapping) or block.get("type") != "tool_result":
                continue
            call_id = safe_id(block.get("tool_use_id"))
            completed = None if call_id is None else self._complete(call_id, block.get("is_error"))
            if completed is not None:
                out.append(completed)
        return out

    def _complete(self, call_id: str, failed: Any) -> ToolCompleted | None:
        """The call's ``tool.completed`` (``None``: it was reported already)."""
        if call_id in self._completed:
            return None
        self._completed.add(call_id)
        name = self._tools.get(call_id, "tool")
        if call_id in self._denied or call_id in self._rejected:
            summary = "the tool call was denied by the permission policy"
            ok = False
        elif failed:
            summary, ok = "the tool call failed", False
        else:
            summary, ok = tool_summary(name), True
        return ToolCompleted(call_id=call_id, name=name, ok=ok, summary=summary)

    def _note_rejections(self, meta: Any) -> None:
        """``tool_result_meta``: calls the permission decision rejected (the deny reached the
        CLI however it was asked) are reported as denied, not as failed."""
        for item in meta if isinstance(meta, list) else []:
            if not isinstance(item, Mapping):
                continue
            decision = item.get("permission_decision")
            call_id = safe_id(item.get("id"))
            if call_id and isinstance(decision, Mapping) and decision.get("decision") == "reject":
                self._rejected.add(call_id)

    def _system(self, data: Mapping[str, Any]) -> list[Payload]:
        subtype = data.get("subtype")
        if subtype == "init":
            return [Status(message="claude code session started")]
        if subtype == "permission_denied":
            call_id = safe_id(data.get("tool_use_id"))
            if call_id is None or call_id in self._denied:
                return []
            self._denied.add(call_id)
            name = tool_name(data.get("tool_name") or self._tools.get(call_id))
            return [
                PermissionRequested(
                    request_id=call_id, summary=f"{name} needs permission", tool=name
                ),
                PermissionResolved(request_id=call_id, decision="deny", source="policy"),
            ]
        if subtype == "api_retry":
            status = data.get("error_status")
            if status in (401, 403):
                # The CLI would retry a rejected key; it will not get better. End now.
                self.failure = "authentication-required"
                return []
            return [Status(message="retrying the model request")]
        return []

    def usage(self) -> UsageReported | None:
        result = self.result
        if not isinstance(result, Mapping):
            return None
        cost = result.get("total_cost_usd")
        cost_usd = None
        # a cost the CLI reports is used when it is a non-negative number (NaN != NaN)
        if isinstance(cost, int | float) and not isinstance(cost, bool) and 0 <= cost == cost:
            cost_usd = round(float(cost), 10)
        names = ("input_tokens", "output_tokens", "cache_read_input_tokens")
        return usage_of(
            result.get("usage"),
            (*names, "cache_creation_input_tokens", None),
            requests=len(self._messages) or None,
            cost_usd=cost_usd,
        )

    def terminal(self, exit_code: int | None) -> Payload:
        if self.failure is not None:
            return self.failed(self.failure)
        result = self.result
        if result is None:
            return self.unfinished("ended without a result")
        if self.structured and result.get("subtype") == "error_max_structured_output_retries":
            return TurnFailed(reason="invalid-output", hint="claude ran out of answer retries")
        if result.get("is_error") or result.get("subtype") not in (None, "success"):
            return self.failed(classify_result(result))
        # A text-only answer is `success` without the key: output stays None and the runtime
        # judges the text (and retries).
        output = result.get("structured_output") if self.structured else None
        return self.exit_failure(exit_code) or TurnCompleted(text=self.last_text, output=output)

    def ending(self, exit_code: int | None) -> list[Payload]:
        if self.expected and self.session_id not in (None, self.expected):
            return [
                TurnFailed(reason="provider-failed", hint="claude answered for another session")
            ]
        return super().ending(exit_code)


parse_stream = ClaudeStream.parse
