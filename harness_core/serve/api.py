"""The JSON API under ``/api/``: harnesses, sessions, turns (as server-sent events), events
with live follow, cancel, approve, close, export; steer, fork, checkpoints and rewind, and a turn's
diff (its files and full patch, token required).

Errors are ``{"error": {"reason", "message", "hint"}}`` with the contract's fixed reasons and an
HTTP status per reason; nothing raw (provider text, tracebacks) reaches a response.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.to_thread
from harness_hookspecs import HarnessError, PermissionDecision
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..export import session_state
from ..number_checks import positive_number
from ..serialize import descriptor_to_dict, event_to_dict, record_to_dict
from ..turn_diff import turn_diff as read_turn_diff
from .auth import bearer_matches
from .runner import Server
from .sse import HEADERS, follow

STATUS = {
    "invalid-request": 400,
    "unsupported-target": 422,
    "unsupported-feature": 501,
    "authentication-required": 401,
    "session-not-found": 404,
    "turn-not-found": 404,
    "session-closed": 409,
    "turn-active": 409,
    "policy-refused": 403,
    "permission-denied": 403,
    "provider-unavailable": 503,
}
OPEN_FIELDS = ("harness", "target", "workspace", "model", "posture", "agent", "user", "config")
FORK_FIELDS = ("at", "workspace")
MAX_LIMIT = 10_000
#: How deep a request body may nest arrays and objects (a session's config is the deepest part)
MAX_DEPTH = 32

Handler = Callable[[Request], Awaitable[Response]]


def error_body(error: HarnessError) -> dict[str, Any]:
    """``error`` in the API's shape: ``{"error": {"reason", "message", "hint"}}``."""
    return {"error": {"reason": error.reason, "message": error.message, "hint": error.hint}}


def error_response(error: HarnessError, status: int | None = None) -> JSONResponse:
    body = error_body(error)
    headers = {"WWW-Authenticate": "Bearer"} if error.reason == "authentication-required" else None
    code = status or STATUS.get(error.reason, 500)
    return JSONResponse(body, status_code=code, headers=headers)


class RequestTimeout(HarnessError):
    """A request body not received within the server's ``read_timeout``: ``invalid-request``,
    answered 408 and the connection closed."""

    def __init__(self, seconds: float) -> None:
        super().__init__(
            "invalid-request", f"the request was not received within {seconds:g} seconds"
        )


class BodyTooLarge(HarnessError):
    """A request body past the server's ``max_body``: ``invalid-request``, answered 413."""

    def __init__(self, limit: int) -> None:
        super().__init__("invalid-request", f"the body is larger than {limit} bytes")


def server_of(request: Request) -> Server:
    server: Server = request.app.state.server
    return server


def token_problem(header: str | None) -> str:
    """Why a change was refused: no token at all, or one that is not this server's."""
    if not header or not header.lower().startswith("bearer "):
        return (
            "the bearer token is missing: send Authorization: Bearer <the token harness "
            "serve printed at start>"
        )
    return "the bearer token is invalid: it is not the token this harness serve printed at start"


def guarded(handler: Handler, *, changes_state: bool) -> Handler:
    """Map HarnessError to a JSON error; demand the bearer token for a state change."""

    async def endpoint(request: Request) -> Response:
        try:
            header = request.headers.get("authorization")
            if changes_state and not bearer_matches(header, server_of(request).token):
                raise HarnessError("authentication-required", token_problem(header))
            return await handler(request)
        except BodyTooLarge as error:
            return error_response(error, 413)
        except RequestTimeout as error:
            answer = error_response(error, 408)
            answer.headers["connection"] = "close"  # the rest of the body is not awaited
            return answer
        except HarnessError as error:
            return error_response(error)

    return endpoint


