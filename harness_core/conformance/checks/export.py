"""export: the export bundle is strict JSON and complete."""

from __future__ import annotations

import json

import attrs
from harness_hookspecs import TERMINAL_TYPES

from ...export import EXPORT_FORMAT
from ..check import Evidence, Outcome, check, fail, verdict


@check("export", "the export bundle is strict JSON and complete")
def export(evidence: Evidence) -> Outcome:
    run = evidence.run
    if run.export_session is None:
        return verdict([], "", run.open_error or run.descriptor_error or "no session")
    if run.export_error is not None:
        return fail(run.export_error)
    bundle = run.export_bundle
    problems: list[str] = []
    if not isinstance(bundle, dict):
        return fail("the export is not a JSON object")
    try:
        text = json.dumps(bundle, allow_nan=False, ensure_ascii=False)
        if json.loads(text) != bundle:
            problems.append("the bundle changes through JSON (non-JSON types inside)")
    except (TypeError, ValueError) as error:
        problems.append(f"the bundle is not strict JSON ({type(error).__name__})")
    if bundle.get("format") != EXPORT_FORMAT or not isinstance(bundle.get("version"), int):
        problems.append("format/version missing")
    session = bundle.get("session")
    ref = run.main
    if not isinstance(session, dict) or ref is None or session.get("ref") != attrs.asdict(ref):
        problems.append("the session record is missing or names another session")
    expected = evidence.stored.get(run.export_session, [])
    events = bundle.get("events")
    if events != expected:
        count = len(events) if isinstance(events, list) else 0
        problems.append(f"the bundle holds {count} events, the ledger {len(expected)}")
    turns = bundle.get("turns")
    terminal = {
        d["turn_id"]: d for d in expected if d.get("type") in TERMINAL_TYPES and d.get("turn_id")
    }
    turn_ids = {d["turn_id"] for d in expected if d.get("turn_id")}
    if not isinstance(turns, list) or {t.get("turn_id") for t in turns} != turn_ids:
        problems.append("the bundle's turns do not cover every turn")
    else:
        for t in turns:
            end = terminal.get(t.get("turn_id"))
            status = end["type"].split(".", 1)[1] if end else "incomplete"
            if t.get("status") != status:
                problems.append(
                    f"turn {t.get('turn_id')}: status {t.get('status')} is not {status}"
                )
    return verdict(
        problems,
        f"strict JSON; {len(expected)} events and {len(turn_ids)} turns, equal to the ledger",
    )
