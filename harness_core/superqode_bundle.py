"""SuperQode Harness Protocol v1 session bundles, both ways (seed 001).

A v1 bundle (``HarnessSessionBundle.to_dict()`` of superqode 2.25: ``protocol_version``,
``descriptor``, ``session``, ``runs`` - each run with its events -, ``events`` - every run's,
in order -, ``artifacts``, ``checkpoints``, ``exported_at``) maps onto one session of ours:

- a run is a turn (the run id is the turn id); the session id, every event id, the events'
  order and their ``parent_event_id`` chain are kept; a session-wide gap-free ``sequence`` is
  numbered in the bundle's order behind a ``session.opened`` this side adds (v1 has no session
  events); the adapter's ``external_session_id`` is the session's vendor id;
- event types and fields go through the one table of seed-001 names
  (:mod:`harness_hookspecs.names`); a v1 event with no counterpart here (``context.selection``,
  an ``adapter.*`` name) is kept in its place as a ``status`` naming its type; ``adapter.X``
  where ``X`` is one of our types (what :func:`export_superqode` writes for them) is ``X``;
- what has no field of ours - the descriptor, the session's metadata, each run's provider,
  model, flavor and lineage (``parent_run_id``, ``root_run_id``) - is kept in the record's
  config under ``superqode`` and written back by :func:`export_superqode`;
- never raw failure text: a ``run.failed``'s ``error`` string is dropped (``provider-failed``,
  its ``error_type`` class name as the hint), as for a live turn.

``harness import`` recognises a v1 bundle by its first key; the whole file is checked before
anything is written (one ``invalid-request`` line otherwise, see :func:`load_superqode_file`).
``harness export --format superqode`` writes one (:func:`export_superqode`) that superqode's own
reader (``HarnessRunRecord.from_dict``, its stores) accepts.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

import attrs
from harness_hookspecs import PAYLOAD_TYPES, Event, HarnessError, LedgerStore, SessionRecord
from harness_hookspecs.events import MessageCompleted, TurnStarted
from harness_hookspecs.names import SEED_001_FIELDS, SEED_001_NAMES, V1_NAMES, normalize_event

from .clock import epoch_seconds
from .serialize import event_from_dict, event_to_dict, record_from_dict

#: superqode's ``HARNESS_PROTOCOL_VERSION``: what we write, and the major version we read
PROTOCOL_VERSION = "1.0"
#: the largest v1 bundle read (it is one JSON document, read whole)
FILE_MAX = 256 * 1024 * 1024
#: the first key of a v1 bundle (``to_dict`` order, or ``sort_keys``); ours starts ``format``
FIRST_KEYS = frozenset({"protocol_version", "artifacts"})
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,127}")
_TERMINAL_STATUS = {
    "run.completed": "succeeded",
    "run.failed": "failed",
    "run.cancelled": "cancelled",
}


#: what a run record keeps besides its events (and its metadata, less its error text)
_RUN_KEPT = frozenset(
    {
        "run_id",
        "session_id",
        "flavor",
        "provider",
        "model",
        "runtime",
        "status",
        "started_at",
        "ended_at",
        "parent_run_id",
        "root_run_id",
        "prompt_preview",
    }
)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _bad(what: str) -> HarnessError:
    return HarnessError("invalid-request", f"the SuperQode bundle {what}")


@attrs.frozen
class SuperQodeBundle:
    """A checked v1 bundle as our session: what :func:`~harness_core.bundle_import.import_bundle`
    writes (the same members as :class:`~harness_core.bundle_import.Bundle`)."""

    record: SessionRecord
    count: int
    digest: str
    path: str
    converted: tuple[Event, ...]

    def events(self) -> Iterator[Event]:
        return iter(self.converted)


def load_superqode_file(path: str) -> SuperQodeBundle:
    """Read and check the v1 bundle at ``path`` whole; ``invalid-request`` (one line) when it
    is not JSON (truncated), not a v1 bundle, or inconsistent (an event of another session or
    of no run, a run's sequence with a gap, an id twice, a field out of bounds)."""
    try:
        if os.path.getsize(path) > FILE_MAX:
            raise _bad(f"is over {FILE_MAX // (1024 * 1024)} MiB")
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise HarnessError(
            "invalid-request", f"cannot read the bundle {path[-160:]} ({reason})"
        ) from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise HarnessError("invalid-request", "the bundle is not JSON (truncated?)") from None
    record, events = bundle_to_session(data)
    return SuperQodeBundle(
        record=record,
        count=len(events),
        digest=hashlib.sha256(raw).hexdigest(),
        path=path,
        converted=tuple(events),
    )


def bundle_to_session(data: Any) -> tuple[SessionRecord, list[Event]]:
    """Our session record and events for a v1 bundle's dict (see the module docstring)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("descriptor"), Mapping):
        raise HarnessError("invalid-request", "the file is not a SuperQode Harness Protocol bundle")
    version = str(data.get("protocol_version") or "")
    if version.split(".", 1)[0] != PROTOCOL_VERSION.split(".", 1)[0]:
        raise _bad(f"has protocol version {version[:32]!r}, not 1.x")
    descriptor, session = data["descriptor"], data.get("session")
    runs, rows = data.get("runs"), data.get("events")
    if not isinstance(session, Mapping) or not isinstance(runs, list) or not isinstance(rows, list):
        raise _bad("has no session, runs or events")
    session_id, harness = str(session.get("session_id") or ""), str(descriptor.get("id") or "")
    if not session_id or session.get("harness_id") != harness:
        raise _bad("names no session of its harness")
    run_info = _runs(runs, session_id)
    try:
        record = _record(data, session, run_info, rows)
        events = [_opened(record, rows)]
        events.extend(_events(rows, record, run_info))
    except HarnessError as error:
        if error.reason != "ledger-failed":
            raise
        raise _bad("holds a malformed record") from None
    return record, events


def _runs(runs: list[Any], session_id: str) -> dict[str, dict[str, Any]]:
    """Each run's fields but its events, by run id (checked: this session's, ids once)."""
    info: dict[str, dict[str, Any]] = {}
    for run in runs:
        if not isinstance(run, Mapping) or not run.get("run_id"):
            raise _bad("holds a malformed run")
        if run.get("session_id") != session_id:
            raise _bad("holds another session's run")
        if str(run["run_id"]) in info:
            raise _bad("holds a run twice")
        kept = {k: v for k, v in run.items() if k in _RUN_KEPT}
        metadata = _mapping(run.get("metadata"))
        # a failed run's metadata holds its raw error text: never kept
        kept["metadata"] = {k: v for k, v in metadata.items() if k not in ("error", "prompt")}
        info[str(run["run_id"])] = kept
    return info


def _iso(moment: Any) -> str:
    try:
        seconds = float(moment)
    except (TypeError, ValueError):
        seconds = 0.0
    stamp = datetime.fromtimestamp(seconds, UTC).isoformat(timespec="microseconds")
    return stamp.replace("+00:00", "Z")


def _record(
    data: Mapping[str, Any],
    session: Mapping[str, Any],
    runs: dict[str, dict[str, Any]],
    rows: list[Any],
) -> SessionRecord:
    metadata = _mapping(session.get("metadata"))
    stamps = [row.get("timestamp") for row in rows if isinstance(row, Mapping)]
    first = min((r.get("started_at") or 0 for r in runs.values()), default=data.get("exported_at"))
    kept = {"descriptor": data["descriptor"], "session_metadata": metadata, "runs": runs}
    return record_from_dict(
        {
            "ref": {
                "provider": data["descriptor"]["id"],
                "target": "local",
                "session_id": session["session_id"],
            },
            "status": "open",
            "created_at": _iso(first),
            "updated_at": _iso(stamps[-1] if stamps else first),
            "workspace": metadata.get("working_directory") or None,
            "model": metadata.get("model") or None,
            "config": {"superqode": kept},
            "vendor_session_id": session.get("external_session_id") or None,
        }
    )


def _opened(record: SessionRecord, rows: list[Any]) -> Event:
    """The ``session.opened`` a v1 session lacks (its id derived from the session id, so an
    import of the same bundle elsewhere names it alike)."""
    digest = hashlib.sha256(record.session_id.encode()).hexdigest()[:24]
    first = rows[0].get("timestamp") if rows and isinstance(rows[0], Mapping) else None
    return event_from_dict(
        {
            "event_id": f"sq_{digest}_opened",
            "sequence": 1,
            "session_id": record.session_id,
            "turn_id": None,
            "harness": record.ref.harness,
            "timestamp": _iso(first) if first is not None else record.created_at,
            "type": "session.opened",
            "payload": {
                "provider": record.ref.harness,
                "target": "local",
                "model": record.model,
                "vendor_session_id": record.vendor_session_id,
            },
        }
    )


def _events(
    rows: list[Any], record: SessionRecord, runs: dict[str, dict[str, Any]]
) -> Iterator[Event]:
    seen: set[str] = set()
    per_run: dict[str, int] = {}
    prompts = _prompts(rows, runs)
    texts: dict[str, str] = {}
    for position, row in enumerate(rows, start=2):
        if not isinstance(row, Mapping) or not isinstance(row.get("type"), str):
            raise _bad("holds a malformed event")
        run_id, event_id = str(row.get("run_id") or ""), str(row.get("event_id") or "")
        if row.get("session_id") != record.session_id or run_id not in runs:
            raise _bad("holds an event of another session or of no run")
        if not event_id or event_id in seen:
            raise _bad("holds an event without an id or an id twice")
        seen.add(event_id)
        per_run[run_id] = per_run.get(run_id, 0) + 1
        if row.get("sequence") != per_run[run_id]:
            raise _bad("has a gap in a run's event sequence")
        data = _mapping(row.get("data"))
        kind, payload = _payload(str(row["type"]), data, prompts.get(run_id), texts, run_id)
        yield event_from_dict(
            {
                "event_id": event_id,
                "sequence": position,
                "session_id": record.session_id,
                "turn_id": run_id,
                "harness": record.ref.harness,
                "timestamp": _iso(row.get("timestamp")),
                "parent_event_id": row.get("parent_event_id"),
                "type": kind,
                "payload": payload,
            }
        )


def _prompts(rows: list[Any], runs: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Each run's prompt: its user message, else what the run record kept of it."""
    prompts: dict[str, str] = {}
    for row in rows:
        data = row.get("data") if isinstance(row, Mapping) else None
        if (
            isinstance(data, Mapping)
            and row.get("type") == "message.created"
            and data.get("role") == "user"
        ):
            prompts.setdefault(str(row.get("run_id")), str(data.get("content") or ""))
    for run_id, run in runs.items():
        metadata = _mapping(run.get("metadata"))
        kept = prompts.get(run_id) or metadata.get("prompt") or run.get("prompt_preview")
        prompts[run_id] = str(kept or "(no prompt recorded)")
    return prompts


