"""canary: an injected secret and a host-environment secret appear in no record."""

from __future__ import annotations

import contextlib
import json
import os

from harness_hookspecs import MessageDelta

from ...serialize import event_to_dict
from ..check import Evidence, Outcome, check, verdict


@check("canary", "an injected secret and a host-environment secret appear in no record")
def canary(evidence: Evidence) -> Outcome:
    run = evidence.run
    secrets_ = {"injected credential": run.probe.secret, "host environment": run.env_secret}
    places: dict[str, bytes] = {}
    places["streamed events"] = json.dumps(
        [event_to_dict(e) for e in evidence.events], ensure_ascii=False
    ).encode()
    places["delivered events"] = json.dumps(
        [event_to_dict(e) for t in evidence.turns for e in t.seen], ensure_ascii=False
    ).encode()
    places["streamed text"] = "\n".join(
        "".join(e.payload.text for e in t.seen if isinstance(e.payload, MessageDelta))
        for t in evidence.turns
    ).encode()
    places["ledger events"] = json.dumps(evidence.stored, ensure_ascii=False).encode()
    for path, data in run.ledger_files_open.items():
        places[f"{os.path.basename(path)} (open)"] = data
    for path, data in run.ledger_bytes().items():
        places[f"{os.path.basename(path)} (closed)"] = data
    if run.export_bundle is not None:
        with contextlib.suppress(TypeError, ValueError):
            places["export"] = json.dumps(run.export_bundle, ensure_ascii=False).encode()
    problems = []
    for label, secret in secrets_.items():
        needle = secret.encode()
        for place, data in places.items():
            if needle in data:
                problems.append(f"the {label} canary appears in the {place}")
    if not run.credential_injected and run.main is not None:
        problems.append("the canary credential never reached the session environment")
    sqlite = " and the SQLite files" if run.ledger_files_open else ""
    return verdict(
        problems,
        f"neither canary in events, deliveries, ledger{sqlite} or export",
        run.open_error or run.descriptor_error,
    )
