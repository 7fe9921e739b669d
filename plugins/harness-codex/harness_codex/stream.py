"""One turn on ``codex app-server``: the JSON-RPC conversation and its mapping to payloads.

The adapter writes ``initialize``; then each answer moves the turn on: ``initialized`` and
``thread/start`` (or ``thread/resume`` of the saved thread), then ``turn/start``. The server's
notifications map to payloads (``item/agentMessage/delta`` -> ``message.delta``, items ->
``message.completed`` / ``tool.started`` / ``tool.completed``, ``thread/tokenUsage/updated`` ->
``usage``); its ``item/commandExecution/requestApproval`` and ``item/fileChange/requestApproval``
requests go to the approval seam (allow -> ``accept``, deny -> ``decline``: the model is told and
the turn goes on). ``turn/completed`` ends the turn: stdin is closed and the server exits.

Codex retries an unreachable endpoint for a long time (``httpConnectionFailed`` errors with
``willRetry``), so a bounded number of such notices ends the turn ``provider-unavailable``; a
rejected key ends it at once. Codex's own text is read to classify, never forwarded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from harness_cli_kit import JsonLinesStream, ModelSteps, Thinking, safe_id, usage_of
from harness_cli_kit.calls import permission_request
from harness_cli_kit.classify import reason_from
from harness_cli_kit.structured import drop_optional_nulls, parsed_json
from harness_hookspecs import (
    MessageCompleted,
    MessageDelta,
    Payload,
    PermissionDecision,
    PermissionRequest,
    ProcessHandle,
    Status,
    TurnCompleted,
    TurnFailed,
)

from .items import ItemTracker, script_of

Approver = Callable[[PermissionRequest], Awaitable[PermissionDecision]]

INITIALIZE, THREAD, TURN, REVERT = 1, 2, 3, 4
#: Notifications that stream a reasoning item's text (its summary, or its raw content).
_REASONING_DELTAS = frozenset({"item/reasoning/summaryTextDelta", "item/reasoning/textDelta"})
#: Thread items the model's response is made of (the first opens a model step).
_MODEL_ITEMS = frozenset(
    {
        "reasoning",
        "agentMessage",
        "commandExecution",
        "fileChange",
        "mcpToolCall",
        "dynamicToolCall",
        "webSearch",
    }
)
#: The ids of ``turn/steer`` requests start so (their answers are not the conversation's).
STEER_PREFIX = "steer-"
CLIENT = {"name": "harness_core", "title": None, "version": "1"}
#: Server requests answered through the approval seam, with the contract's tool name.
APPROVALS = {
    "item/commandExecution/requestApproval": "shell",
    "item/fileChange/requestApproval": "apply_patch",
}
#: Older (v1) approval requests: same meaning, other answer words.
LEGACY_APPROVALS = {"execCommandApproval": "shell", "applyPatchApproval": "apply_patch"}

#: "Missing environment variable": the provider's ``env_key`` is empty (no key was injected).
_AUTH = re.compile(
    r"\b(401|403)\b|Unauthorized|Forbidden|invalid api key|authenticat|"
    r"Missing environment variable",
    re.I,
)
_UNAVAILABLE = re.compile(
    r"\b(408|429|5\d\d)\b|Too Many Requests|high demand|exceeded retry limit|overloaded|"
    r"server error|Service Unavailable|Bad Gateway|Gateway Timeout|waiting for network|"
    r"Connection failed|error sending request|connection refused",
    re.I,
)
_AUTH_INFO = {"unauthorized"}
_UNAVAILABLE_INFO = {"serverOverloaded", "internalServerError", "rateLimitExceeded"}
_WAITING_FOR_NETWORK = re.compile(r"waiting for network", re.I)


def classify(message: Any) -> str:
    """Map a Codex error message to a fixed reason (the text is read here, never sent)."""
    text = message if isinstance(message, str) else ""
    return reason_from(None, text, auth=_AUTH, unreachable=_UNAVAILABLE)


def classify_error(error: Any) -> str:
    """A ``TurnError``'s fixed reason: its ``codexErrorInfo`` first, then its message."""
    if not isinstance(error, Mapping):
        return "provider-failed"
    info = error.get("codexErrorInfo")
    if isinstance(info, str) and info in _AUTH_INFO:
        return "authentication-required"
    if isinstance(info, str) and info in _UNAVAILABLE_INFO:
        return "provider-unavailable"
    if isinstance(info, Mapping) and len(info) == 1:
        (detail,) = info.values()
        status = detail.get("httpStatusCode") if isinstance(detail, Mapping) else None
        if status is not None:
            reason = reason_from(status, "")
            if reason != "provider-failed":
                return reason
    return classify(error.get("message"))


