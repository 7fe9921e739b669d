"""``harness cancel`` and a stale active file (issue 26, item 8): a file left by a run that is
gone - killed mid-write (truncated), garbled, or naming a pid that is dead or now another
process's - is refused (``turn-not-found``, nobody signalled) and removed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness_core.cli.run import active_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_run import harness


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


STALE = {
    "truncated": lambda: '{"pid": 12',
    "not-an-object": lambda: "[1, 2]",
    "garbage": lambda: "\x00\xff not json",
    "dead-pid": lambda: json.dumps({"pid": _dead_pid(), "start": "1", "turn_id": "t"}),
    # our own pid with another start time: a reused pid, never signalled
    "reused-pid": lambda: json.dumps({"pid": os.getpid(), "start": "1", "turn_id": "t"}),
    "no-start": lambda: json.dumps({"pid": os.getpid(), "turn_id": "t"}),
}


@pytest.mark.parametrize("kind", sorted(STALE))
def test_a_stale_active_file_is_refused_and_removed(cli_env, kind):
    session_id = "stale-session"
    path = active_file(Path(cli_env["HARNESS_STATE_DIR"]), session_id)
    path.parent.mkdir(parents=True)
    path.write_text(STALE[kind]())
    out = harness(cli_env, "cancel", session_id)
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith("harness: error: turn-not-found: ")
    assert not path.exists()