def _payload(
    kind: str, data: Mapping[str, Any], prompt: str | None, texts: dict[str, str], run_id: str
) -> tuple[str, dict[str, Any]]:
    """Our type and payload fields for one v1 event."""
    if kind.startswith("adapter.") and kind[8:] in PAYLOAD_TYPES:
        return kind[8:], dict(data)
    if kind not in SEED_001_NAMES and kind not in V1_NAMES.values():
        return "status", {"message": f"superqode {kind}"[:200]}
    ours, fields = normalize_event(kind, data)
    for theirs, mine in SEED_001_FIELDS.items():  # (a name we share is not renamed there)
        if theirs in fields and mine not in fields:
            fields[mine] = fields.pop(theirs)
    build = _BUILD.get(ours)
    if build is None:
        return "status", {"message": f"superqode {kind}"[:200]}
    if ours == "message.completed" and fields.get("role") == "assistant":
        texts[run_id] = str(fields.get("text") or "")
    if ours == "turn.completed":
        fields = {**fields, "text": texts.get(run_id)}
    built: tuple[str, dict[str, Any]] = build(fields, prompt or "")
    return built


def _usage(data: Any) -> dict[str, Any] | None:
    if not isinstance(data, Mapping):
        return None
    pick = {
        "input_tokens": ("input_tokens", "prompt_tokens", "tokens_in"),
        "output_tokens": ("output_tokens", "completion_tokens", "tokens_out"),
    }
    usage = {
        ours: next((int(data[k]) for k in keys if isinstance(data.get(k), int)), None)
        for ours, keys in pick.items()
    }
    return usage if any(v is not None for v in usage.values()) else None