def _unreachable(error: Any) -> bool:
    """Codex waits for an endpoint that never answered ("Reconnecting... waiting for
    network")."""
    message = error.get("message") if isinstance(error, Mapping) else None
    return isinstance(message, str) and _WAITING_FOR_NETWORK.search(message) is not None


def rpc(message: Mapping[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n"


def initialize() -> bytes:
    return rpc({"id": INITIALIZE, "method": "initialize", "params": {"clientInfo": CLIENT}})


class CodexStream(JsonLinesStream):
    """One turn's app-server conversation (parsing is pure; :meth:`respond` writes)."""

    cli = "codex"
    key_var = "OPENAI_API_KEY"

    def __init__(
        self,
        *,
        thread: Mapping[str, Any] | None = None,
        resume: str | None = None,
        prompt: str = "",
        approver: Approver | None = None,
        network_waits: int = 1,
    ) -> None:
        super().__init__()
        #: ``thread/start`` (or ``thread/resume``) params: cwd, approval policy, sandbox, model
        self.thread = dict(thread or {})
        self.resume = resume
        self.prompt = prompt
        self.approver = approver
        self.completed = False
        self.hint: str | None = None
        self.items = ItemTracker()
        self.steps = ModelSteps()
        self.thinking = Thinking()
        #: The host's schema when the turn runs with ``outputSchema`` (its answer is JSON).
        self.output_schema: Mapping[str, Any] | None = None
        #: What ``turn/start`` sends as ``outputSchema`` (the strict-compatible schema).
        self.wire_schema: Mapping[str, Any] | None = None
        self._network_waits = network_waits
        self._waits = 0
        self._outbox: list[bytes] = []
        self._asks: list[Mapping[str, Any]] = []
        self._stdin_open = True
        #: the running turn's id (``turn/start``'s answer): what a steer names
        self.turn_id: str | None = None
        #: open the thread as a fork of ``{"thread": id, "last_turn": id}`` (``thread/fork``)
        self.fork: Mapping[str, Any] | None = None
        #: take the thread back before this Codex turn first (``thread/revert``)
        self.revert_before: str | None = None
        #: the revert was answered (the thread no longer holds those turns)
        self.reverted = False
        self._steers = 0

    def steer_line(self, text: str) -> bytes | None:
        """The ``turn/steer`` request adding ``text`` to the running turn (``None`` before
        the turn has an id): the app-server hands it to the model before its next request."""
        if self.turn_id is None or self.session_id is None:
            return None
        self._steers += 1
        params = {
            "threadId": self.session_id,
            "expectedTurnId": self.turn_id,
            "input": [{"type": "text", "text": text, "text_elements": []}],
        }
        return rpc(
            {"id": f"{STEER_PREFIX}{self._steers}", "method": "turn/steer", "params": params}
        )

    # -- the conversation ---------------------------------------------------------------------

    def event(self, data: dict[str, Any]) -> list[Payload]:
        method = data.get("method")
        if "id" in data and method is None:
            return self._response(data)
        if isinstance(method, str) and "id" in data:
            self._asks.append(data)  # a server request: answered in respond()
            return []
        params = data.get("params")
        if isinstance(method, str) and isinstance(params, Mapping):
            return self._notification(method, params)
        return []

    def _response(self, data: Mapping[str, Any]) -> list[Payload]:
        rid, result = data.get("id"), data.get("result")
        if isinstance(rid, str) and rid.startswith(STEER_PREFIX):
            return []  # a steer's answer (a refusal: the turn had ended) changes nothing
        if "error" in data or not isinstance(result, Mapping):
            what = "refused a request"
            if rid == THREAD:
                what = "could not resume the thread" if self.resume else "refused the thread"
            elif rid == REVERT:
                what = "could not revert the thread"
            self._fail("provider-failed", f"codex {what}")
            return []
        if rid == INITIALIZE:
            self._outbox.append(rpc({"method": "initialized"}))
            method = "thread/resume" if self.resume else "thread/start"
            params = {**self.thread, **({"threadId": self.resume} if self.resume else {})}
            if self.fork is not None and not self.resume:
                method = "thread/fork"
                params = {**self.thread, "threadId": self.fork["thread"]}
                if self.fork.get("last_turn"):
                    params["lastTurnId"] = self.fork["last_turn"]
            self._outbox.append(rpc({"id": THREAD, "method": method, "params": params}))
        elif rid == THREAD:
            thread = result.get("thread")
            tid = safe_id(thread.get("id")) if isinstance(thread, Mapping) else None
            if tid is None:
                self._fail("provider-failed", "codex started no thread")
                return []
            self.session_id = tid
            if self.revert_before is not None and self.resume:
                params = {"threadId": tid, "beforeTurnId": self.revert_before}
                self._outbox.append(
                    rpc({"id": REVERT, "method": "thread/revert", "params": params})
                )
            else:
                self._outbox.append(
                    rpc({"id": TURN, "method": "turn/start", "params": self._turn()})
                )
            return [
                Status(message="codex thread resumed" if self.resume else "codex thread started")
            ]
        elif rid == REVERT:
            self.reverted = True
            self._outbox.append(rpc({"id": TURN, "method": "turn/start", "params": self._turn()}))
        elif rid == TURN:
            turn = result.get("turn")
            self.turn_id = safe_id(turn.get("id")) if isinstance(turn, Mapping) else None
        return []

    def _turn(self) -> dict[str, Any]:
        text = {"type": "text", "text": self.prompt, "text_elements": []}
        params: dict[str, Any] = {"threadId": self.session_id, "input": [text]}
        if self.wire_schema is not None:
            params["outputSchema"] = dict(self.wire_schema)
        return params

    def _fail(self, reason: str, hint: str | None = None) -> None:
        if self.failure is None:
            self.failure, self.hint = reason, hint

    def _notification(self, method: str, params: Mapping[str, Any]) -> list[Payload]:
        if method == "item/agentMessage/delta":
            delta = params.get("delta")
            text = [MessageDelta(text=delta)] if isinstance(delta, str) and delta else []
            return self._opening() + text
        if method in _REASONING_DELTAS:
            return self._opening() + self.thinking.delta(params.get("delta"))
        if method in ("item/started", "item/completed"):
            item = params.get("item")
            # a step opens with the turn, then with the first item of each later response
            opening = [] if self.steps.open or method != "item/started" else self._step(item)
            return opening + self._item(item, method == "item/completed")
        if method == "turn/started":
            return self.steps.requested(self.thread.get("model"))
        if method == "thread/tokenUsage/updated":
            usage = params.get("tokenUsage")
            last = usage.get("last") if isinstance(usage, Mapping) else None
            # one model request's tokens; Codex reports no cost (unknown, not zero)
            names = ("inputTokens", "outputTokens", "cachedInputTokens", "cacheWriteInputTokens")
            report = usage_of(last, (*names, "reasoningOutputTokens"), requests=1)
            # the model request the tokens are of has ended: its step completes with them
            step = self.steps.completed(report.usage if report is not None else None)
            return [report, *step] if report is not None else step
        if method == "error":
            return self._error(params)
        if method == "turn/completed":
            self._turn_completed(params.get("turn"))
        return []

    def _step(self, item: Any) -> list[Payload]:
        """The next model step, opened by the first item the model's response starts."""
        if isinstance(item, Mapping) and item.get("type") in _MODEL_ITEMS:
            return self.steps.requested(self.thread.get("model"))
        return []

    def _opening(self) -> list[Payload]:
        """A step for streamed output that came before any item of it started."""
        return [] if self.steps.open else self.steps.requested(self.thread.get("model"))

    def _item(self, item: Any, completed: bool) -> list[Payload]:
        if not isinstance(item, Mapping):
            return []
        if item.get("type") == "reasoning":
            return self._reasoning(item) if completed else []
        if item.get("type") == "agentMessage":
            text = item.get("text")
            if completed and isinstance(text, str) and text:
                self.last_text = text
                return [MessageCompleted(text=text)]
            return []
        return self.items.payloads(item, completed)

    def _reasoning(self, item: Mapping[str, Any]) -> list[Payload]:
        """A completed reasoning item: its summary (or, without one, its raw content) is the
        block's text; deltas already streamed are its pieces."""
        parts = item.get("summary") or item.get("content")
        texts = [p for p in parts if isinstance(p, str) and p] if isinstance(parts, list) else []
        whole = "\n\n".join(texts) if texts else None
        if whole and not self.thinking.streaming:
            # the summary came whole, without deltas: it is the block's one piece
            return [*self.thinking.delta(whole), *self.thinking.completed()]
        return self.thinking.completed(whole)

    def _error(self, params: Mapping[str, Any]) -> list[Payload]:
        error = params.get("error")
        reason = classify_error(error)
        if reason == "authentication-required":
            self._fail(reason)  # a rejected key will not get better: end now
            return []
        if not params.get("willRetry"):
            self._fail(reason)
            return []
        if _unreachable(error):
            # Codex retries an unreachable endpoint for minutes; give up after a bounded number.
            self._waits += 1
            if self._waits >= self._network_waits:
                self._fail("provider-unavailable")
                return []
            return [Status(message="waiting for the model endpoint")]
        return [Status(message="retrying the model request")]

    def _turn_completed(self, turn: Any) -> None:
        status = turn.get("status") if isinstance(turn, Mapping) else None
        if status == "completed":
            self.completed = True
        elif status == "interrupted":
            self._fail("provider-failed", "codex interrupted the turn")
        else:
            self._fail(classify_error(turn.get("error") if isinstance(turn, Mapping) else None))

    def finished(self) -> bool:
        return self.completed  # turn/completed: nothing after it belongs to the turn

    # -- answers ------------------------------------------------------------------------------

    async def respond(self, process: ProcessHandle) -> list[Payload]:
        """Send what the conversation needs next, answer the server's requests (approvals
        through the seam), and close stdin once the turn is over (the server then exits)."""
        while self._outbox:
            await process.send(self._outbox.pop(0))
        while self._asks:
            await process.send(await self._answer(self._asks.pop(0)))
        if self.completed and self._stdin_open:
            self._stdin_open = False
            await process.close_stdin()
        return []

    async def _answer(self, data: Mapping[str, Any]) -> bytes:
        method, rid = data.get("method"), data.get("id")
        params = data.get("params") if isinstance(data.get("params"), Mapping) else {}
        assert isinstance(params, Mapping)
        tool = APPROVALS.get(str(method)) or LEGACY_APPROVALS.get(str(method))
        if tool is None:
            # user input, MCP elicitations, extra permissions: nothing the host was offered
            error = {"code": -32601, "message": "not supported by this client"}
            return rpc({"id": rid, "error": error})
        allowed = await self._decide(tool, params)
        if method in LEGACY_APPROVALS:
            return rpc({"id": rid, "result": {"decision": "approved" if allowed else "denied"}})
        return rpc({"id": rid, "result": {"decision": "accept" if allowed else "decline"}})

    async def _decide(self, tool: str, params: Mapping[str, Any]) -> bool:
        item_id = safe_id(params.get("itemId") or params.get("callId"))
        known = self.items.inputs.get(item_id or "", {})
        if tool == "shell":
            arguments = {"command": script_of(params.get("command")) or known.get("command")}
        else:
            arguments = {"path": known.get("path") or params.get("grantRoot")}
        if self.approver is None:
            return False  # nobody to ask: never run unchecked
        request_id = safe_id(params.get("approvalId")) or item_id
        request = permission_request(tool, arguments, request_id=request_id)
        decision = await self.approver(request)
        if not decision.allowed and item_id is not None:
            self.items.denied.add(item_id)
        return decision.allowed

    # -- the end ------------------------------------------------------------------------------

    def terminal(self, exit_code: int | None) -> Payload:
        if self.failure is not None:
            if self.hint is not None:
                return TurnFailed(reason=self.failure, hint=self.hint)
            return self.failed(self.failure)
        if not self.completed:
            return self.unfinished("ended without finishing the turn")
        output = None
        if self.output_schema is not None:
            # The answer is the last agent message as JSON; unparsable stays None for the
            # runtime to judge (and retry).
            found, value = parsed_json(self.last_text)
            output = drop_optional_nulls(value, self.output_schema) if found else None
        return self.exit_failure(exit_code) or TurnCompleted(text=self.last_text, output=output)


parse_stream = CodexStream.parse