async def read_body(request: Request, limit: int, seconds: float | None = None) -> bytes:
    """The request body, read only up to ``limit`` bytes (``BodyTooLarge`` past it): a huge
    body is refused as it arrives, never buffered whole; one not all received within
    ``seconds`` is ``RequestTimeout`` (a client trickling it holds no connection for long)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(limit)
    chunks, size = [], 0
    with anyio.move_on_after(math.inf if seconds is None else seconds) as scope:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise BodyTooLarge(limit)
            chunks.append(chunk)
    if scope.cancelled_caught:
        raise RequestTimeout(seconds or 0)
    return b"".join(chunks)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("a number past any float")
    return value


def _too_deep(value: Any, limit: int) -> bool:
    """Whether ``value`` nests arrays/objects more than ``limit`` deep (no recursion)."""
    level: list[tuple[Any, int]] = [(value, 1)]
    while level:
        item, depth = level.pop()
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        )
        for child in children:
            if isinstance(child, dict | list):
                if depth + 1 > limit:
                    return True
                level.append((child, depth + 1))
    return False


async def json_body(request: Request) -> dict[str, Any]:
    """The body as one JSON object: strict JSON (no NaN/Infinity, no number past a float),
    at most ``max_body`` bytes and ``MAX_DEPTH`` levels; anything else is ``invalid-request``."""
    server = server_of(request)
    raw = await read_body(request, server.max_body, server.read_timeout)
    if not raw:
        return {}
    try:
        body = json.loads(raw, parse_constant=_refuse_constant, parse_float=_finite_float)
    except RecursionError:
        raise HarnessError("invalid-request", f"the body nests deeper than {MAX_DEPTH}") from None
    except ValueError:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise HarnessError("invalid-request", "the body is not JSON") from None
    if not isinstance(body, dict):
        raise HarnessError("invalid-request", "the body must be a JSON object")
    if _too_deep(body, MAX_DEPTH):
        raise HarnessError("invalid-request", f"the body nests deeper than {MAX_DEPTH}")
    return body


def text_field(body: dict[str, Any], name: str, *, required: bool = False) -> str | None:
    """``body[name]`` as non-empty text, ``None`` when absent and optional."""
    value = body.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise HarnessError("invalid-request", f"{name} must be non-empty text")
    return value


def number_field(body: dict[str, Any], name: str, *, seconds: bool = False) -> float | None:
    """``body[name]`` checked by the CLI's own validator (``None`` when absent)."""
    value = body.get(name)
    if value is None:
        return None
    try:
        if isinstance(value, str):  # JSON has numbers: text is the CLI's form only
            raise ValueError("must be a JSON number")
        return positive_number(value, seconds=seconds)
    except ValueError as error:
        raise HarnessError("invalid-request", f"{name} {error}") from None


def refuse_unknown(body: dict[str, Any], known: tuple[str, ...]) -> None:
    """A field the route does not take is ``invalid-request`` naming it (a misspelt optional
    field would otherwise be dropped without a word)."""
    unknown = sorted(set(body) - set(known))
    if unknown:
        raise HarnessError("invalid-request", f"unknown field {unknown[0]!r}"[:240])


def workspace_field(body: dict[str, Any]) -> str | None:
    """``body["workspace"]`` as an absolute path (``None`` when absent); the controller then
    says which one does not exist or is not a directory."""
    workspace = text_field(body, "workspace")
    return None if workspace is None else os.path.abspath(workspace)


def int_param(request: Request, name: str, default: int | None, maximum: int) -> int | None:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not raw.isdigit() or int(raw) > maximum:
        raise HarnessError("invalid-request", f"{name} must be an integer from 0 to {maximum}")
    return int(raw)


def sse_response(frames: Any) -> StreamingResponse:
    return StreamingResponse(frames, media_type="text/event-stream", headers=HEADERS)


# -- reads --------------------------------------------------------------------------------------


async def list_harnesses(request: Request) -> Response:
    return JSONResponse({"harnesses": server_of(request).controller.plugins.harness_names()})