def _text(fields: Mapping[str, Any], *keys: str) -> str | None:
    value = next((fields[k] for k in keys if fields.get(k) not in (None, "")), None)
    return None if value is None else str(value)


def _name(value: Any, default: str) -> str:
    text = str(value or "")
    return text[:128] if text else default


def _failed(fields: Mapping[str, Any], _prompt: str) -> tuple[str, dict[str, Any]]:
    error_type = str(fields.get("error_type") or "")
    hint = error_type if _PLAIN.fullmatch(error_type) else None
    return "turn.failed", {"reason": "provider-failed", "hint": hint}


def _message(fields: Mapping[str, Any], _prompt: str) -> tuple[str, dict[str, Any]]:
    role = str(fields.get("role") or "assistant")
    text = str(fields.get("text") or "")
    if role not in ("assistant", "user", "system"):
        return "status", {"message": f"superqode {role} message"[:200]}
    return "message.completed", {"text": text, "role": role}


def _delta(fields: Mapping[str, Any], _prompt: str) -> tuple[str, dict[str, Any]]:
    text = str(fields.get("text") or "")
    return ("message.delta", {"text": text}) if text else ("status", {"message": "empty delta"})


def _approval(fields: Mapping[str, Any], _prompt: str) -> tuple[str, dict[str, Any]]:
    decision = str(fields.get("decision") or fields.get("status") or "").lower()
    allowed = fields.get("approved") is True or decision in ("allow", "approve", "approved")
    return "permission.resolved", {
        "request_id": _name(fields.get("request_id"), "approval"),
        "decision": "allow" if allowed else "deny",
    }


