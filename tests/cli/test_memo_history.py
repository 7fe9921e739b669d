"""A one-function harness resumed in a new process gets its history back from the ledger: the
issue's ``memo`` case, in separate ``harness run`` processes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_run import harness, install_harness

MEMO = """
from harness_core import harness

@harness("memo")
async def run(message, session):
    said = [text for role, text in session.history if role == "user"]
    return f"history={len(session.history)} said={'|'.join(said)}"
"""


def install_memo(site: Path) -> None:
    install_harness(site, "memo", MEMO)


def test_memo_history_survives_a_new_process(cli_env, tmp_path):
    site = tmp_path / "site"
    install_memo(site)
    env = {**cli_env, "PYTHONPATH": str(site)}
    ws = ("--workspace", str(tmp_path))
    first = harness(env, "run", "memo", "first", *ws, "--json")
    assert first.returncode == 0, first.stderr
    records = [json.loads(line) for line in first.stdout.splitlines()]
    session_id = records[0]["session_id"]
    assert records[-1]["payload"]["text"] == "history=1 said=first"
    second = harness(env, "run", "memo", "second", "--session", session_id, *ws)
    assert second.returncode == 0, second.stderr
    assert second.stdout.startswith("history=3 said=first|second"), second.stdout
    third = harness(env, "run", "memo", "third", "--session", session_id, *ws)
    assert third.stdout.startswith("history=5 said=first|second|third"), third.stdout
