"""A stdio-jsonl program that probes its sandbox from inside (stdlib only, run with ``python -I``).

Each turn's prompt is Python code run with the helpers below in scope; it assigns ``result``,
which the turn completes with as JSON text. ``status(msg)`` emits a status line (tests wait for
it), ``sleeper()`` starts a detached (setsid) grandchild that sleeps, carrying this program's
marker argument so the host can find it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

# ``python -I`` keeps this script's directory off sys.path; the shared probes sit beside it.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from probe_helpers import connect, err, get, listdir, tcp, unix, write  # noqa: F401

MARKER = sys.argv[1] if len(sys.argv) > 1 else "probe"


def emit(**fields: object) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def status(message: str) -> None:
    emit(type="status", message=message)


def sleeper(seconds: float = 120) -> int:
    code = "import sys, time; time.sleep(float(sys.argv[1]))"
    argv = [sys.executable, "-I", "-c", code, str(seconds), MARKER]
    child = subprocess.Popen(argv, start_new_session=True)
    return child.pid


def run_turn(prompt: str) -> None:
    scope: dict[str, object] = {
        name: value for name, value in globals().items() if not name.startswith("__")
    }
    try:
        exec(prompt, scope)
    except Exception as e:
        emit(type="turn.failed", reason="provider-failed", hint=type(e).__name__)
        return
    emit(type="turn.completed", text=json.dumps(scope.get("result")))


def main() -> int:
    for line in sys.stdin:
        if line.strip():
            request = json.loads(line)
            if request.get("type") == "turn":
                run_turn(str(request["prompt"]))
    return 0


if __name__ == "__main__":
    time.sleep(0)  # keep `time` imported for prompts
    raise SystemExit(main())