def _validation(fields: Mapping[str, Any], _prompt: str) -> tuple[str, dict[str, Any]]:
    verdict = str(fields.get("verdict") or fields.get("status") or "").lower()
    passed = fields.get("passed") is True or verdict in ("passed", "pass", "ok", "succeeded")
    attempt = fields.get("attempt")
    attempt = attempt if isinstance(attempt, int) else 1
    return "output.validated", {
        "attempt": max(1, attempt),
        "verdict": "passed" if passed else "failed",
    }


_BUILD: dict[str, Any] = {
    "turn.started": lambda f, prompt: ("turn.started", {"prompt": prompt}),
    "turn.completed": lambda f, _p: ("turn.completed", {"text": f.get("text")}),
    "turn.failed": _failed,
    "turn.cancelled": lambda f, _p: ("turn.cancelled", {"by": "host"}),
    "message.completed": _message,
    "message.delta": _delta,
    "model.requested": lambda f, _p: ("model.requested", {"model": _text(f, "model")}),
    "model.completed": lambda f, _p: (
        "model.completed",
        {"model": _text(f, "model"), "usage": _usage(f.get("usage"))},
    ),
    "thinking.completed": lambda f, _p: ("thinking.completed", {"text": _text(f, "text")}),
    "tool.started": lambda f, _p: (
        "tool.started",
        {
            "call_id": _name(f.get("call_id") or f.get("id"), "call"),
            "name": _name(f.get("name"), "tool"),
        },
    ),
    "tool.completed": lambda f, _p: (
        "tool.completed",
        {
            "call_id": _name(f.get("call_id") or f.get("id"), "call"),
            "name": _name(f.get("name"), "tool"),
            "ok": not f.get("error") and f.get("ok") is not False,
        },
    ),
    "permission.requested": lambda f, _p: (
        "permission.requested",
        {"request_id": _name(f.get("request_id"), "approval"), "summary": "approval requested"},
    ),
    "permission.resolved": _approval,
    "artifact": lambda f, _p: (
        "artifact",
        {"name": _name(f.get("name") or f.get("artifact_id"), "artifact"), "path": _text(f, "uri")},
    ),
    "checkpoint.created": lambda f, _p: (
        "checkpoint.created",
        {"checkpoint_id": _name(f.get("checkpoint_id"), "checkpoint"), "reason": "host"},
    ),
    "output.validated": _validation,
}


# -- ours -> v1 ------------------------------------------------------------------------------


