"""A stdio-jsonl program that probes its sandbox from inside (stdlib only, run with ``python -I``).

Each turn's prompt is Python code run with the helpers below in scope; it assigns ``result``,
which the turn completes with as JSON text. ``status(msg)`` emits a status line (tests wait for
it), ``sleeper()`` starts a detached (setsid) grandchild that sleeps, carrying this program's
marker argument so the host can find it.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

MARKER = sys.argv[1] if len(sys.argv) > 1 else "probe"


def emit(**fields: object) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def status(message: str) -> None:
    emit(type="status", message=message)


def err(e: BaseException) -> str:
    if isinstance(e, urllib.request.HTTPError):
        return f"http-{e.code}"
    e = getattr(e, "reason", e)
    if isinstance(e, OSError) and e.errno:
        return errno.errorcode.get(e.errno, str(e.errno))
    return type(e).__name__


def tcp(host: str, port: int) -> str:
    try:
        socket.create_connection((host, port), timeout=5).close()
        return "connected"
    except OSError as e:
        return err(e)


def get(url: str, proxy: bool = True) -> str:
    handlers = [] if proxy else [urllib.request.ProxyHandler({})]
    try:
        return urllib.request.build_opener(*handlers).open(url, timeout=5).read().decode()
    except Exception as e:
        return err(e)


def write(path: str, text: str = "x") -> str:
    try:
        with open(path, "w") as f:
            f.write(text)
        return "written"
    except OSError as e:
        return err(e)


def listdir(path: str) -> list[str] | str:
    try:
        return sorted(os.listdir(path))
    except OSError as e:
        return err(e)


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
