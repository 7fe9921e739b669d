"""The read-only commands over the ledger: ``sessions``, ``events``, ``export``.

None of them creates a file: they open the ledger with :func:`open_for_reading`, and a missing
ledger reads as empty (``sessions``) or as ``session-not-found`` (``events``, ``export``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from harness_hookspecs import HarnessError

from ..ledger.sqlite_read import SEARCHED_TYPES
from ..plain_text import clip, cost_text
from ..transcript import format_event
from .commands.reading import DEFAULT_SESSIONS_LIMIT
from .errors import EXIT_OK, CliError, file_error
from .ledger_read import ledger_url, open_for_reading, resolve_session
from .output import Out, print_json, print_json_lines

DEFAULT_LIMIT = DEFAULT_SESSIONS_LIMIT
_RELATIVE = re.compile(r"^(\d+)\s*([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


@contextmanager
def _reading(url: str | None) -> Iterator[Any | None]:
    store = open_for_reading(url)
    try:
        yield store
    finally:
        if store is not None:
            store.close()


def parse_since(text: str, now: datetime | None = None) -> str:
    """``30m``/``2h``/``7d``/``1w`` ago, or an ISO date/time; the ledger's timestamp format."""
    now = now or datetime.now(UTC)
    match = _RELATIVE.match(text.strip())
    if match:
        moment = now - timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
    else:
        try:
            moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        except ValueError:
            raise CliError(
                "invalid-request", "--since needs a duration (30m, 2h, 7d) or an ISO date"
            ) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def summarize(store: Any, session_id: str) -> dict[str, Any]:
    """Turns, usage totals (every usage report summed), last prompt, last activity."""
    turns = 0
    reports: list[Any] = []
    last_prompt = ""
    last_at = ""
    for event in store.events(session_id):
        last_at = event.timestamp
        if event.type == "turn.started":
            turns += 1
            last_prompt = event.payload.prompt
        elif event.type == "usage":
            reports.append(event.payload.usage)
    totals: dict[str, Any] = {}
    for name in ("input_tokens", "output_tokens", "cost_usd"):
        values = [getattr(u, name) for u in reports if getattr(u, name) is not None]
        totals[name] = sum(values) if values else None
    return {"turns": turns, "usage": totals, "last_prompt": last_prompt, "last_event_at": last_at}


def _matches(store: Any, session_id: str, needle: str) -> bool:
    for event in store.events(session_id):
        if event.type in SEARCHED_TYPES:
            text = getattr(event.payload, "prompt", None) or getattr(event.payload, "text", "")
            if needle in (text or "").lower():
                return True
    return False


def cmd_sessions(args: argparse.Namespace) -> int:
    from ..export import open_turn, session_state
    from ..serialize import record_to_dict

    since = parse_since(args.since) if args.since else None
    rows: list[dict[str, Any]] = []
    more = False
    with _reading(args.ledger) as store:
        if store is None:
            if not args.json:
                print(f"no ledger at {ledger_url(args.ledger)} (no sessions yet)", file=sys.stderr)
            return EXIT_OK
        limit = args.limit or DEFAULT_LIMIT
        # Unfiltered, the newest limit + 1 records say all there is to show (and whether there
        # is more): a ledger of 100,000 sessions is not read whole for the first 50.
        filtered = any(
            value is not None for value in (args.harness, args.status, since, args.query)
        )
        records = [
            r
            for r in store.list_sessions(limit=None if filtered else limit + 1)
            if (args.harness is None or r.ref.harness == args.harness)
            and (args.status is None or (r.status == "closed") == (args.status == "closed"))
            and (since is None or r.created_at >= since)
        ]
        if args.query:
            needle = args.query.lower()
            search = getattr(store, "search", None)
            if search is not None:
                found = search(args.query)
                records = [r for r in records if r.session_id in found]
            else:
                records = [r for r in records if _matches(store, r.session_id, needle)]
        # A state past open/closed needs the session's last turn: read for those asked about.
        turns: dict[str, str | None] = {}

        def turn_of(record: Any) -> str | None:
            if record.session_id not in turns:
                turns[record.session_id] = open_turn(store, record.session_id)
            return turns[record.session_id]

        if args.status in ("running", "interrupted", "idle"):
            records = [r for r in records if session_state(r.status, turn_of(r)) == args.status]
        more = len(records) > limit
        shown = records[:limit]
        fast = getattr(store, "summaries", None)  # the SQLite reader answers in SQL
        summaries = (
            fast([r.session_id for r in shown])
            if fast is not None
            else {r.session_id: summarize(store, r.session_id) for r in shown}
        )
        # An open session whose last turn has no end: "running" while its process lives,
        # "interrupted" when a dead process left it (the next resume records that).
        rows = []
        for r in shown:
            turn = turn_of(r)
            rows.append(
                {
                    **record_to_dict(r),
                    **summaries[r.session_id],
                    "turn": turn,
                    "state": session_state(r.status, turn),
                }
            )
        _add_totals(store, rows)
    if args.json:
        print_json_lines(rows)
        return EXIT_OK
    _sessions_table(rows)
    if more:
        print(f"(showing the newest {len(rows)}; --limit N shows more)", file=sys.stderr)
    return EXIT_OK