def _v1_data(event: Event, payload: dict[str, Any]) -> dict[str, Any]:
    """The v1 event's data: our payload's fields and the v1 names of those it has."""
    data = dict(payload)
    if event.type == "message.completed":
        data.update(content=payload["text"], message_id=event.event_id)
    elif event.type in ("tool.started", "tool.completed"):
        data.update(tool_call_id=payload["call_id"], tool_name=payload["name"])
    elif event.type.startswith("permission."):
        data["approval_id"] = payload["request_id"]
    elif event.type == "turn.completed":
        data["status"] = "succeeded"
    elif event.type == "turn.failed":
        data.update(status="failed", error=payload["message"], error_type=payload["reason"])
    elif event.type == "turn.cancelled":
        data["status"] = "cancelled"
    elif event.type == "artifact":
        data.update(
            artifact_id=event.event_id,
            kind="file",
            uri=payload["path"] or "",
            media_type=payload["media_type"] or "application/octet-stream",
            metadata={},
        )
    elif event.type == "output.validated":
        data["passed"] = payload["verdict"] == "passed"
    elif event.type == "thinking.completed":
        data["content"] = payload["text"]
    return data


def v1_event(event: Event) -> tuple[str, dict[str, Any]]:
    """One event of ours as Harness Protocol v1 has it: its v1 type (``adapter.<type>`` where
    v1 has none) and data (our payload's fields, with the v1 names of those it has)."""
    kind = V1_NAMES.get(event.type, f"adapter.{event.type}")
    return kind, _v1_data(event, event_to_dict(event)["payload"])


def _v1_event(event: Event, run_id: str, sequence: int, parent: str | None) -> dict[str, Any]:
    kind, data = v1_event(event)
    return {
        "type": kind,
        "data": data,
        "timestamp": epoch_seconds(event.timestamp) or 0.0,
        "session_id": event.session_id,
        "run_id": run_id,
        "protocol_version": PROTOCOL_VERSION,
        "event_id": event.event_id,
        "sequence": sequence,
        "harness_id": event.harness,
        "parent_event_id": event.parent_event_id or parent,
    }


def _turns(events: list[Event]) -> list[tuple[str, list[Event]]]:
    """The session's runs in order: each turn's events, and each host checkpoint alone (v1
    records a checkpoint as a run of its own)."""
    runs: dict[str, list[Event]] = {}
    for event in events:
        if event.turn_id is not None:
            runs.setdefault(event.turn_id, []).append(event)
        elif event.type == "checkpoint.created":
            runs[f"run_{event.event_id}"] = [event]
    return list(runs.items())


def _checkpoint_run(run_id: str, event: Event) -> list[dict[str, Any]]:
    """A host checkpoint as v1 records one: a run of its own, started, the checkpoint, done."""
    out: list[dict[str, Any]] = []
    for suffix, kind in (
        (".start", "run.started"),
        ("", "checkpoint.created"),
        (".end", "run.completed"),
    ):
        item = _v1_event(event, run_id, len(out) + 1, out[-1]["event_id"] if out else None)
        if kind != "checkpoint.created":
            item.update(
                event_id=f"{event.event_id}{suffix}",
                type=kind,
                data={"status": "succeeded", "operation": "checkpoint"},
            )
        out.append(item)
    return out


def _v1_run_events(run_id: str, events: list[Event], imported: bool) -> list[dict[str, Any]]:
    """A run's v1 events; a turn of ours gets v1's user message after its start (a run that
    came from a v1 bundle has its own, or none: a checkpoint run)."""
    if events[0].type == "checkpoint.created" and events[0].turn_id is None:
        return _checkpoint_run(run_id, events[0])
    out: list[dict[str, Any]] = []
    has_user = imported or any(
        isinstance(e.payload, MessageCompleted) and e.payload.role == "user" for e in events
    )
    for event in events:
        out.append(_v1_event(event, run_id, len(out) + 1, out[-1]["event_id"] if out else None))
        if isinstance(event.payload, TurnStarted) and not has_user:  # v1: the user message next
            prompt, user_id = event.payload.prompt, f"{event.event_id}.user"
            data = {"role": "user", "content": prompt, "text": prompt, "message_id": user_id}
            out.append(
                {
                    **out[-1],
                    "type": "message.created",
                    "event_id": user_id,
                    "sequence": len(out) + 1,
                    "parent_event_id": out[-1]["event_id"],
                    "data": data,
                }
            )
    return out


def _capabilities(features: frozenset[str] | None) -> dict[str, bool]:
    """v1 capabilities, claimed only where the harness declares the feature."""
    have = features or frozenset()
    return {
        "streaming": True,
        "resume": "resume" in have,
        "steer": "steer" in have,
        "cancel": "cancel" in have,
        "checkpoint": True,  # every session's workspace checkpoints (harness_core.checkpoints)
        "approvals": "permissions" in have,
        "tools": "tools" in have,
        "usage": "usage" in have,
        "native_export": False,
    }


