"""The read-only commands: ``sessions`` (table, filters, search, totals), the JSON Lines
convention of every ``--json``, and that reading never creates a file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_run import harness

PROGRAM = """
import json, sys
turn = json.loads(sys.stdin.readline())
print(json.dumps({"type": "usage", "input_tokens": 100, "output_tokens": 10, "cost_usd": 0.5}))
print(json.dumps({"type": "turn.completed", "text": "the answer is " + turn["prompt"][::-1]}))
"""


@pytest.fixture
def ledger(cli_env, tmp_path):
    """Three sessions: echo (closed), stdio-jsonl with usage (two turns), echo (open)."""
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    env = {**cli_env, "HARNESS_JSONL_COMMAND": json.dumps([sys.executable, str(program)])}
    ws = ("--workspace", str(tmp_path))
    first = harness(env, "run", "echo", "apples and pears", *ws, "--close", "--json")
    paid = harness(env, "run", "stdio-jsonl", "zebra", *ws, "--json")
    paid_id = json.loads(paid.stdout.splitlines()[0])["session_id"]
    harness(env, "run", "stdio-jsonl", "second turn", "--session", paid_id, "--json")
    harness(env, "run", "echo", "plums", *ws)
    ids = {
        "closed": json.loads(first.stdout.splitlines()[0])["session_id"],
        "paid": paid_id,
    }
    return env, ids


def sessions(env, *args):
    out = harness(env, "sessions", "--json", *args)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_sessions_table_totals_filters_and_search(ledger):
    env, ids = ledger
    table = harness(env, "sessions")
    header, *rows = table.stdout.splitlines()
    assert header.split()[:4] == ["SESSION", "HARNESS", "STATE", "TURNS"]
    assert len(rows) == 3
    (paid_row,) = [r for r in rows if r.startswith(ids["paid"])]
    assert paid_row.split()[1:6] == ["stdio-jsonl", "idle", "2", "200/20", "$1.00"]
    assert table.stderr == "3 sessions, 4 turns, 200 in / 20 out tokens, $1.00\n"

    everything = sessions(env)
    paid = next(s for s in everything if s["ref"]["session_id"] == ids["paid"])
    assert paid["turns"] == 2 and paid["last_prompt"] == "second turn"
    assert paid["usage"] == {"input_tokens": 200, "output_tokens": 20, "cost_usd": 1.0}

    assert [s["ref"]["provider"] for s in sessions(env, "--harness", "stdio-jsonl")] == [
        "stdio-jsonl"
    ]
    assert [s["ref"]["session_id"] for s in sessions(env, "--status", "closed")] == [ids["closed"]]
    assert len(sessions(env, "--since", "1h")) == 3
    assert sessions(env, "--since", "2999-01-01") == []
    # -q searches prompts and answers, case-insensitively
    assert [s["ref"]["session_id"] for s in sessions(env, "-q", "PEARS")] == [ids["closed"]]
    assert [s["ref"]["session_id"] for s in sessions(env, "-q", "arbez")] == [ids["paid"]]
    assert sessions(env, "-q", "100%_") == []
    assert len(sessions(env, "--limit", "1")) == 1
    limited = harness(env, "sessions", "--limit", "2")
    assert "showing the newest 2" in limited.stderr


def test_an_unreported_token_count_is_shown_unknown_not_zero(cli_env, tmp_path):
    program = tmp_path / "inputs_only.py"
    program.write_text(
        "import json, sys\nsys.stdin.readline()\n"
        'print(json.dumps({"type": "usage", "input_tokens": 100}))\n'
        'print(json.dumps({"type": "turn.completed", "text": "ok"}))\n'
    )
    env = {**cli_env, "HARNESS_JSONL_COMMAND": json.dumps([sys.executable, str(program)])}
    assert harness(env, "run", "stdio-jsonl", "hi", "--workspace", str(tmp_path)).returncode == 0
    table = harness(env, "sessions")
    (row,) = table.stdout.splitlines()[1:]
    assert row.split()[4] == "100/?"  # the output count nobody reported was shown as 0
    assert table.stderr == "1 session, 1 turns, 100 in / ? out tokens, cost unknown\n"


def test_every_json_output_is_json_lines_of_objects(ledger, tmp_path):
    env, ids = ledger
    for args in (
        ("plugins",),
        ("list",),
        ("describe", "echo"),
        ("sessions",),
        ("events", ids["paid"]),
        ("export", ids["paid"]),
        ("run", "echo", "hi", "--workspace", str(tmp_path)),
        ("close", ids["paid"]),
    ):
        out = harness(env, *args, "--json")
        assert out.returncode == 0, (args, out.stderr)
        lines = out.stdout.splitlines()
        assert lines, args
        assert all(isinstance(json.loads(line), dict) for line in lines), args


def test_read_commands_create_nothing(cli_env, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {k: v for k, v in cli_env.items() if k != "HARNESS_LEDGER"}  # the default ./.harness
    listed = harness(env, "sessions", cwd=empty)
    assert listed.returncode == 0
    assert listed.stderr == "no ledger at sqlite:.harness/ledger.sqlite (no sessions yet)\n"
    assert harness(env, "sessions", "--json", cwd=empty).stdout == ""
    for args in (("events", "x"), ("export", "x"), ("close", "x")):
        out = harness(env, *args, cwd=empty)
        assert out.stderr == "harness: error: session-not-found: no such session\n"
    for args in (("list",), ("plugins",), ("describe", "echo")):
        assert harness(env, *args, cwd=empty).returncode == 0
    assert list(empty.iterdir()) == []


def test_reading_an_existing_ledger_leaves_it_as_it_was(ledger, tmp_path):
    env, ids = ledger
    files = sorted(p.name for p in tmp_path.iterdir())
    ledger_file = tmp_path / "cli-ledger.sqlite"
    before = ledger_file.read_bytes()
    harness(env, "sessions", "-q", "x")
    harness(env, "events", ids["paid"])
    harness(env, "export", ids["paid"])
    assert sorted(p.name for p in tmp_path.iterdir()) == files
    assert ledger_file.read_bytes() == before


def test_the_sql_summaries_equal_the_generic_ones(ledger, tmp_path):
    """The SQLite reader's four-query summaries are what reading every event gives."""
    from harness_core.cli.reading import summarize
    from harness_core.ledger.sqlite_read import ReadOnlySqlite

    store = ReadOnlySqlite.open(str(tmp_path / "cli-ledger.sqlite"))
    try:
        ids = [r.session_id for r in store.list_sessions()]
        assert len(ids) == 3
        fast = store.summaries(ids)
        assert fast == {sid: summarize(store, sid) for sid in ids}
        assert any(s["usage"]["cost_usd"] == 1.0 and s["turns"] == 2 for s in fast.values())
    finally:
        store.close()