def _add_totals(store: Any, rows: list[dict[str, Any]]) -> None:
    """A session that delegated (:mod:`harness_core.delegation`) gets ``total_usage``: its own
    usage and every descendant session's (``usage`` stays its own)."""
    ids = [row["ref"]["session_id"] for row in rows]
    children = getattr(store, "children", None)  # the SQLite reader answers in SQL
    if children is None:
        index: dict[str, list[str]] = {}
        for record in store.list_sessions():
            if record.parent_session_id is not None:
                index.setdefault(record.parent_session_id, []).append(record.session_id)
        children = lambda asked: {i: index[i] for i in asked if i in index}  # noqa: E731
        roots = ids
    else:
        from ..delegation_calls import CALL_NAMES

        # Finding children scans the sessions table: only for a listed session that delegated
        # (a few of its own events say so), and one query per level for all of them.
        delegating = store.delegating(ids, CALL_NAMES)
        roots = [sid for sid in ids if sid in delegating]
    kids_of: dict[str, list[str]] = {}
    level, seen = roots, set(roots)
    while level:
        below = children(level)
        kids_of.update(below)
        level = [kid for kids in below.values() for kid in kids if kid not in seen]
        seen.update(level)
    descendants: dict[str, list[str]] = {}
    for session_id in roots:
        level, found, met = [session_id], [], {session_id}
        while level:  # level by level, as the tree is drawn (a hostile ledger's loop once)
            level = [kid for parent in level for kid in kids_of.get(parent, ()) if kid not in met]
            met.update(level)
            found.extend(level)
        if found:
            descendants[session_id] = found
    if not descendants:
        return
    everyone = sorted({d for found in descendants.values() for d in found})
    fast = getattr(store, "summaries", None)
    usage = (
        {sid: s["usage"] for sid, s in fast(everyone).items()}
        if fast is not None
        else {sid: summarize(store, sid)["usage"] for sid in everyone}
    )
    for row in rows:
        below = descendants.get(row["ref"]["session_id"])
        if below:
            row["total_usage"] = _summed([row["usage"], *(usage[d] for d in below)])


def _summed(usages: list[dict[str, Any]]) -> dict[str, Any]:
    """Usage totals added field by field (a field no one knew stays ``None``)."""
    total: dict[str, Any] = {}
    for name in ("input_tokens", "output_tokens", "cost_usd"):
        values = [u[name] for u in usages if u.get(name) is not None]
        total[name] = sum(values) if values else None
    return total


