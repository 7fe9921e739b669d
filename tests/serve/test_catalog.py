"""The sessions page's index (serve/catalog.py): what a search, a filter and a page find, the
counts beside the filters, and that it follows the ledger as it grows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs
import pytest
from harness_hookspecs import Event, HarnessError
from harness_hookspecs import events as ev

from harness_core.ledger import open_ledger
from harness_core.serve.catalog import Catalog, Query
from harness_core.testing.many_sessions import (
    expected,
    fill_ledger,
    kind_of,
    session_id_of,
    stamp,
)

COUNT = 120
NOW = datetime(2026, 1, 2, 12, 0, tzinfo=UTC)


def in_memory(sqlite):
    """A memory store holding what ``sqlite`` holds (the in-memory catalog's store)."""
    memory = open_ledger("memory:")
    for record in reversed(sqlite.list_sessions()):
        memory.create_session(record)
        memory.append(sqlite.events(record.session_id))
    return memory


# Every behaviour below holds for both catalogs: the SQL one a SQLite ledger gets, and the
# in-memory one every other store gets.
@pytest.fixture(params=["sqlite", "memory"])
def store(request, tmp_path):
    url = f"sqlite:///{tmp_path}/ledger.sqlite"
    fill_ledger(url, COUNT, now=NOW)
    opened = open_ledger(url)
    if request.param == "memory":
        sqlite, opened = opened, in_memory(opened)
        sqlite.close()
    yield opened
    opened.close()


def ids(page):
    return [entry.record.session_id for entry in page.entries]


def test_pages_are_newest_first_and_cover_every_session(store):
    catalog = Catalog()
    seen = []
    for number in range(1, 4):
        page = catalog.page(store, Query(page=number), now=NOW)
        assert page.total == COUNT and page.pages == 3
        assert page.first == (number - 1) * 50 + 1
        seen += ids(page)
    assert seen == [session_id_of(i) for i in range(COUNT)]
    assert catalog.page(store, Query(page=9), now=NOW).entries == []


@pytest.mark.parametrize(
    "where",
    [
        {"harness": "codex"},
        {"state": "closed"},
        {"state": "interrupted"},
        {"state": "idle", "harness": "pi"},
    ],
)
def test_filters_find_exactly_the_matching_sessions(store, where):
    page = Catalog().page(store, Query(per_page=500, **where), now=NOW)
    assert ids(page) == [session_id_of(i) for i in expected(COUNT, **where)]


def test_text_search_reads_prompts_and_answers_and_every_word_must_match(store):
    catalog = Catalog()
    page = catalog.page(store, Query(text="N17X"), now=NOW)  # in session 17's answer only
    assert ids(page) == [session_id_of(17)]
    page = catalog.page(store, Query(text="Session 4: PARSER", per_page=500), now=NOW)
    words = ("session", "4:", "parser")  # "4:" ends the number: sessions 4, 14, 24, ...
    assert ids(page) == [
        session_id_of(i)
        for i in range(COUNT)
        if all(word in (kind_of(i)["prompt"] + kind_of(i)["answer"]).lower() for word in words)
    ]
    assert page.total == len([i for i in range(COUNT) if i % 10 == 4 and i % 7 == 3])
    assert catalog.page(store, Query(text="parser nothing-like-this"), now=NOW).total == 0


def test_since_keeps_sessions_created_in_the_window(store):
    page = Catalog().page(store, Query(since="1h", per_page=500), now=NOW)
    # one a minute, the 60-minute-old one included (the window's start is inclusive)
    assert ids(page) == [session_id_of(i) for i in range(61)]


def test_facet_counts_ignore_their_own_filter(store):
    page = Catalog().page(store, Query(harness="codex", state="closed"), now=NOW)
    codex = expected(COUNT, harness="codex")
    assert page.state_counts["closed"] == len([i for i in codex if kind_of(i)["state"] == "closed"])
    assert page.state_counts["idle"] == len([i for i in codex if kind_of(i)["state"] == "idle"])
    closed = expected(COUNT, state="closed")
    assert page.harness_counts["pi"] == len([i for i in closed if kind_of(i)["harness"] == "pi"])
    assert page.all_sessions == COUNT


def test_new_events_and_sessions_are_found_on_the_next_look(store):
    catalog = Catalog()
    assert catalog.page(store, Query(text="late words"), now=NOW).total == 0
    # session 2 (idle) gets a second turn, still running in no live process: interrupted
    session_id, start = session_id_of(2), NOW + timedelta(seconds=30)
    store.append(
        [
            Event(
                event_id="late-1",
                sequence=9,
                session_id=session_id,
                turn_id="late-turn",
                harness="claude-code",
                timestamp=stamp(start),
                type="turn.started",
                payload=ev.TurnStarted(prompt="late words"),
            )
        ]
    )
    page = catalog.page(store, Query(text="late words"), now=NOW)
    assert ids(page) == [session_id]
    entry = page.entries[0]
    assert entry.summary.turns == 2 and entry.state == "interrupted"
    store.claim(session_id)  # a live writer holds it: the turn is running
    assert catalog.page(store, Query(state="running"), now=NOW).total == 1


QUERIES = [
    Query(),
    Query(page=2, per_page=7),
    Query(harness="pi"),
    Query(state="interrupted", per_page=500),
    Query(state="idle", harness="codex", since="1h"),
    Query(since="24h", page=3),
    Query(text="parser"),
    Query(text="Session 4: PARSER", per_page=500),
    Query(text="n17x", state="idle"),
    Query(text="no-such-word"),
    Query(harness="no-such-harness"),
]


def view(page):
    """All a page shows: every row's fields, the totals and the counts beside the filters."""
    rows = [
        (
            e.record,
            e.state,
            e.last_prompt,
            e.summary.turns,
            e.summary.last_turn,
            e.summary.input_tokens,
            e.summary.output_tokens,
            e.summary.cost_usd,
            e.summary.last_sequence,
            e.summary.updated_at,
        )
        for e in page.entries
    ]
    return rows, page.total, page.pages, page.harness_counts, page.state_counts, page.all_sessions


def test_the_sql_catalog_shows_what_the_in_memory_one_shows(tmp_path):
    url = f"sqlite:///{tmp_path}/ledger.sqlite"
    fill_ledger(url, COUNT, now=NOW)
    sqlite = open_ledger(url)
    memory = in_memory(sqlite)
    try:
        sqlite.claim(session_id_of(11))  # an interrupted session taken up again: running
        memory.claim(session_id_of(11))
        sql_catalog, memory_catalog = Catalog(), Catalog()
        for query in QUERIES:
            shown = view(sql_catalog.page(sqlite, query, now=NOW))
            assert shown == view(memory_catalog.page(memory, query, now=NOW)), query
            assert shown[0] or not shown[1]
        assert sql_catalog.page(sqlite, Query(state="running"), now=NOW).total == 1
    finally:
        sqlite.close()
        memory.close()


def test_what_another_writer_commits_is_seen_on_the_next_look(tmp_path):
    url = f"sqlite:///{tmp_path}/ledger.sqlite"
    fill_ledger(url, COUNT, now=NOW)
    store = open_ledger(url)
    try:
        catalog = Catalog()
        assert catalog.page(store, Query(text="n17x"), now=NOW).total == 1
        assert catalog.page(store, Query(), now=NOW).all_sessions == COUNT
        # another store (another connection, as another process would have) records a session
        other = open_ledger(url)
        record = store.get_session(session_id_of(17))
        other.create_session(attrs.evolve(record, ref=attrs.evolve(record.ref, session_id="new")))
        other.append(
            [
                attrs.evolve(event, session_id="new", event_id=f"new-{event.sequence}")
                for event in store.events(session_id_of(17))
            ]
        )
        other.close()
        assert catalog.page(store, Query(), now=NOW).all_sessions == COUNT + 1
        assert {e.record.session_id for e in catalog.page(store, Query(text="n17x")).entries} == {
            session_id_of(17),
            "new",
        }
    finally:
        store.close()


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"state": "asleep"}, "state"),
        ({"since": "3y"}, "since"),
        ({"page": "0"}, "page"),
        ({"page": "x"}, "page"),
        ({"per_page": "100000"}, "per_page"),
    ],
)
def test_a_bad_parameter_is_invalid_request_naming_it(params, named):
    with pytest.raises(HarnessError) as caught:
        Query.from_params(params)
    assert caught.value.reason == "invalid-request" and named in (caught.value.hint or "")


