"""The readable run view, fed events directly: approvals, statuses, artifacts, messages without
deltas, failures - each a compact line, the answer shown once."""

from __future__ import annotations

import io

from harness_hookspecs import Event, Usage
from harness_hookspecs import events as ev

from harness_core.cli.errors import unwrap
from harness_core.cli.output import Out
from harness_core.cli.view import RunView
from harness_core.transcript import format_event


def _events(*payloads):
    return [
        Event(
            event_id=f"e{i}",
            sequence=i,
            session_id="s-1",
            turn_id=None if i == 1 else "t1",
            harness="demo",
            timestamp="2026-01-01T00:00:00.000000Z",
            type=p.TYPE,
            payload=p,
        )
        for i, p in enumerate(payloads, start=1)
    ]


def _render(*payloads):
    text, chrome = io.StringIO(), io.StringIO()
    view = RunView(Out(text, colour=False), Out(chrome, colour=False))
    events = _events(*payloads)
    view.session(events[0])
    for event in events[1:]:
        view.show(event)
    return view, text, chrome


def test_approvals_status_artifacts_and_an_answer_without_deltas():
    view, text, chrome = _render(
        ev.SessionOpened(provider="demo", target="local", model="m-1"),
        ev.TurnStarted(prompt="go"),
        ev.Status(message="thinking"),
        ev.PermissionRequested(request_id="p1", summary="run rm -rf build", tool="Bash"),
        ev.PermissionResolved(request_id="p1", decision="deny", source="policy"),
        ev.Artifact(name="report.md", path="/tmp/report.md"),
        ev.MessageCompleted(text="All done."),
        ev.TurnCompleted(text="All done."),
    )
    view.summary("completed", Usage(input_tokens=5, output_tokens=7, cost_usd=2.5), 75.0)
    assert text.getvalue() == "All done.\n"
    assert chrome.getvalue().splitlines() == [
        "session s-1  (demo, posture auto, model m-1)",
        "- thinking",
        "? approval p1: run rm -rf build",
        "? approval p1: deny by policy",
        "+ artifact report.md (/tmp/report.md)",
        "completed | 5 in / 7 out tokens, $2.50 | 1m15s",
    ]


def test_a_failure_ends_the_streamed_line_and_says_why():
    view, text, chrome = _render(
        ev.SessionResumed(provider="demo", target="local"),
        ev.MessageDelta(text="partial"),
        ev.TurnFailed(reason="timeout"),
    )
    view.summary("failed", None, 1.25)
    assert text.getvalue() == "partial\n"
    assert chrome.getvalue().splitlines() == [
        "session s-1  (demo, resumed)",
        "failed: timeout: the turn exceeded its deadline",
        "failed | usage unknown | 1.2s",
    ]


def test_the_per_event_line_and_group_unwrapping():
    (event,) = _events(ev.TurnFailed(reason="provider-failed", hint="exit 3"))
    assert format_event(event) == (
        "    1  turn.failed           provider-failed: the provider failed (exit 3)"
    )
    from harness_hookspecs import HarnessError

    inner = HarnessError("session-not-found")
    assert unwrap(ExceptionGroup("g", [ExceptionGroup("h", [inner])])) is inner
    pipe = BrokenPipeError()
    assert unwrap(ExceptionGroup("g", [pipe])) is pipe


def test_a_carriage_return_cannot_overwrite_a_one_line_view():
    # "I approve nothing\rALL APPROVED" showed on a terminal as "ALL APPROVEDothing"
    prompt, answer = _events(
        ev.TurnStarted(prompt="I approve nothing\rALL APPROVED"),
        ev.MessageCompleted(text="done\r\nnext"),
    )
    assert format_event(prompt) == "    1  turn.started          I approve nothing\\rALL APPROVED"
    assert format_event(answer).endswith("[assistant] done\\r\\nnext")