async def describe_harness(request: Request) -> Response:
    descriptor = server_of(request).controller.describe(request.path_params["name"])
    return JSONResponse(descriptor_to_dict(descriptor))


async def session_view(server: Server, session_id: str) -> dict[str, Any]:
    record = await server.record(session_id)
    summary = await server.summary(session_id)
    running = server.running_turn(session_id)
    last_turn = summary.last_turn
    # Not running here: running only while a live owner holds the session (its lease); one
    # whose owner died (a killed `harness run`, this server before a restart) is over.
    if (
        last_turn == "running"
        and running is None
        and not await server.read(server.ledger.claimed, session_id)
    ):
        last_turn = "interrupted"
    return {
        **record_to_dict(record),
        "turns": summary.turns,
        "input_tokens": summary.input_tokens,
        "output_tokens": summary.output_tokens,
        "cost_usd": summary.cost_usd,
        "last_turn": last_turn,
        # running / interrupted / idle / closed (see harness_core.export.session_state)
        "state": session_state(
            record.status, last_turn if last_turn in ("running", "interrupted") else None
        ),
        "last_sequence": summary.last_sequence,
        "updated_at": summary.updated_at or record.updated_at,
        "running_turn": running.turn_id if running is not None else None,
    }


#: Parameters that make ``GET /api/sessions`` a search (the viewer's sessions page's query).
SEARCH_PARAMS = ("q", "harness", "state", "since", "page", "per_page")


async def search_sessions(request: Request) -> Response:
    """One page of the sessions matching ``q``/``harness``/``state``/``since``, newest first."""
    from .catalog import Query, catalog_of

    server = server_of(request)
    query = Query.from_params(request.query_params)
    found = await server.read(catalog_of(request.app.state).page, server.ledger, query)
    views = [await session_view(server, entry.record.session_id) for entry in found.entries]
    return JSONResponse(
        {
            "sessions": views,
            "total": found.total,
            "page": query.page,
            "pages": found.pages,
            "state_counts": found.state_counts,
            "harness_counts": found.harness_counts,
        }
    )


async def list_sessions(request: Request) -> Response:
    if any(name in request.query_params for name in SEARCH_PARAMS):
        return await search_sessions(request)
    server = server_of(request)
    limit = int_param(request, "limit", 100, MAX_LIMIT)
    records = await server.read(server.ledger.list_sessions, limit=limit)
    views = [await session_view(server, record.ref.session_id) for record in records]
    return JSONResponse({"sessions": views})


async def get_session(request: Request) -> Response:
    return JSONResponse(await session_view(server_of(request), request.path_params["id"]))


async def session_events(request: Request) -> Response:
    server = server_of(request)
    session_id = request.path_params["id"]
    await server.record(session_id)
    after = int_param(request, "after", 0, 2**62) or 0
    last_id = request.headers.get("last-event-id", "")
    if last_id.isdigit():
        after = max(after, int(last_id))  # an EventSource reconnecting
    wants_stream = request.query_params.get("follow") in ("1", "true") or (
        "text/event-stream" in request.headers.get("accept", "")
    )
    if wants_stream:
        return sse_response(follow(server, session_id, after))
    limit = int_param(request, "limit", None, MAX_LIMIT)
    events = await server.events(session_id, after=after, limit=limit)
    turn_id = request.query_params.get("turn")
    if turn_id:  # one turn's events (the viewer's raw view)
        events = [event for event in events if event.turn_id == turn_id]
    return JSONResponse({"events": [event_to_dict(event) for event in events]})


async def export(request: Request) -> Response:
    server = server_of(request)
    bundle = await server.read(server.controller.export, request.path_params["id"])
    return JSONResponse(bundle)


# -- changes ------------------------------------------------------------------------------------


