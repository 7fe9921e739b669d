"""Redactor edge cases: bounded fields stay valid after redaction."""

from __future__ import annotations

import pytest
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


# --- Each rule by name (mutation testing: tools/mutation.py redaction) ---------------------


class _Resolver:
    """A credential resolver as a plugin registers it; ``known`` is its ``known_values``."""

    name = "test"

    def __init__(self, known=None, *, fails: bool = False) -> None:
        if known is not None or fails:
            self.known_values = self._fail if fails else (lambda: known)

    @staticmethod
    def _fail():
        raise RuntimeError("the vault is sealed")

    async def resolve(self, request):
        return []


def test_every_resolvers_known_values_are_registered_whatever_the_ones_before_did():
    from harness_core.redaction import add_known_secrets

    redactor = Redactor()
    resolvers = [
        _Resolver(),  # no known_values at all
        _Resolver(fails=True),  # cannot list its values
        _Resolver(["vault-token-0001"]),
        _Resolver(),
        _Resolver(["vault-token-0002", "tiny"]),
    ]
    add_known_secrets(redactor, resolvers)
    assert redactor.text("vault-token-0001 vault-token-0002 tiny") == f"{REDACTED} {REDACTED} tiny"


def test_a_delta_ending_in_all_but_the_last_character_of_a_secret_is_held_back():
    secret = "hunter2-correct-horse"  # no key shape: only the registered value redacts it
    redactor = Redactor()
    redactor.add(secret)
    assert redactor.partial_suffix("say " + secret[:-1]) == len(secret) - 1
    assert redactor.hold_back("say " + secret[:-1]) == len(secret) - 1
    assert redactor.partial_suffix("say " + secret[:1]) == 1
    assert redactor.partial_suffix("say " + secret) == 0  # whole: redacted, nothing to wait for
    assert redactor.partial_suffix("say nothing") == 0


def test_a_secret_streamed_as_all_but_its_last_character_then_the_rest_is_redacted(
    make_controller, workspace
):
    import anyio

    from harness_core.function_harness import FunctionHarness

    secret = "hunter2-correct-horse"

    async def stream(message, session):
        yield "say " + secret[:-1]
        yield secret[-1] + " please"

    class Register:
        from harness_hookspecs import hookimpl

        @hookimpl
        def register_credential_resolvers(self, register):
            register(_Resolver([secret]))

    async def main():
        async with make_controller(FunctionHarness("streamer", stream), Register()) as c:
            ref = await c.open_session(harness="streamer", workspace=workspace)
            return await c.run_turn(ref, "go")

    result = anyio.run(main)
    deltas = [e.payload.text for e in result.events if e.type == "message.delta"]
    assert "".join(deltas) == f"say {REDACTED} please"
    assert all(secret[:-1] not in delta for delta in deltas)


def test_an_overlapping_longer_secret_is_redacted_whole_not_its_shorter_prefix():
    redactor = Redactor()
    redactor.add("tok-abcdef")
    redactor.add("tok-abcdef-ghijkl")
    assert redactor.text("a tok-abcdef-ghijkl b") == f"a {REDACTED} b"  # no "-ghijkl" tail
    assert redactor.text("a tok-abcdef b") == f"a {REDACTED} b"
    other = Redactor()  # the order they were added in does not matter
    other.add("tok-abcdef-ghijkl")
    other.add("tok-abcdef")
    assert other.text("a tok-abcdef-ghijkl b") == f"a {REDACTED} b"


def test_a_prefix_of_a_longer_secret_at_the_end_of_a_delta_is_held_back_whole():
    # "tok-abcdef" is whole in the delta, but the delta may go on to "tok-abcdef-ghijkl":
    # hold back from its start, or the longer secret's tail streams out after "[REDACTED]".
    redactor = Redactor()
    redactor.add("tok-abcdef")
    redactor.add("tok-abcdef-ghijkl")
    assert redactor.hold_back("a tok-abcdef") == len("tok-abcdef")
    assert redactor.hold_back("a tok-abcdef-gh") == len("tok-abcdef-gh")
    assert redactor.hold_back("a tok-abcdef-ghijkl") == 0


def test_short_and_non_string_values_are_not_secrets():
    redactor = Redactor()
    for value in ("", "abc", "12345", None, 123456789, b"bytes-value"):
        redactor.add(value)  # type: ignore[arg-type]
    assert not redactor.has_secrets
    assert redactor.text("abc 12345 123456789") == "abc 12345 123456789"
    redactor.add("123456")  # six characters: the shortest secret
    assert redactor.has_secrets
    assert redactor.text("x 123456 y") == f"x {REDACTED} y"


def test_every_form_of_a_six_character_secret_is_redacted():
    import base64

    redactor = Redactor()
    redactor.add("Ab3$eF")
    for form in ("AB3$EF", "ab3$ef", base64.b64encode(b"Ab3$eF").decode(), "Ab3%24eF"):
        assert redactor.text(f"[{form}]") == f"[{REDACTED}]", form


