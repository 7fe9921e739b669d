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


def test_common_encodings_of_a_secret_are_redacted():
    import base64
    from urllib.parse import quote

    secret = "hunter2-Pa$$ w0rd/+="
    redactor = Redactor()
    redactor.add(secret)
    raw = secret.encode()
    for form in (
        base64.b64encode(raw).decode(),
        base64.b64encode(raw).decode().rstrip("="),
        base64.urlsafe_b64encode(raw).decode(),
        raw.hex(),
        raw.hex().upper(),
        quote(secret, safe=""),
        secret.upper(),
    ):
        assert form not in redactor.text(f"before {form} after"), form


async def _split_secret_harness(message, session):
    from harness_hookspecs import Status

    yield "the key is sk-live-"
    yield Status(message="between the pieces")
    yield "0123456789abcdef and more"


def test_a_secret_split_across_deltas_with_an_event_between_is_redacted(make_controller, workspace):
    import anyio

    from harness_core.function_harness import FunctionHarness

    class Resolver:
        name = "known"

        async def resolve(self, request):
            return []  # grants nothing to this session ...

        def known_values(self):
            return ["sk-live-0123456789abcdef"]  # ... but knows this value

    class Register:
        from harness_hookspecs import hookimpl

        @hookimpl
        def register_credential_resolvers(self, register):
            register(Resolver())

    adapter = FunctionHarness("splitter", _split_secret_harness)

    async def main():
        async with make_controller(adapter, Register()) as c:
            ref = await c.open_session(harness="splitter", workspace=workspace)
            result = await c.run_turn(ref, "go")
            return result, c.export(ref.session_id)

    result, bundle = anyio.run(main)
    assert result.ok
    text = "".join(e.payload.text for e in result.events if e.type == "message.delta")
    assert "0123456789abcdef" not in text and REDACTED in text
    assert "0123456789abcdef" not in repr(bundle)
    types = [e.type for e in result.events]
    assert "status" in types


def test_the_controller_hands_out_an_open_sessions_redactor(make_controller, workspace):
    """``Controller.redactor``: what a host (the Temporal worker) redacts with before anything
    of the session leaves it; an unknown or closed session is refused in one line."""
    import anyio
    import pytest
    from harness_hookspecs import HarnessError, hookimpl

    from harness_core.function_harness import FunctionHarness

    class Resolver:
        name = "known"

        async def resolve(self, request):
            return []

        def known_values(self):
            return ["sk-live-0123456789abcdef"]

    class Register:
        @hookimpl
        def register_credential_resolvers(self, register):
            register(Resolver())

    async def reply(message, session):
        return "ok"

    async def main():
        async with make_controller(FunctionHarness("plain", reply), Register()) as c:
            ref = await c.open_session(harness="plain", workspace=workspace)
            text = c.redactor(ref).text("token sk-live-0123456789abcdef here")
            with pytest.raises(HarnessError) as unknown:
                c.redactor("no-such-session")
            await c.close_session(ref)
            with pytest.raises(HarnessError) as closed:
                c.redactor(ref)
            return text, unknown.value.reason, closed.value.reason

    text, unknown, closed = anyio.run(main)
    assert text == f"token {REDACTED} here"
    assert (unknown, closed) == ("session-not-found", "session-closed")


def test_hold_back_never_cuts_a_whole_secret_whose_tail_starts_another_form():
    # The hex form of "CANARY-..." starts with "43" (the hex of "C"): a secret ending in "4"
    # once made the stream hold back that "4" and record the rest of the secret unredacted.
    secret = "CANARY-" + "ab" * 11 + "4"
    redactor = Redactor()
    redactor.add(secret)
    for text in (f"delta {secret}", secret, f"{secret} and {secret}"):
        keep = redactor.hold_back(text)
        emitted = redactor.text(text[: len(text) - keep])
        assert secret[:-1] not in emitted, (text, keep)
        assert redactor.partial_suffix(text) >= 1  # the trap: a suffix that starts a form
    # A real prefix at the end is still held back (a secret split across two deltas).
    assert redactor.hold_back("look: " + secret[:10]) == 10