async def open_session(request: Request) -> Response:
    body = await json_body(request)
    refuse_unknown(body, OPEN_FIELDS)
    fields: dict[str, Any] = {}
    for name in OPEN_FIELDS:
        if name not in ("config", "workspace") and name in body:
            fields[name] = text_field(body, name, required=name == "harness")
    if not isinstance(body.get("harness"), str):
        raise HarnessError("invalid-request", "harness (a name) is required")
    config = body.get("config")
    if config is not None:
        if not isinstance(config, dict):
            raise HarnessError("invalid-request", "config must be a JSON object")
        fields["config"] = config
    fields["workspace"] = workspace_field(body) or os.getcwd()
    server = server_of(request)
    ref = await server.controller.open_session(**fields)
    return JSONResponse(await session_view(server, ref.session_id), status_code=201)


async def run_turn(request: Request) -> Response:
    body = await json_body(request)
    prompt = body.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise HarnessError("invalid-request", "prompt (non-empty text) is required")
    timeout = number_field(body, "timeout", seconds=True)
    stream = body.get("stream", True)
    if not isinstance(stream, bool):
        raise HarnessError("invalid-request", "stream must be true or false")
    server = server_of(request)
    session_id = request.path_params["id"]
    turn = await server.start_turn(session_id, prompt, timeout)
    if stream is False:
        return JSONResponse({"turn_id": turn.turn_id}, status_code=202)
    started = turn.events[0].sequence
    return sse_response(follow(server, session_id, started - 1, turn_id=turn.turn_id))


async def cancel(request: Request) -> Response:
    body = await json_body(request)
    turn_id = body.get("turn_id")
    if turn_id is not None and not isinstance(turn_id, str):
        raise HarnessError("invalid-request", "turn_id must be a string")
    await server_of(request).cancel(request.path_params["id"], turn_id)
    return JSONResponse({"cancelled": True}, status_code=202)


async def approve(request: Request) -> Response:
    """Answer a permission request the session's running turn waits on (``allow``/``deny``,
    optional ``reason`` shown to the harness on a deny)."""
    body = await json_body(request)
    request_id, decision = body.get("request_id"), body.get("decision")
    if not isinstance(request_id, str) or not isinstance(decision, str):
        raise HarnessError("invalid-request", "request_id and decision (allow|deny) are required")
    if decision not in ("allow", "deny"):
        raise HarnessError("invalid-request", "request_id and decision (allow|deny) are required")
    reason = body.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise HarnessError("invalid-request", "reason must be a string")
    server = server_of(request)
    session_id = request.path_params["id"]
    await server.record(session_id)
    if server.approvals is None:
        raise HarnessError("unsupported-feature", "this server's host answers approvals itself")
    answer = (
        PermissionDecision.allow()
        if decision == "allow"
        else PermissionDecision.deny(reason or "denied in the viewer")
    )
    if not server.approvals.answer(session_id, request_id, answer):
        raise HarnessError("invalid-request", "no such pending permission request")
    server.hub.notify(session_id)
    return JSONResponse({"answered": True, "decision": decision})


async def close(request: Request) -> Response:
    await server_of(request).close(request.path_params["id"])
    return JSONResponse({"closed": True})


async def steer(request: Request) -> Response:
    """Add ``text`` to the session's running turn (``turn.steered``)."""
    body = await json_body(request)
    text = body.get("text")
    if not isinstance(text, str) or not text.strip():
        raise HarnessError("invalid-request", "text (non-empty) is required")
    server = server_of(request)
    session_id = request.path_params["id"]
    await server.record(session_id)
    if server.running_turn(session_id) is None:
        raise HarnessError("turn-not-found", "no turn of this session runs in this server")
    await server.controller.steer(session_id, text)
    server.hub.notify(session_id)
    return JSONResponse({"steered": True}, status_code=202)


