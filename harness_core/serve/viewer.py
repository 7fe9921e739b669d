"""The session viewer: server-rendered HTML pages (``/`` and ``/sessions/{id}``).

Every value that came from an event, a record or a request goes through :func:`esc`; the page
script (``static/viewer.js``) only ever sets ``textContent``. No build step, no dependency.
"""

from __future__ import annotations

from datetime import UTC, datetime
from html import escape
from typing import Any

from harness_hookspecs import HarnessError
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from ..transcript import Item, TurnView, fold
from .api import error_response, server_of, session_view
from .branch_view import branch_points, render_branch
from .catalog import catalog_of
from .runner import Server, Summary
from .timing import ToolCall, TurnTiming, duration_text, timings

#: form-action 'self': the sessions page's search form is a plain GET to this server.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


def esc(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def page(title: str, body: str, **data: Any) -> HTMLResponse:
    attributes = "".join(f' data-{esc(k.replace("_", "-"))}="{esc(v)}"' for k, v in data.items())
    html = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)} · harness serve</title>
<link rel="stylesheet" href="/static/viewer.css">
<script src="/static/viewer.js" defer></script>
</head><body{attributes}>
<header class="top"><a href="/" class="brand">harness serve</a>
<span id="token-state" class="muted"></span></header>
<main>{body}</main>
</body></html>"""
    return HTMLResponse(html, headers={"Content-Security-Policy": CSP, "Cache-Control": "no-store"})


def age(timestamp: str | None, now: datetime | None = None) -> str:
    if not timestamp:
        return "-"
    try:
        then = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return "-"
    seconds = int(((now or datetime.now(UTC)) - then).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{max(seconds, 0)}s ago"


def relative_time(timestamp: str | None) -> str:
    """A ``<time>`` showing how long ago ``timestamp`` was; the page script keeps it moving and
    puts the local date and time in its title."""
    if not timestamp:
        return "-"
    return (
        f'<time class="rel" datetime="{esc(timestamp)}" title="{esc(timestamp)}">'
        f"{esc(age(timestamp))}</time>"
    )


def tokens(input_tokens: Any, output_tokens: Any) -> str:
    if input_tokens is None and output_tokens is None:
        return "-"
    return f"{input_tokens if input_tokens is not None else '?'} / {output_tokens if output_tokens is not None else '?'}"


def cost(value: Any) -> str:
    return "-" if value is None else f"${value:.4f}"


def known(text: str) -> str:
    """``unknown`` for a figure nobody reported (``-``): absence is not zero."""
    return "unknown" if text == "-" else text


def _number(value: Any) -> str:
    return "" if value is None else str(value)


def status_of(view: dict[str, Any]) -> str:
    """running / idle / closed (a turn running here counts before the ledger says so)."""
    if view["running_turn"]:
        return "running"
    return str(view["state"])


# -- one session --------------------------------------------------------------------------------


def render_tool(item: Item, call: ToolCall | None, nested: str = "") -> str:
    """A tool call on one line (what it ran -> what came of it, how long), expandable to the
    whole of both and the call's facts (and ``nested``: the child sessions the call started).
    ``static/viewer.js`` builds the same from live events."""
    ran = call.input if call is not None else ""
    came = call.output if call is not None else item.text
    took = duration_text(call.seconds) if call is not None and call.ended_at else ""
    facts = ""
    if call is not None:
        facts = (
            f"call <code>{esc(call.call_id)}</code> · events #{call.first_sequence}"
            + (f"&ndash;#{call.last_sequence}" if call.last_sequence != call.first_sequence else "")
            + (f" · started {relative_time(call.started_at)}" if call.started_at else "")
        )
    return (
        f'<details class="tool {esc(item.state)}" data-call="{esc(item.key)}">'
        f'<summary><span class="icon"></span><code class="name">{esc(item.name)}</code> '
        f'<span class="input">{esc(ran)}</span><span class="arrow"></span>'
        f'<span class="summary output">{esc(came)}</span> '
        f'<span class="took">{esc(took)}</span></summary>'
        f'<dl class="detail"><dt>ran</dt><dd class="detail-input">{esc(ran or "-")}</dd>'
        f'<dt>result</dt><dd class="detail-output">{esc(came or "-")}</dd>'
        f'<dt>call</dt><dd class="detail-facts">{facts}</dd></dl>{nested}</details>'
    )


def render_item(item: Item, call: ToolCall | None = None, nested: str = "") -> str:
    if item.kind == "text":
        return f'<div class="text">{esc(item.text)}</div>'
    if item.kind == "tool":
        return render_tool(item, call, nested)
    if item.kind == "permission":
        buttons = (
            '<button class="allow">Allow</button><button class="deny">Deny</button>'
            if item.state == "pending"
            else ""
        )
        return (
            f'<div class="permission" data-request="{esc(item.key)}">'
            f'<span class="label">approval</span> <code>{esc(item.name)}</code> '
            f'<span class="summary">{esc(item.text)}</span> '
            f'<span class="decision">{esc(item.state)}</span>{buttons}</div>'
        )
    if item.kind == "thinking":  # collapsed: the answer first, the reasoning on demand
        return (
            f'<details class="thinking"><summary>thinking</summary>'
            f'<div class="thought">{esc(item.text)}</div></details>'
        )
    if item.kind in ("step", "validation"):
        label = "model step" if item.kind == "step" else f"answer {item.state}"
        return f'<div class="status {item.kind}"><span class="label">{esc(label)}</span> {esc(item.text)}</div>'
    if item.kind == "artifact":
        return f'<div class="status">artifact <code>{esc(item.name)}</code> {esc(item.text)}</div>'
    return f'<div class="status">{esc(item.text)}</div>'


def render_usage(usage: dict[str, Any]) -> str:
    parts = []
    if "input_tokens" in usage or "output_tokens" in usage:
        parts.append(
            f"tokens {tokens(usage.get('input_tokens'), usage.get('output_tokens'))} (in / out)"
        )
    if "cost_usd" in usage:
        parts.append(cost(usage["cost_usd"]))
    return " · ".join(parts)


def render_outcome(turn: TurnView) -> str:
    if turn.failure is not None:
        hint = f" ({turn.failure['hint']})" if turn.failure.get("hint") else ""
        return (
            f'<div class="failure">failed: <code>{esc(turn.failure["reason"])}</code> '
            f"{esc(turn.failure['message'])}{esc(hint)}</div>"
        )
    if turn.cancelled_by is not None:
        return f'<div class="failure cancelled">cancelled by {esc(turn.cancelled_by)}</div>'
    return ""


def render_timing(timing: TurnTiming | None) -> str:
    """``took 1.23 s · first token 0.40 s`` (a running turn's elapsed time is the script's)."""
    if timing is None or timing.ended_at is None:
        return ""
    parts = [f"took {duration_text(timing.seconds)}"]
    if timing.first_output_at is not None:
        parts.append(f"first token {duration_text(timing.first_token_seconds)}")
    return " · ".join(parts)


def render_turn(
    turn: TurnView,
    number: int,
    harness: str,
    timing: TurnTiming | None = None,
    calls: dict[tuple[str, str], ToolCall] | None = None,
    nested: dict[tuple[str, str], str] | None = None,
    branch: str = "",
) -> str:
    """One turn; ``nested``: by (turn id, call id), the child sessions a tool call started."""
    calls, nested = calls or {}, nested or {}
    items = "".join(
        render_item(
            item, calls.get((turn.turn_id, item.key)), nested.get((turn.turn_id, item.key), "")
        )
        if item.kind == "tool"
        else render_item(item)
        for item in turn.items
    )
    return (
        f'<article class="turn" id="turn-{esc(turn.turn_id)}" data-turn="{esc(turn.turn_id)}" '
        f'data-status="{esc(turn.status)}" data-started="{esc(turn.started_at)}">'
        f'<div class="meta"><span class="badge {esc(turn.status)}">{esc(turn.status)}</span> '
        f"turn {number} · {relative_time(turn.started_at)} · "
        f'<span class="timing">{esc(render_timing(timing))}</span>'
        '<button type="button" class="raw-toggle" aria-expanded="false">raw events</button></div>'
        f'<div class="prompt"><span class="who">prompt</span>'
        f'<div class="text">{esc(turn.prompt)}</div></div>'
        f'<div class="answer"><span class="who">{esc(harness)}</span>'
        f'<div class="items">{items}</div></div>'
        f'<div class="outcome">{render_outcome(turn)}</div>'
        f'<div class="usage">{esc(render_usage(turn.usage))}</div>'
        f'{branch}<pre class="raw" hidden></pre></article>'
    )


#: Turns a session page renders at first, the latest ones: a 1,000-turn session's page paints
#: as fast as a short one's; the earlier turns come on demand (``?turns=N`` or ``all``).
TURNS_SHOWN = 50
#: How many more turns "show earlier turns" adds.
TURNS_MORE = 200


def turns_wanted(request: Request) -> int | None:
    """How many of the latest turns the page renders (``None``: all of them)."""
    raw = request.query_params.get("turns")
    if raw is None or raw == "":
        return TURNS_SHOWN
    if raw == "all":
        return None
    if not raw.isdigit() or not 1 <= int(raw) <= 10**9:
        raise HarnessError("invalid-request", "turns must be a whole number from 1, or all")
    return int(raw)


def earlier_turns(session_id: str, hidden: int, shown: int) -> str:
    """The line above a page's first rendered turn when earlier turns are left out."""
    if not hidden:
        return ""
    base = f"/sessions/{esc(session_id)}?turns="
    more = min(hidden, TURNS_MORE)
    return (
        f'<p class="earlier muted" id="earlier-turns">{hidden:,} earlier '
        f"turn{'' if hidden == 1 else 's'} not shown · "
        f'<a id="show-earlier" href="{base}{shown + more}">show {more:,} more</a> · '
        f'<a id="show-all" href="{base}all">show all</a></p>'
    )


