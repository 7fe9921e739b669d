"""``harness events ID --tree`` and the export of a session that delegated (issue 32): the
child sessions under the call that started each, their events indented; the export carries the
children's bundles and the total usage."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio

from harness_core import Controller, plugins_from
from harness_core.delegation import ChildProfile, Delegation

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from cli_run import harness
from test_delegation import boss, helper, looper


def delegated(tmp_path: Path) -> tuple[str, str]:
    """A ledger where boss delegated to helper once and looper chained two deep; the
    ledger URL and the boss session's id."""
    url = f"sqlite:///{tmp_path}/tree.sqlite"

    async def main() -> str:
        async with Controller(
            plugins=plugins_from([boss, helper, looper]),
            ledger=url,
            state_dir=tmp_path / "state",
            delegation=Delegation({n: ChildProfile() for n in ("helper", "looper")}),
        ) as c:
            ref = await c.open_session(harness="boss", workspace=str(tmp_path))
            await c.run_turn(ref, "helper first question")
            await c.run_turn(ref, "looper deep")
            await c.close_session(ref)
            return ref.session_id

    return url, anyio.run(main)


def test_events_tree_prints_children_under_the_call_that_started_them(cli_env, tmp_path):
    url, parent = delegated(tmp_path)
    out = harness(cli_env, "events", parent, "--tree", "--ledger", url)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    children = [i for i, line in enumerate(lines) if line.lstrip().startswith("child ")]
    # helper and looper under boss (depth 1), looper's own child (depth 2)
    assert [lines[i].split()[2] for i in children] == ["helper", "looper", "looper"]
    assert [len(lines[i]) - len(lines[i].lstrip()) for i in children] == [4, 4, 8]
    # each child right after its parent's tool.started
    assert lines[children[0] - 1].lstrip().split()[1] == "tool.started"
    helper_lines = lines[children[0] + 1 : children[1]]
    assert helper_lines[0].startswith("        1  session.opened")
    assert any("helper says: first question" in line for line in helper_lines)
    # the parent's own events are not indented (only the sequence is right-aligned in 5)
    assert lines[-1].split()[1] == "session.closed" and lines[-1].startswith("   14  ")

    as_json = harness(cli_env, "events", parent, "--tree", "--json", "--ledger", url)
    events = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert sorted({e["depth"] for e in events}) == [0, 1, 2]
    plain = harness(cli_env, "events", parent, "--ledger", url)
    assert "session.opened" in plain.stdout
    assert plain.stdout.count("session.opened") == 1 and len(plain.stdout.splitlines()) == 14


def test_the_export_holds_the_children_and_the_total_usage(cli_env, tmp_path):
    url, parent = delegated(tmp_path)
    out = harness(cli_env, "export", parent, "--json", "--ledger", url)
    assert out.returncode == 0, out.stderr
    bundle = json.loads(out.stdout)
    children = bundle["children"]
    assert [c["session"]["ref"]["provider"] for c in children] == ["helper", "looper"]
    assert all(c["session"]["parent_session_id"] == parent for c in children)
    assert "format" not in children[0] and children[1]["children"][0]["session"]["ref"]
    # boss's own two turns cost 0.001 each, the helper's 0.004; looper reports nothing
    assert bundle["usage"]["cost_usd"] == 0.002
    assert abs(bundle["total_usage"]["cost_usd"] - 0.006) < 1e-9