async def fork(request: Request) -> Response:
    """A child session continuing this one up to event ``at`` (default: its last), in
    ``workspace`` (default: the parent's; an imported session's child needs its own)."""
    body = await json_body(request)
    refuse_unknown(body, FORK_FIELDS)
    at = body.get("at")
    if at is not None and not isinstance(at, str):
        raise HarnessError("invalid-request", "at (an event id) must be a string")
    workspace = workspace_field(body)
    fields = {} if workspace is None else {"workspace": workspace}
    server = server_of(request)
    session_id = request.path_params["id"]
    await server.record(session_id)
    child = await server.controller.fork(session_id, at=at, **fields)
    server.hub.notify(session_id)
    return JSONResponse(await session_view(server, child.session_id), status_code=201)


async def checkpoints(request: Request) -> Response:
    """The session's workspace checkpoints (its ``checkpoint.created`` events)."""
    server = server_of(request)
    session_id = request.path_params["id"]
    await server.record(session_id)
    events = await server.events(session_id, after=0, limit=None)
    return JSONResponse(
        {"checkpoints": [event_to_dict(e) for e in events if e.type == "checkpoint.created"]}
    )


async def create_checkpoint(request: Request) -> Response:
    server = server_of(request)
    session_id = request.path_params["id"]
    await server.record(session_id)
    await server.attach(session_id)
    checkpoint_id = await server.controller.checkpoint(session_id)
    server.hub.notify(session_id)
    return JSONResponse({"checkpoint_id": checkpoint_id}, status_code=201)


async def rewind(request: Request) -> Response:
    """Restore a checkpoint of the session (``checkpoint``: its id or a unique prefix)."""
    body = await json_body(request)
    checkpoint = body.get("checkpoint")
    if not isinstance(checkpoint, str) or not checkpoint:
        raise HarnessError("invalid-request", "checkpoint (an id) is required")
    server = server_of(request)
    session_id = request.path_params["id"]
    await server.record(session_id)
    await server.attach(session_id)
    rewound = await server.controller.rewind(session_id, checkpoint)
    server.hub.notify(session_id)
    return JSONResponse(
        {
            "checkpoint_id": rewound.checkpoint_id,
            "conversation": rewound.conversation,
            "turns_kept": rewound.turns_kept,
        }
    )


async def turn_diff(request: Request) -> Response:
    """The files a turn changed and its full patch, from the session's checkpoint store (the
    workspace's content, which the ledger never holds: the bearer token is required)."""
    server = server_of(request)
    session_id = request.path_params["id"]
    record = await server.record(session_id)
    events = await server.events(session_id, after=0, limit=None)
    state_root = server.controller.checkpoints.state_root
    found = await anyio.to_thread.run_sync(
        lambda: read_turn_diff(
            state_root, session_id, record.workspace, events, request.path_params["turn"]
        )
    )
    return JSONResponse(found)


def routes() -> list[Route]:
    def read(path: str, handler: Handler) -> Route:
        return Route(path, guarded(handler, changes_state=False), methods=["GET"])

    def change(path: str, handler: Handler) -> Route:
        return Route(path, guarded(handler, changes_state=True), methods=["POST"])

    def private(path: str, handler: Handler) -> Route:  # a read that needs the token
        return Route(path, guarded(handler, changes_state=True), methods=["GET"])

    return [
        read("/api/harnesses", list_harnesses),
        read("/api/harnesses/{name}", describe_harness),
        read("/api/sessions", list_sessions),
        change("/api/sessions", open_session),
        read("/api/sessions/{id}", get_session),
        read("/api/sessions/{id}/events", session_events),
        read("/api/sessions/{id}/export", export),
        change("/api/sessions/{id}/turns", run_turn),
        change("/api/sessions/{id}/cancel", cancel),
        change("/api/sessions/{id}/approve", approve),
        change("/api/sessions/{id}/close", close),
        change("/api/sessions/{id}/steer", steer),
        change("/api/sessions/{id}/fork", fork),
        read("/api/sessions/{id}/checkpoints", checkpoints),
        change("/api/sessions/{id}/checkpoints", create_checkpoint),
        change("/api/sessions/{id}/rewind", rewind),
        private("/api/sessions/{id}/turns/{turn}/diff", turn_diff),
    ]