async def shown_from(
    request: Request, server: Server, session_id: str, wanted: int | None
) -> tuple[int, int]:
    """Where the page's events start (the sequence before its first shown turn; 0: all) and
    how many turns come before it. A SQLite ledger says where the last ``wanted`` turns begin
    without decoding an event, so a long session's page reads only what it shows; its totals
    are then computed in SQL too (unless it is being written, when they are read as before).
    Any other store: ``(0, 0)``, the page reads everything and counts itself."""
    sql = catalog_of(request.app.state).sql(server.ledger)
    if sql is None or wanted is None:
        return 0, 0
    starts: list[int] = await server.read(sql.turn_starts, session_id)
    if len(starts) <= wanted:
        return 0, 0
    if (
        session_id not in server.summaries
        and server.running_turn(session_id) is None
        and not await server.read(server.ledger.claimed, session_id)
    ):
        summary: Summary = await server.read(sql.summary, session_id)
        server.summaries.setdefault(session_id, summary)
    return starts[-wanted] - 1, len(starts) - wanted


async def session_page(request: Request) -> Response:
    server: Server = server_of(request)
    session_id = request.path_params["id"]
    try:
        wanted = turns_wanted(request)
        await server.record(session_id)
        after, hidden = await shown_from(request, server, session_id, wanted)
        events = await server.events(session_id, after=after)
        if not after:  # the session's totals from these events, not from a second read
            summary = server.summaries.setdefault(session_id, Summary())
            for event in events:
                summary.add(event)
        view = await session_view(server, session_id)
    except HarnessError as error:
        return error_response(error)
    conversation = fold(events)
    timed = timings(events)
    harness = view["ref"]["provider"]
    nested = await child_sessions(server, session_id, events, 0)
    points = branch_points(events)
    shown = conversation.turns
    if not after:  # every turn was read: leave out all but the last ``wanted``
        hidden = 0 if wanted is None else max(0, len(shown) - wanted)
        shown = shown[hidden:]
    turns = "".join(
        render_turn(
            turn,
            number,
            harness,
            timed.turns.get(turn.turn_id),
            timed.tools,
            nested,
            render_branch(points.get(turn.turn_id), conversation.closed, turn.turn_id),
        )
        for number, turn in enumerate(shown, start=hidden + 1)
    )
    turns = earlier_turns(session_id, hidden, len(shown)) + turns
    status = status_of(view)
    head = (
        f'<h1>{esc(harness)} <span class="muted">session</span> <code>{esc(session_id)}</code></h1>'
        f'<p class="facts"><span class="badge {esc(status)}" id="session-status">{esc(status)}</span> '
        f'<span id="session-turns">{view["turns"]} turn{"" if view["turns"] == 1 else "s"}</span>'
        f' · tokens <span id="session-tokens">'
        f"{esc(known(tokens(view['input_tokens'], view['output_tokens'])))}</span>"
        f' · cost <span id="session-cost">{esc(known(cost(view["cost_usd"])))}</span>'
        f" · opened {relative_time(view['created_at'])}"
        + (f" · model {esc(view['model'])}" if view.get("model") else "")
        + f" · workspace <code>{esc(view.get('workspace') or '-')}</code>"
        f' · <a href="/api/sessions/{esc(session_id)}/export">export</a></p>'
        '<div class="controls"><button id="cancel" hidden>Cancel turn</button>'
        '<form id="steer" hidden><input name="text" placeholder="Steer the running turn">'
        '<button type="submit">Steer</button></form>'
        '<span id="notice" class="muted"></span></div>'
    )
    composer = (
        ""
        if conversation.closed
        else '<form id="composer"><textarea name="prompt" rows="2" placeholder="Next prompt">'
        '</textarea><button type="submit">Run turn</button></form>'
    )
    return page(
        session_id,
        f'{head}<section id="turns" data-first="{hidden + 1}">{turns}</section>{composer}',
        page="session",
        session=session_id,
        harness=harness,
        last_sequence=conversation.last_sequence,
        running_turn=view["running_turn"] or "",
        turns=view["turns"],
        input_tokens=_number(view["input_tokens"]),
        output_tokens=_number(view["output_tokens"]),
        cost_usd=_number(view["cost_usd"]),
        closed="1" if conversation.closed else "",
    )


