"""Redactor edge cases: bounded fields stay valid after redaction."""

from __future__ import annotations

from harness_hookspecs import Artifact, Status, ToolStarted

from harness_core.redaction import REDACTED, Redactor


def test_redaction_that_would_overflow_a_bounded_field_is_clipped():
    redactor = Redactor()
    redactor.add("s3cr3t")  # 6 characters: shorter than "[REDACTED]"
    name = "x" * 122 + "s3cr3t"  # 128 characters: the maximum
    payload = redactor.payload(ToolStarted(call_id="c" * 250 + "s3cr3t", name=name))
    assert "s3cr3t" not in payload.name and "s3cr3t" not in payload.call_id
    assert len(payload.name) == 128 and payload.name.startswith("x" * 122 + "[REDAC")
    assert len(payload.call_id) == 256


def test_redaction_keeps_fields_that_fit():
    redactor = Redactor()
    redactor.add("another-secret")
    payload = redactor.payload(Artifact(name="a-another-secret", path="/w/another-secret/f"))
    assert payload.name == f"a-{REDACTED}"
    assert payload.path == f"/w/{REDACTED}/f"
    status = redactor.payload(Status(message="x" * 226 + "another-secret"))
    assert "another-secret" not in status.message and len(status.message) <= 240


def test_payload_without_secrets_is_returned_unchanged():
    redactor = Redactor()
    redactor.add("another-secret")
    status = Status(message="nothing to see")
    assert redactor.payload(status) is status
