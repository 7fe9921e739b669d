"""SuperQode Harness Protocol v1 bundles, both ways, without superqode installed: a session
superqode 2.25 made and exported (``superqode-2.25-session.json``, written by
``plugins/superqode-adapter/tests/superqode_side.py make-session``: a direct Python harness, a
turn with a tool call, a turn that fails, a checkpoint) imported with its ids, order and
lineage kept, replayed and listed; ``harness export --format superqode`` of it and of a native
session; bad v1 bundles one line, nothing written. (The round trip through superqode's own
reader is in plugins/superqode-adapter/tests.)"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_run import harness

BUNDLE = Path(__file__).with_name("superqode-2.25-session.json")


def _rows(path: Path) -> int:
    if not path.exists():
        return 0
    with sqlite3.connect(path) as db:
        return db.execute("SELECT count(*) FROM events").fetchone()[0]


@pytest.fixture
def imported(cli_env):
    out = harness(cli_env, "import", str(BUNDLE), "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(BUNDLE.read_text()), json.loads(out.stdout)


def test_a_superqode_session_keeps_its_ids_order_and_lineage(cli_env, imported):
    source, facts = imported
    session_id = source["session"]["session_id"]
    # ours adds session.opened: v1 has no session events
    assert facts == {"session_id": session_id, "harness": "team-reviewer", "events": 17}
    events = [
        json.loads(line)
        for line in harness(cli_env, "events", session_id, "--json").stdout.splitlines()
    ]
    assert events[0]["type"] == "session.opened"
    rows = source["events"]
    assert [e["event_id"] for e in events[1:]] == [r["event_id"] for r in rows]
    assert [e["turn_id"] for e in events[1:]] == [r["run_id"] for r in rows]
    assert [e["parent_event_id"] for e in events[1:]] == [r["parent_event_id"] for r in rows]
    assert [e["sequence"] for e in events] == list(range(1, 18))
    assert [e["type"] for e in events[1:10]] == [
        "turn.started",
        "message.completed",
        "model.requested",
        "tool.started",
        "tool.completed",
        "message.delta",
        "model.completed",
        "message.completed",
        "turn.completed",
    ]
    first = {e["type"]: e["payload"] for e in events[1:10]}
    assert first["turn.started"] == {"prompt": "Review the diff"}
    assert first["tool.started"]["call_id"] == "call_1"
    assert first["tool.started"]["name"] == "read_file"
    assert first["turn.completed"]["text"] == "reviewed: Review the diff"
    failed = next(e for e in events if e["type"] == "turn.failed")
    # the failure's raw text stays out; its exception class is the hint
    assert failed["payload"]["reason"] == "provider-failed"
    assert failed["payload"]["hint"] == "RuntimeError"
    ledger = Path(cli_env["HARNESS_LEDGER"].removeprefix("sqlite:///"))
    assert b"secret upstream text" not in ledger.read_bytes()
    assert "secret upstream text" in BUNDLE.read_text()  # (it was there to leave out)
    checkpoint = next(e for e in events if e["type"] == "checkpoint.created")
    assert checkpoint["payload"]["checkpoint_id"] == source["checkpoints"][0]["checkpoint_id"]


def test_the_imported_session_is_listed_and_replayed(cli_env, imported):
    source, _ = imported
    session_id = source["session"]["session_id"]
    listed = [
        json.loads(line) for line in harness(cli_env, "sessions", "--json").stdout.splitlines()
    ]
    assert [s["ref"]["session_id"] for s in listed] == [session_id]
    # stored closed, as every import is: a bundle's config is not this host's to run
    assert listed[0]["turns"] == 3 and listed[0]["state"] == "closed"
    replay = harness(cli_env, "replay", session_id)
    assert replay.returncode == 0, replay.stderr
    lines = replay.stdout.splitlines()
    assert len(lines) == 17
    assert "tool.started" in lines[4] and "read_file" in lines[4]
    assert "turn.failed" in lines[13] and "RuntimeError" in lines[13]


def test_export_back_to_superqode_keeps_every_id(cli_env, imported, tmp_path):
    source, _ = imported
    out = tmp_path / "back.json"
    done = harness(
        cli_env, "export", source["session"]["session_id"], "--format", "superqode", "-o", str(out)
    )
    assert done.returncode == 0, done.stderr
    back = json.loads(out.read_text())
    assert back["descriptor"] == source["descriptor"]
    assert back["session"] == source["session"]
    for key in ("event_id", "run_id", "sequence", "parent_event_id", "type", "session_id"):
        assert [e[key] for e in back["events"]] == [e[key] for e in source["events"]], key
    assert [r["run_id"] for r in back["runs"]] == [r["run_id"] for r in source["runs"]]
    assert [r["status"] for r in back["runs"]] == ["succeeded", "failed", "succeeded"]
    assert [c["checkpoint_id"] for c in back["checkpoints"]] == [
        c["checkpoint_id"] for c in source["checkpoints"]
    ]
    assert "secret upstream text" not in out.read_text()


def test_a_native_session_exports_v1s_lifecycle(cli_env, tmp_path):
    run = harness(cli_env, "run", "echo", "apples", "--workspace", str(tmp_path), "--json")
    assert run.returncode == 0, run.stderr
    session_id = json.loads(run.stdout.splitlines()[0])["session_id"]
    out = harness(cli_env, "export", session_id, "--format", "superqode", "--json")
    assert out.returncode == 0, out.stderr
    bundle = json.loads(out.stdout)
    assert bundle["protocol_version"] == "1.0"
    assert bundle["descriptor"]["id"] == "echo"
    (run_record,) = bundle["runs"]
    types = [e["type"] for e in run_record["events"]]
    assert types[:2] == ["run.started", "message.created"] and types[-1] == "run.completed"
    assert run_record["events"][1]["data"]["role"] == "user"
    assert run_record["events"][1]["data"]["content"] == "apples"
    assert [e["sequence"] for e in run_record["events"]] == list(range(1, len(types) + 1))
    assert run_record["status"] == "succeeded"
    assert bundle["events"] == run_record["events"]
    # and it comes back: imported elsewhere under the same ids
    path = tmp_path / "v1.json"
    path.write_text(out.stdout)
    other = tmp_path / "other.sqlite"
    again = harness(cli_env, "import", str(path), "--ledger", f"sqlite:///{other}", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["session_id"] == session_id


def _truncated(text: str) -> str:
    return text[: len(text) // 2]


def _foreign(text: str) -> str:
    return json.dumps({"protocol_version": "1.0", "hello": "world"})


def _version(text: str) -> str:
    return text.replace('"protocol_version": "1.0"', '"protocol_version": "2.0"', 1)


def _other_session(text: str) -> str:
    data = json.loads(text)
    data["events"][3]["session_id"] = "python-000000000000"
    return json.dumps(data)


def _gap(text: str) -> str:
    data = json.loads(text)
    data["events"][3]["sequence"] = 9
    return json.dumps(data)


@pytest.mark.parametrize(
    ("damage", "hint"),
    [
        (_truncated, "the bundle is not JSON (truncated?)"),
        (_foreign, "the file is not a SuperQode Harness Protocol bundle"),
        (_version, "the SuperQode bundle has protocol version '2.0', not 1.x"),
        (_other_session, "the SuperQode bundle holds an event of another session or of no run"),
        (_gap, "the SuperQode bundle has a gap in a run's event sequence"),
    ],
    ids=["truncated", "foreign", "version", "other-session", "gap"],
)
def test_bad_superqode_bundles_get_one_line_and_write_nothing(cli_env, tmp_path, damage, hint):
    bad = tmp_path / "bad.json"
    bad.write_text(damage(BUNDLE.read_text()))
    target = tmp_path / "empty.sqlite"
    out = harness(cli_env, "import", str(bad), "--ledger", f"sqlite:///{target}")
    assert out.returncode != 0
    assert out.stderr.strip().splitlines() == [f"harness: error: invalid-request: {hint}"]
    assert _rows(target) == 0
