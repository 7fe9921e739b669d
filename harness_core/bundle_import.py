"""Load an exported session bundle (:mod:`harness_core.export`) into a ledger.

Ids are kept (the session id, every event id and sequence), so an export imported into an empty
ledger exports equal again. The whole bundle is checked before anything is written: a bundle
that is not JSON (truncated), of another format or version, whose events are not this session's
gap-free sequence 1..N, or whose session id is already in the ledger is refused with one
``invalid-request`` line and the ledger is left as it was. An import killed midway is finished by
running it again (see :func:`import_bundle`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from harness_hookspecs import Event, HarnessError, LedgerStore, SessionRecord

from .export import EXPORT_FORMAT, EXPORT_VERSION
from .serialize import event_from_dict, event_to_dict, record_from_dict


@attrs.frozen
class Bundle:
    """A checked bundle, ready to write."""

    record: SessionRecord
    events: tuple[Event, ...]


def parse_bundle(text: str | bytes) -> Bundle:
    """Check a bundle's text; ``invalid-request`` with a one-line hint when it is unusable."""
    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError):
        raise HarnessError("invalid-request", "the bundle is not JSON (truncated?)") from None
    if not isinstance(data, Mapping) or data.get("format") != EXPORT_FORMAT:
        raise HarnessError("invalid-request", f"the file is not a {EXPORT_FORMAT} bundle")
    if data.get("version") != EXPORT_VERSION:
        raise HarnessError(
            "invalid-request", f"bundle version {data.get('version')!r} is not {EXPORT_VERSION}"
        )
    rows = data.get("events")
    if not isinstance(rows, list):
        raise HarnessError("invalid-request", "the bundle has no event list")
    try:
        session = data.get("session")
        if not isinstance(session, Mapping):
            raise HarnessError("invalid-request", "the bundle has no session record")
        record = record_from_dict(session)
        events = tuple(event_from_dict(row) for row in rows if isinstance(row, Mapping))
    except HarnessError:
        raise HarnessError("invalid-request", "the bundle holds a malformed record") from None
    if len(events) != len(rows):
        raise HarnessError("invalid-request", "the bundle holds a malformed record")
    session_id = record.ref.session_id
    for expected, event in enumerate(events, 1):
        if event.session_id != session_id or event.harness != record.ref.provider:
            raise HarnessError("invalid-request", "the bundle holds another session's event")
        if event.sequence != expected:
            raise HarnessError("invalid-request", "the bundle's event sequence has a gap")
    if len({event.event_id for event in events}) != len(events):
        raise HarnessError("invalid-request", "the bundle repeats an event id")
    return Bundle(record=record, events=events)


def import_bundle(store: LedgerStore, bundle: Bundle) -> None:
    """Write ``bundle`` into ``store``; refused (nothing written) if its session id is there.

    The one exception is an import that was interrupted (the process killed between its
    writes): the ledger then holds the bundle's own record and a strict prefix of its events,
    and importing the same bundle again writes the rest. A session the ledger got any other way
    holds at least as many events as a bundle exported from it, so it is never "finished".
    """
    session_id = bundle.record.ref.session_id
    record = store.get_session(session_id)
    stored = (
        store.events(session_id) if record is not None or store.last_sequence(session_id) else ()
    )
    if record is None and not stored:
        store.create_session(bundle.record)
    elif not _interrupted_import_of(bundle, record, stored):
        raise HarnessError("invalid-request", "the ledger already has this session id")
    rest = bundle.events[len(stored) :]
    if rest:
        store.append(rest)
    store.flush()


def _interrupted_import_of(
    bundle: Bundle, record: SessionRecord | None, stored: Sequence[Event]
) -> bool:
    return (
        record == bundle.record
        and len(stored) < len(bundle.events)
        and all(
            event_to_dict(mine) == event_to_dict(theirs)
            for mine, theirs in zip(stored, bundle.events, strict=False)
        )
    )


def load_bundle_file(path: str) -> Bundle:
    try:
        with open(path, "rb") as handle:
            text = handle.read()
    except OSError:
        raise HarnessError("invalid-request", "the bundle file cannot be read") from None
    return parse_bundle(text)


def summary(bundle: Bundle) -> dict[str, Any]:
    return {
        "session_id": bundle.record.ref.session_id,
        "harness": bundle.record.ref.provider,
        "events": len(bundle.events),
    }
