"""descriptor: the descriptor is valid, stable and speaks this protocol version."""

from __future__ import annotations

from ..check import Evidence, Outcome, check, fail, verdict


@check("descriptor", "the descriptor is valid, stable and speaks this protocol version")
def descriptor(evidence: Evidence) -> Outcome:
    run = evidence.run
    if run.descriptor_error is not None:
        return fail(run.descriptor_error)
    d = run.descriptor
    assert d is not None
    features = ", ".join(sorted(d.features)) or "none"
    return verdict(
        run.descriptor_problems,
        f"{d.harness} {d.version or ''} protocol {d.protocol_version}, "
        f"targets {', '.join(sorted(d.targets))}, features {features}".replace("  ", " "),
    )
