"""`harness events --follow`: the recorded events, then each new one another process records."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from conftest import harness_cmd


def harness(env, *args, timeout=60):
    return subprocess.run(
        [*harness_cmd(), *args], capture_output=True, text=True, env=env, timeout=timeout
    )


@pytest.mark.parametrize("kind", ["sqlite", "jsonl", "postgresql"])
def test_follow_prints_new_turns_live_and_stops_on_interrupt(
    kind: str, cli_env, tmp_path, request: pytest.FixtureRequest
):
    if kind == "postgresql":
        try:
            cli_env["HARNESS_LEDGER"] = request.getfixturevalue("postgresql_ledger_url")
        except pytest.FixtureLookupError:
            pytest.skip("harnessplane-ledger-postgresql is not installed")
    elif kind == "jsonl":
        cli_env["HARNESS_LEDGER"] = f"jsonl://{tmp_path}/jsonl-ledger"
    first = harness(cli_env, "run", "echo", "one", "--workspace", str(tmp_path), "--json")
    assert first.returncode == 0, first.stderr
    recorded = [json.loads(line) for line in first.stdout.splitlines()]
    session_id = recorded[0]["session_id"]

    follower = subprocess.Popen(
        [*harness_cmd(), "events", session_id, "--follow", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env,
    )
    seen: list[dict] = []
    got_all = threading.Event()
    expected = len(recorded)

    def read() -> None:
        assert follower.stdout is not None
        for line in follower.stdout:
            seen.append(json.loads(line))
            if len(seen) == expected:
                got_all.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert got_all.wait(30), seen
        got_all.clear()
        second = harness(cli_env, "run", "echo", "two", "--session", session_id, "--json")
        assert second.returncode == 0, second.stderr
        more = [json.loads(line) for line in second.stdout.splitlines()]
        expected += len(more)
        if len(seen) < expected:
            assert got_all.wait(30), seen
        assert seen == recorded + more
        assert more[-1]["type"] == "turn.completed"
    finally:
        follower.send_signal(signal.SIGINT)
        code = follower.wait(timeout=30)
        reader.join(timeout=5)
    assert code == 0, follower.stderr.read() if follower.stderr else ""