def test_padded_and_unpadded_base64_forms_are_redacted_whole():
    import base64

    secret = "pw-0001-key"  # 11 bytes: its base64 ends in "="
    padded = base64.b64encode(secret.encode()).decode()
    assert padded.endswith("=")
    redactor = Redactor()
    redactor.add(secret)
    assert redactor.text(f"({padded})") == f"({REDACTED})"
    assert redactor.text(f"({padded.rstrip('=')})") == f"({REDACTED})"


def test_only_a_secrets_forms_are_redacted_not_a_prefix_of_one():
    redactor = Redactor()
    redactor.add("correct-horseX")
    assert redactor.text("CORRECT-HORSEX") == REDACTED
    assert redactor.text("CORRECT-HORSE battery") == "CORRECT-HORSE battery"


def test_encodings_are_the_other_forms_not_the_secret_itself():
    from harness_core.redaction import encodings

    forms = encodings("Secret-Value/1")
    assert "Secret-Value/1" not in forms
    assert {"SECRET-VALUE/1", "secret-value/1", "Secret-Value%2F1"} <= forms
    # a form that is the secret itself (its lower case, here) is not another form
    assert "secret-value" not in encodings("secret-value")


def test_a_secret_with_a_lone_surrogate_is_registered_and_redacted():
    # os.environ decodes bytes that are not UTF-8 as lone surrogates (surrogateescape).
    secret = "tok-\udcff-abcdef"
    redactor = Redactor()
    redactor.add(secret)
    assert redactor.text(f"a {secret} b") == f"a {REDACTED} b"


def test_lone_surrogates_are_replaced_and_other_text_is_left_alone():
    from harness_hookspecs import MessageDelta

    from harness_core.redaction import REPLACEMENT

    redactor = Redactor()
    redactor.add("another-secret")
    for lone in ("\ud800", "\udbff", "\udc00", "\udfff"):  # high and low surrogates
        status = redactor.payload(Status(message=f"bad {lone} byte"))
        assert status.message == f"bad {REPLACEMENT} byte", repr(lone)
    delta = redactor.payload(MessageDelta(text="x\udcffy"))
    assert delta.text == f"x{REPLACEMENT}y"
    plain = Status(message="déjà vu, naïve café")  # not ASCII, nothing to replace
    assert redactor.payload(plain) is plain


def test_a_field_exactly_a_six_character_secret_is_redacted():
    from harness_hookspecs import MessageDelta

    redactor = Redactor()
    redactor.add("s3cr3t")
    assert redactor.payload(Status(message="s3cr3t")).message == REDACTED
    assert redactor.payload(MessageDelta(text="s3cr3t")).text == REDACTED
    assert redactor.payload(Status(message="key s3cr3t")).message == f"key {REDACTED}"


def test_redacted_summaries_messages_and_hints_keep_all_their_bound_allows():
    from harness_hookspecs import TurnFailed

    redactor = Redactor()
    redactor.add("s3cr3t")
    text = "x" * 232 + "s3cr3t"  # 238: "[REDACTED]" makes it 242, over the bound of 240
    cut = ("x" * 232 + REDACTED)[:240]
    assert redactor.payload(Status(message=text)).message == cut
    assert redactor.payload(ToolStarted(call_id="c1", name="t", summary=text)).summary == cut
    failed = redactor.payload(TurnFailed(reason="provider-failed", message="m", hint=text))
    assert failed.hint == cut


@pytest.mark.parametrize(
    "shape",
    [
        "sk-" + "a" * 16,
        "sk-ant-api03-" + "a" * 16,
        "sk-proj-" + "B_-" * 6,
        "AKIA" + "ABCDEFGHIJKLMNO7",
        *("gh" + kind + "_" + "c" * 30 for kind in "pousr"),
        "github_pat_" + "d_" * 15,
        *("xox" + kind + "-" + "1234-abcde" for kind in "abpr"),
        "Bearer " + "e" * 16,
        "bearer\t" + "A1._~+/-" * 2 + "==",
        "BEARER " + "f" * 16,
    ],
)
def test_each_key_shape_is_redacted_without_being_registered(shape):
    assert Redactor().text(f"key={shape} end") == f"key={REDACTED} end"


@pytest.mark.parametrize(
    "text",
    [
        "sk-" + "a" * 15,  # one short
        "AKIA" + "abcdefghijklmnop",  # lower case
        "AKIA" + "ABCDEFGHIJKLMNO",  # one short
        "ghx_" + "c" * 30,  # no such GitHub token kind
        "ghp_" + "c" * 29,
        "github_pat_" + "d" * 29,
        "xoxz-1234-abcde",  # no such Slack token kind
        "xoxb-12345678",  # one short
        "Bearer " + "e" * 15,
        "Bearer: " + "e" * 20,
    ],
)
def test_text_merely_like_a_key_shape_is_left_alone(text):
    assert Redactor().text(text) == text
