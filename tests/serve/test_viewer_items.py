"""The viewer's fold and server rendering of the full record: thinking (one collapsed block,
its count when kept out of the ledger), model steps and validation verdicts."""

from __future__ import annotations

from harness_hookspecs import (
    ModelCompleted,
    OutputValidated,
    ThinkingCompleted,
    ThinkingDelta,
    Usage,
)

from harness_core.serve.viewer import render_item
from harness_core.transcript import TurnView


def test_the_full_record_folds_into_items_and_renders_escaped():
    turn = TurnView(turn_id="t1", prompt="p", started_at="")
    for payload in (
        ThinkingDelta(text="a <b>"),
        ThinkingDelta(text="plan"),
        ThinkingCompleted(text="a <b>plan"),
        ThinkingCompleted(text=None, characters=12),
        ModelCompleted(model="m", usage=Usage(input_tokens=5, output_tokens=2), duration_ms=9),
        OutputValidated(attempt=1, verdict="failed", reason="enum at $.step"),
        OutputValidated(attempt=2, verdict="passed"),
    ):
        turn.apply(payload)
    kinds = [(item.kind, item.text) for item in turn.items]
    assert kinds[:2] == [("thinking", "a <b>plan"), ("thinking", "(12 characters, not kept)")]
    assert [k for k, _ in kinds[2:]] == ["step", "validation", "validation"]
    html = [render_item(item, None) for item in turn.items]
    assert html[0].startswith('<details class="thinking">') and "a &lt;b&gt;plan" in html[0]
    assert " open" not in html[0]
    assert "model step" in html[2] and "9 ms" in html[2]
    assert "answer failed" in html[3] and "attempt 1 failed: enum at $.step" in html[3]
    assert "answer passed" in html[4]