def _run_record(
    record: SessionRecord, run_id: str, events: list[dict[str, Any]], kept: Mapping[str, Any]
) -> dict[str, Any]:
    terminal = next((e for e in reversed(events) if e["type"] in _TERMINAL_STATUS), None)
    status = "running" if terminal is None else _TERMINAL_STATUS[terminal["type"]]
    prompt = next((e["data"].get("prompt") for e in events if e["type"] == "run.started"), None)
    return {
        "run_id": run_id,
        "session_id": record.session_id,
        "harness": record.ref.harness,
        "flavor": str(kept.get("flavor") or "custom"),
        "provider": str(kept.get("provider") or record.ref.harness),
        "model": str(kept.get("model") or record.model or ""),
        "runtime": str(kept.get("runtime") or record.ref.harness),
        "status": str(kept.get("status") or status),
        "started_at": events[0]["timestamp"],
        "ended_at": None if terminal is None else terminal["timestamp"],
        "parent_run_id": str(kept.get("parent_run_id") or ""),
        "root_run_id": str(kept.get("root_run_id") or ""),
        "prompt_preview": str(kept.get("prompt_preview") or (prompt or "")[:240]),
        "events": events,
        "metadata": dict(kept.get("metadata") or {"protocol_version": PROTOCOL_VERSION}),
    }


def export_superqode(
    store: LedgerStore, session_id: str, features: frozenset[str] | None = None
) -> dict[str, Any]:
    """The session as a v1 bundle (``HarnessSessionBundle.to_dict()``'s shape): each turn a
    run, each host checkpoint a run of its own; session events have no v1 place and are left
    out. ``features``: the harness's declared features (the descriptor's capabilities); a
    session imported from a v1 bundle gets its own descriptor back."""
    record = store.get_session(session_id)
    if record is None:
        raise HarnessError("session-not-found")
    kept = _mapping(record.config.get("superqode"))
    runs_kept = _mapping(kept.get("runs"))
    descriptor = kept.get("descriptor") or {
        "id": record.ref.harness,
        "name": record.ref.harness,
        "description": f"harness_core harness {record.ref.harness}",
        "adapter_version": "1.0",
        "protocol_version": PROTOCOL_VERSION,
        "capabilities": _capabilities(features),
        "metadata": {"exported_by": "harnessplane"},
    }
    runs = []
    for run_id, events in _turns(store.events(session_id)):
        v1 = _v1_run_events(run_id, events, run_id in runs_kept)
        runs.append(_run_record(record, run_id, v1, runs_kept.get(run_id) or {}))
    events_out = [e for run in runs for e in run["events"]]
    metadata = kept.get("session_metadata") or {
        "working_directory": record.workspace or "",
        "model": record.model or "",
    }
    return {
        "protocol_version": PROTOCOL_VERSION,
        "descriptor": descriptor,
        "session": {
            "session_id": record.session_id,
            "harness_id": descriptor["id"],
            "external_session_id": record.vendor_session_id,
            "metadata": dict(metadata),
        },
        "runs": runs,
        "events": events_out,
        "artifacts": [_artifact(e) for e in events_out if e["type"] == "artifact.created"],
        "checkpoints": [
            _checkpoint(record, e) for e in events_out if e["type"] == "checkpoint.created"
        ],
        "exported_at": time.time(),
    }


def _artifact(event: Mapping[str, Any]) -> dict[str, Any]:
    data = event["data"]
    return {
        "artifact_id": data["artifact_id"],
        "kind": data["kind"],
        "uri": data["uri"],
        "name": data["name"],
        "media_type": data["media_type"],
        "metadata": {},
    }


def _checkpoint(record: SessionRecord, event: Mapping[str, Any]) -> dict[str, Any]:
    data = event["data"]
    return {
        "checkpoint_id": data["checkpoint_id"],
        "session_id": record.session_id,
        "harness_id": event["harness_id"],
        "external_checkpoint_id": data["checkpoint_id"],
        "created_at": event["timestamp"],
        "state": {"reason": data.get("reason"), "turn_id": data.get("turn_id")},
    }