def _sessions_table(rows: list[dict[str, Any]]) -> None:
    out = Out()
    if not rows:
        print("no sessions match", file=sys.stderr)
        return
    table = []
    for row in rows:
        usage = row["usage"]
        tokens = (
            "-"
            if usage["input_tokens"] is None and usage["output_tokens"] is None
            else f"{_count(usage['input_tokens'])}/{_count(usage['output_tokens'])}"
        )
        table.append(
            [
                row["ref"]["session_id"],
                row["ref"]["provider"],
                row["state"]
                + (
                    " (interrupted)"  # a closed session whose last turn never ended
                    if row["turn"] == "interrupted" and row["state"] != "interrupted"
                    else ""
                ),
                str(row["turns"]),
                tokens,
                cost_text(usage["cost_usd"])
                + (
                    f" (with children {cost_text(row['total_usage']['cost_usd'])})"
                    if "total_usage" in row
                    else ""
                ),
                row["created_at"][:19].replace("T", " "),
                clip(row["last_prompt"], 40),
            ]
        )
    headers = [
        "SESSION",
        "HARNESS",
        "STATE",
        "TURNS",
        "TOKENS IN/OUT",
        "COST",
        "CREATED",
        "PROMPT",
    ]
    out.table(headers, table, right=("TURNS", "TOKENS IN/OUT", "COST"))
    totals = _totals(rows)
    print(totals, file=sys.stderr)


def _count(value: int | None) -> str:
    """A token count as the tables show it: ``?`` when nobody reported it (never 0)."""
    return "?" if value is None else f"{value:,}"


def _known_sum(values: Any) -> int | None:
    known = [value for value in values if value is not None]
    return sum(known) if known else None


def _totals(rows: list[dict[str, Any]]) -> str:
    turns = sum(r["turns"] for r in rows)
    usages = [r["usage"] for r in rows]
    known = [u for u in usages if u["input_tokens"] is not None or u["output_tokens"] is not None]
    tokens = (
        f"{_count(_known_sum(u['input_tokens'] for u in known))} in / "
        f"{_count(_known_sum(u['output_tokens'] for u in known))} out tokens"
        if known
        else "tokens unknown"
    )
    costs = [u["cost_usd"] for u in usages if u["cost_usd"] is not None]
    cost = cost_text(sum(costs)) if costs else "cost unknown"
    plural = "s" if len(rows) != 1 else ""
    return f"{len(rows)} session{plural}, {turns} turns, {tokens}, {cost}"


def cmd_events(args: argparse.Namespace) -> int:
    from ..serialize import event_to_dict

    resolve_session(args)
    with _reading(args.ledger) as store:
        if store is None or store.get_session(args.session) is None:
            raise HarnessError("session-not-found")
        if args.follow:
            # A live tail reads through the writers' WAL: the store itself, not a snapshot.
            from ..ledger import open_ledger
            from ..plugins import get_plugins

            live = open_ledger(ledger_url(args.ledger), schemes=get_plugins().ledger_schemes)
            try:
                return _follow_events(live, args)
            finally:
                live.close()
        if args.tree:
            if args.follow:
                raise CliError("invalid-request", "--tree does not go with --follow")
            _print_tree(store, args.session, args, 0)
            return EXIT_OK
        events = store.events(args.session, after=args.after, limit=args.limit)
    if args.json:
        print_json_lines(event_to_dict(event) for event in events)
        return EXIT_OK
    for event in events:
        sys.stdout.write(format_event(event) + "\n")
    return EXIT_OK


def _print_tree(store: Any, session_id: str, args: argparse.Namespace, depth: int) -> None:
    """``events --tree``: the session's events, each child session's (indented, its own
    children in it) right after the parent's event that started it (``--json``: each event
    with its ``depth``)."""
    from ..delegation import children_of
    from ..serialize import event_to_dict

    children: dict[str | None, list[Any]] = {}
    for record in children_of(store, session_id):
        children.setdefault(record.parent_event_id, []).append(record)
    events = store.events(session_id, after=args.after if depth == 0 else 0, limit=args.limit)
    indent = "    " * depth
    for event in events:
        if args.json:
            print_json_lines([{**event_to_dict(event), "depth": depth}])
        else:
            sys.stdout.write(indent + format_event(event) + "\n")
        for record in children.pop(event.event_id, ()):
            _print_child(store, record, args, depth)
    for records in children.values():  # started by an event not shown (--after, --limit)
        for record in records:
            _print_child(store, record, args, depth)