def test_query_links_drop_defaults_and_a_new_filter_starts_at_page_one():
    query = Query(text="x y", harness="pi", page=3)
    assert query.params() == {"q": "x y", "harness": "pi", "page": "3"}
    assert query.params(state="idle") == {"q": "x y", "harness": "pi", "state": "idle"}
    assert query.params(page=4)["page"] == "4"


def test_the_api_searches_with_the_same_query(serve, tmp_path):
    fill_ledger(f"sqlite:///{tmp_path}/serve.sqlite", COUNT, now=NOW)
    with serve() as server:
        status, body = server.call("GET", "/api/sessions?harness=codex&state=closed&per_page=5")
        assert status == 200
        matching = expected(COUNT, harness="codex", state="closed")
        assert body["total"] == len(matching) and body["pages"] == -(-len(matching) // 5)
        assert [s["ref"]["session_id"] for s in body["sessions"]] == [
            session_id_of(i) for i in matching[:5]
        ]
        assert all(s["state"] == "closed" and s["turns"] == 1 for s in body["sessions"])
        status, body = server.call("GET", "/api/sessions?q=n17x")
        assert [s["ref"]["session_id"] for s in body["sessions"]] == [session_id_of(17)]
        status, body = server.call("GET", "/api/sessions?state=asleep")
        assert status == 400 and body["error"]["reason"] == "invalid-request"
        # without a search parameter: the newest N, as before
        status, body = server.call("GET", "/api/sessions?limit=3")
        assert [s["ref"]["session_id"] for s in body["sessions"]] == [
            session_id_of(i) for i in range(3)
        ] and "total" not in body
