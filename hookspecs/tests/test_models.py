"""The contract: bounds, the closed union, reasons, projection, workspace required for local."""

from __future__ import annotations

import subprocess
import sys

import attrs
import pytest
from harness_hookspecs import (
    EVENT_TYPES,
    FEATURES,
    MESSAGES,
    REASONS,
    HarnessDescriptor,
    HarnessError,
    OpenSessionRequest,
    ResumeSessionRequest,
    RunTurnRequest,
    SandboxSpec,
    SessionRef,
    Status,
    ToolStarted,
    TurnFailed,
    Usage,
    UsageReported,
    assert_supported,
    make_payload,
)


def test_reasons_include_the_seed_set_and_messages_are_fixed():
    seed = {
        "unsupported-target",
        "unsupported-feature",
        "invalid-request",
        "authentication-required",
        "provider-unavailable",
        "session-not-found",
        "session-closed",
        "turn-not-found",
        "turn-active",
        "timeout",
        "provider-failed",
    }
    assert seed <= set(REASONS)
    assert set(MESSAGES) == set(REASONS)
    error = HarnessError("timeout")
    assert error.reason == "timeout"
    assert str(error) == "timeout: the turn exceeded its deadline"
    with pytest.raises(ValueError):
        HarnessError("made-up-reason")


def test_error_hint_with_control_characters_or_too_long_is_dropped():
    assert HarnessError("provider-failed", "line\nbreak").hint is None
    assert HarnessError("provider-failed", "x" * 241).hint is None
    assert HarnessError("provider-failed", "safe summary").hint == "safe summary"


def test_failed_event_message_is_fixed_by_reason_whatever_was_passed():
    failed = TurnFailed(reason="provider-failed", message="Traceback: secret stuff")
    assert failed.message == MESSAGES["provider-failed"]
    with pytest.raises(ValueError):
        TurnFailed(reason="not-a-reason")


@pytest.mark.parametrize(
    "message",
    ["", "x" * 241, "bell\x07", "new\nline", "\x9b"],
    # plain ids: mutmut cannot select a test whose id pytest escaped
    ids=["empty", "241-chars", "bell", "newline", "c1-csi"],
)
def test_status_message_bounds(message):
    with pytest.raises(ValueError):
        Status(message=message)


def test_status_message_at_the_bounds():
    assert Status(message="x").message == "x"
    assert len(Status(message="y" * 240).message) == 240


@pytest.mark.parametrize(
    ("provider", "ok"),
    [("a", True), ("x" * 64, True), ("x" * 65, False), ("", False), ("Bad Name", False)],
)
def test_provider_bounds(provider, ok):
    if ok:
        assert SessionRef(provider=provider, target="local", session_id="s").provider == provider
    else:
        with pytest.raises(ValueError):
            SessionRef(provider=provider, target="local", session_id="s")


def test_session_and_turn_id_bounds_and_verbatim_preservation():
    odd = "Thread/ID:with spaces & ümlauts=" + "z" * 900
    ref = SessionRef(provider="codex", target="local", session_id=odd)
    assert ref.session_id == odd
    with pytest.raises(ValueError):
        SessionRef(provider="codex", target="local", session_id="x" * 1025)
    with pytest.raises(ValueError):
        SessionRef(provider="codex", target="local", session_id="tab\tid")
    RunTurnRequest(session=ref, turn_id="t" * 128, prompt="p")
    with pytest.raises(ValueError):
        RunTurnRequest(session=ref, turn_id="t" * 129, prompt="p")


def test_local_open_and_resume_require_a_workspace():
    with pytest.raises(ValueError, match="workspace"):
        OpenSessionRequest(harness="echo")
    assert OpenSessionRequest(harness="echo", target="cloud").workspace is None
    ref = SessionRef(provider="echo", target="local", session_id="s1")
    with pytest.raises(ValueError, match="workspace"):
        ResumeSessionRequest(session=ref)
    assert ResumeSessionRequest(session=ref, workspace="/w").workspace == "/w"


def test_dangerous_posture_with_open_network_is_refused():
    with pytest.raises(ValueError, match="dangerous"):
        OpenSessionRequest(harness="echo", workspace="/w", posture="dangerous")
    OpenSessionRequest(
        harness="echo", workspace="/w", posture="dangerous", sandbox=SandboxSpec(network="none")
    )


def test_models_are_frozen():
    ref = SessionRef(provider="echo", target="local", session_id="s")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        ref.session_id = "other"  # type: ignore[misc]


def test_descriptor_targets_and_features_are_checked():
    d = HarnessDescriptor(provider="x", targets=["local"], features=["resume"])
    assert d.features == frozenset({"resume"})
    with pytest.raises(ValueError):
        HarnessDescriptor(provider="x", targets=["mars"])
    with pytest.raises(ValueError):
        HarnessDescriptor(provider="x", targets=["local"], features=["telepathy"])
    with pytest.raises(ValueError):
        HarnessDescriptor(provider="x", targets=[])
    assert set(FEATURES) >= {"resume", "cancel", "usage", "mcp"}


def test_assert_supported():
    d = HarnessDescriptor(provider="x", targets=["local"], features=["cancel"])
    assert_supported(d, "local", "cancel")
    with pytest.raises(HarnessError) as info:
        assert_supported(d, "cloud")
    assert info.value.reason == "unsupported-target"
    with pytest.raises(HarnessError) as info:
        assert_supported(d, "local", "resume")
    assert info.value.reason == "unsupported-feature"


def test_the_union_is_closed_and_extra_fields_are_projected_out():
    with pytest.raises(ValueError, match="unknown event type"):
        make_payload("provider.secret_dump", {})
    payload = make_payload(
        "tool.started",
        {"call_id": "c1", "name": "Bash", "raw_arguments": "rm -rf /", "env": {"KEY": "v"}},
    )
    assert payload == ToolStarted(call_id="c1", name="Bash")
    assert not hasattr(payload, "raw_arguments")
    usage = make_payload("usage", {"usage": {"input_tokens": 3, "vendor_blob": "x"}})
    assert usage == UsageReported(usage=Usage(input_tokens=3))
    assert "turn.completed" in EVENT_TYPES and "provider.secret_dump" not in EVENT_TYPES


@pytest.mark.parametrize("value", [-1, 2**53, 1.5, True, "3"])
def test_usage_must_be_non_negative_safe_integers(value):
    with pytest.raises((ValueError, TypeError)):
        Usage(input_tokens=value)


def test_usage_absent_means_unknown_not_zero():
    assert Usage().input_tokens is None


def test_importing_hookspecs_starts_no_runtime():
    code = (
        "import sys, harness_hookspecs;"
        "bad=[m for m in sys.modules if m.split('.')[0] in "
        "('harness_core','anyio','cattrs','asyncio','sqlite3','subprocess')];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