def _print_child(store: Any, record: Any, args: argparse.Namespace, depth: int) -> None:
    if not args.json:
        line = f"{'    ' * (depth + 1)}child {record.session_id} {record.ref.harness}"
        sys.stdout.write(line + f" ({record.status})\n")
    _print_tree(store, record.session_id, args, depth + 1)


def _follow_events(store: Any, args: argparse.Namespace) -> int:
    """``events --follow``: print the recorded events, then each new one, until interrupted."""
    import anyio

    from ..ledger.tail import follow
    from ..serialize import event_to_dict

    async def tail() -> None:
        async for event in follow(store, args.session, after=args.after):
            if args.json:
                print_json_lines([event_to_dict(event)])
            else:
                sys.stdout.write(format_event(event) + "\n")
            sys.stdout.flush()

    try:
        anyio.run(tail)
    except KeyboardInterrupt:
        pass  # the way a follow ends
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    from ..export import export_session

    resolve_session(args)
    with _reading(args.ledger) as store:
        if store is None:
            raise HarnessError("session-not-found")
        if args.format == "superqode":
            bundle = _superqode_export(store, args.session)
        else:
            bundle = export_session(store, args.session)
    # --json keeps the one-object-per-line convention; without it the bundle is indented.
    text = json.dumps(bundle, ensure_ascii=False, indent=None if args.json else 2) + "\n"
    if args.output and args.output != "-":
        try:
            with open(args.output, "w", encoding="utf-8", errors="backslashreplace") as handle:
                handle.write(text)
        except OSError as error:
            raise file_error("cannot write the output file", args.output, error) from None
        count = len(bundle.get("events", []))
        if args.json:
            print_json({"path": args.output, "events": count})
        else:
            print(f"wrote {args.output} ({count} events)", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def _superqode_export(store: Any, session_id: str) -> dict[str, Any]:
    """The v1 bundle, its descriptor's capabilities from the harness's declared features
    (none claimed when the harness is not installed here)."""
    from ..superqode_bundle import export_superqode

    record = store.get_session(session_id)
    features = None
    if record is not None:
        from ..plugins import get_plugins

        plugins = get_plugins()
        descriptor = None
        if record.ref.harness in plugins.harness_names():
            try:
                descriptor = plugins.describe(record.ref.harness)
            except Exception:  # a broken harness: export without claiming capabilities
                descriptor = None
        features = None if descriptor is None else frozenset(descriptor.features)
    return export_superqode(store, session_id, features)


def session_log_path(url: str | None, session_id: str) -> Any:
    """The diagnostic log file of ``session_id`` in the ledger at ``url`` (it may not exist)."""
    from ..context import default_state_root
    from ..diagnostics import log_directory_for_url, session_log

    return session_log(log_directory_for_url(ledger_url(url), default_state_root()), session_id)


def cmd_logs(args: argparse.Namespace) -> int:
    """``harness logs ID``: the session's diagnostic log (see :mod:`harness_core.diagnostics`)."""
    resolve_session(args)
    path = session_log_path(args.ledger, args.session)
    try:
        text = path.read_text(encoding="utf-8", errors="backslashreplace")
    except FileNotFoundError:
        with _reading(args.ledger) as store:
            if store is None or store.get_session(args.session) is None:
                raise HarnessError("session-not-found") from None
        text = None
    except OSError as error:
        raise file_error("cannot read the log", str(path), error) from None
    if args.json:
        print_json({"session_id": args.session, "path": str(path), "log": text})
    elif text is None:
        print(f"nothing was logged for session {args.session} (no {path})", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK
