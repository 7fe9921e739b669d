"""raw-fields: extra provider fields are projected out (in the stream and in the export)."""

from __future__ import annotations

import attrs
from harness_hookspecs import PAYLOAD_TYPES

from ..check import Evidence, Outcome, check, verdict
from ..rules import ENVELOPE_KEYS


@check("raw-fields", "extra provider fields are projected out")
def raw_fields(evidence: Evidence) -> Outcome:
    problems = list(evidence.probe.violations.get("raw-fields", []))
    bundle = evidence.run.export_bundle
    if bundle is not None:
        for data in bundle.get("events", []) or []:
            if not isinstance(data, dict):
                continue
            if set(data) != ENVELOPE_KEYS:
                problems.append(f"exported event {data.get('sequence')}: envelope keys differ")
                continue
            cls = PAYLOAD_TYPES.get(str(data.get("type")))
            payload = data.get("payload")
            if cls is not None and isinstance(payload, dict):
                known = {a.name for a in attrs.fields(cls)}
                extra = sorted(set(payload) - known)
                if extra:
                    problems.append(
                        f"exported event {data.get('sequence')}: extra payload fields {extra}"
                    )
    return verdict(problems, "no provider fields beyond the contract's", evidence.nothing)