# -- delegation: child sessions under the tool call that started each ---------------------------

#: How many levels of child sessions a page renders (deeper ones: their own page's link).
NESTED_DEPTH = 4


async def child_sessions(
    server: Server, session_id: str, events: list[Any], depth: int
) -> dict[tuple[str, str], str]:
    """The child sessions ``session_id`` started (:mod:`harness_core.delegation`), rendered, by
    the (turn id, call id) of the ``tool.started`` that started each."""
    from ..delegation import children_of

    records = await server.read(children_of, server.ledger, session_id)
    if not records:
        return {}
    started: dict[str, Any] = {}
    for record in records:
        started.setdefault(record.parent_event_id, []).append(record)
    nested: dict[tuple[str, str], str] = {}
    for event in events:
        found = started.get(event.event_id)
        if found and event.type == "tool.started":
            blocks = [await render_child(server, record, depth + 1) for record in found]
            nested[(event.turn_id, event.payload.call_id)] = "".join(blocks)
    return nested


async def render_child(server: Server, record: Any, depth: int) -> str:
    """One child session, collapsed: its harness, state and link; expanded, its turns."""
    session_id = record.session_id
    events = await server.events(session_id, after=0)
    conversation = fold(events)
    timed = timings(events)
    nested = await child_sessions(server, session_id, events, depth) if depth < NESTED_DEPTH else {}
    turns = "".join(
        render_turn(
            turn, number, record.ref.harness, timed.turns.get(turn.turn_id), timed.tools, nested
        )
        for number, turn in enumerate(conversation.turns, start=1)
    )
    return (
        f'<details class="child-session" data-session="{esc(session_id)}">'
        f'<summary><span class="label">child session</span> <code>{esc(record.ref.harness)}</code> '
        f'<a href="/sessions/{esc(session_id)}"><code>{esc(session_id[:8])}</code></a> '
        f'<span class="badge {esc(record.status)}">{esc(record.status)}</span></summary>'
        f'<div class="child-turns">{turns}</div></details>'
    )
