"""The viewer's sessions page (``/``): text search, filters by harness, state and time, facet
counts and paging over every session in the ledger (:mod:`.catalog` does the finding)."""

from __future__ import annotations

from urllib.parse import urlencode

from harness_hookspecs import HarnessError
from starlette.requests import Request
from starlette.responses import Response

from .api import error_response, server_of
from .catalog import SINCE_LABELS, STATES, Entry, Page, Query, catalog_of
from .viewer import cost, esc, page, relative_time, tokens

#: Characters of the last prompt shown in a row.
PROMPT_SHOWN = 80


def link(query: Query, **changes: object) -> str:
    params = query.params(**changes)
    return "/?" + urlencode(params) if params else "/"


def clip(text: str, size: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= size else flat[: size - 1] + "…"


def search_form(result: Page) -> str:
    query = result.query
    harnesses = "".join(
        f'<option value="{esc(name)}"{" selected" if name == query.harness else ""}>'
        f"{esc(name)} ({count})</option>"
        for name, count in result.harness_counts.items()
    )
    if query.harness and query.harness not in result.harness_counts:
        harnesses += (
            f'<option value="{esc(query.harness)}" selected>{esc(query.harness)} (0)</option>'
        )
    states = "".join(
        f'<option value="{state}"{" selected" if state == query.state else ""}>'
        f"{state} ({result.state_counts[state]})</option>"
        for state in STATES
    )
    since = "".join(
        f'<option value="{key}"{" selected" if key == query.since else ""}>{label}</option>'
        for key, label in SINCE_LABELS.items()
    )
    return (
        '<form id="search" class="search" method="get" action="/" role="search">'
        f'<input type="search" name="q" value="{esc(query.text)}" '
        'placeholder="Search prompts and answers" aria-label="search text">'
        f'<select name="harness" aria-label="harness"><option value="">any harness</option>'
        f"{harnesses}</select>"
        f'<select name="state" aria-label="state"><option value="">any state</option>'
        f"{states}</select>"
        f'<select name="since" aria-label="created"><option value="">any time</option>'
        f"{since}</select>"
        '<button type="submit">Search</button>'
        + (' <a href="/" class="clear">clear</a>' if query.params() else "")
        + "</form>"
    )


def state_chips(result: Page) -> str:
    """One link per state with its count: a click filters (datasette's facets)."""
    query = result.query
    chips = []
    for state in STATES:
        count = result.state_counts[state]
        chosen = " chosen" if state == query.state else ""
        target = link(query, state="" if state == query.state else state)
        chips.append(
            f'<a class="chip badge {state}{chosen}" data-state="{state}" href="{esc(target)}">'
            f"{state} <b>{count}</b></a>"
        )
    return f'<div class="facets">{"".join(chips)}</div>'


def row(entry: Entry) -> str:
    record, summary = entry.record, entry.summary
    session_id = record.ref.session_id
    last = summary.last_turn
    if last == "running" and entry.state != "running":
        last = "interrupted"  # no live process holds it: it will never end by itself
    last_turn = f'<span class="badge {esc(last)}">{esc(last)}</span>' if last else "-"
    return (
        f'<tr data-session="{esc(session_id)}"><td><a href="/sessions/{esc(session_id)}">'
        f"{esc(session_id[:13])}</a></td>"
        f"<td>{esc(record.ref.harness)}</td>"
        f'<td><span class="badge {esc(entry.state)}">{esc(entry.state)}</span></td>'
        f'<td class="num">{summary.turns}</td>'
        f"<td>{last_turn}</td>"
        f'<td class="num">{esc(tokens(summary.input_tokens, summary.output_tokens))}</td>'
        f'<td class="num">{esc(cost(summary.cost_usd))}</td>'
        f"<td>{relative_time(record.created_at)}</td>"
        f'<td class="prompt-cell">{esc(clip(entry.last_prompt, PROMPT_SHOWN))}</td></tr>'
    )


def pager(result: Page, suffix: str = "") -> str:
    """Where this page is and links to its neighbours (``suffix`` tells the ids of a second one)."""
    query = result.query
    if not result.total:
        return f'<p class="pager muted" id="pager{suffix}">no sessions match</p>'
    last = result.first + len(result.entries) - 1
    shown = (
        f'<span id="page-range{suffix}">{result.first:,}&ndash;{last:,} of {result.total:,}</span>'
        + (
            f' <span class="muted">(of {result.all_sessions:,} sessions)</span>'
            if result.total != result.all_sessions
            else ""
        )
    )
    newer = (
        f'<a rel="prev" id="newer{suffix}" href="{esc(link(query, page=query.page - 1))}">&lsaquo; newer</a>'
        if query.page > 1
        else '<span class="muted">&lsaquo; newer</span>'
    )
    older = (
        f'<a rel="next" id="older{suffix}" href="{esc(link(query, page=query.page + 1))}">older &rsaquo;</a>'
        if query.page < result.pages
        else '<span class="muted">older &rsaquo;</span>'
    )
    return (
        f'<p class="pager" id="pager{suffix}">{newer} · page {query.page:,} of {result.pages:,} · '
        f"{shown} · {older}</p>"
    )


def render(result: Page) -> str:
    rows = "".join(row(entry) for entry in result.entries)
    table = (
        '<table class="sessions"><thead><tr><th>session</th><th>harness</th><th>state</th>'
        '<th class="num">turns</th><th>last turn</th><th class="num">tokens in / out</th>'
        '<th class="num">cost</th><th>created</th><th>last prompt</th></tr></thead><tbody>'
        + (rows or '<tr><td colspan="9" class="muted">no sessions match</td></tr>')
        + "</tbody></table>"
    )
    return f"<h1>Sessions</h1>{search_form(result)}{state_chips(result)}{pager(result)}{table}" + (
        pager(result, "-bottom") if result.entries else ""
    )


async def index(request: Request) -> Response:
    server = server_of(request)
    try:
        query = Query.from_params(request.query_params)
    except HarnessError as error:
        return error_response(error)
    catalog = catalog_of(request.app.state)
    result: Page = await server.read(catalog.page, server.ledger, query)
    return page("sessions", render(result), page="index", total=result.total)
