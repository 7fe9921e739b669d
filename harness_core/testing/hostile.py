"""A stdio-jsonl program that misbehaves on purpose (process-hygiene tests and the orphan soak).

``python hostile.py [--session] [--pids DIR]``: for each turn line it first daemonizes a
grandchild (fork, ``setsid``, fork again; the grandchild ignores SIGTERM/SIGINT/SIGHUP and
sleeps), records the grandchild's pid (and at start its own) as a file ``DIR/<pid>``, then acts on
the prompt:

``complete``  one delta and ``turn.completed``;
``hang``      writes one delta and then nothing, ignoring the cancel line and SIGTERM;
``crash``     one delta, then exits with status 3 (no terminal);
``silent``    never writes anything (and ignores SIGTERM);
``scrub``     like ``hang``, and the grandchild re-executes itself with an empty environment.

With ``--session`` it serves turn after turn (session mode); otherwise one turn and exit.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time


def _daemonize(scrub: bool = False) -> None:
    read_end, write_end = os.pipe()
    if os.fork() == 0:  # child: new session, then the grandchild, then exit (double fork)
        os.close(read_end)
        os.setsid()
        if os.fork() == 0:
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(sig, signal.SIG_IGN)
            # Reported only once it ignores SIGTERM, so a test can rely on that.
            os.write(write_end, str(os.getpid()).encode())
            os.close(write_end)
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            if scrub:  # leave no trace in the environment either (no owner tag)
                code = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                os.execve(sys.executable, [sys.executable, "-c", code + "time.sleep(3600)"], {})
            while True:
                time.sleep(3600)
        os._exit(0)
    os.close(write_end)
    grandchild = os.read(read_end, 32).decode()
    os.close(read_end)
    os.wait()  # reap the middle process: only the grandchild is left, re-parented
    _record(grandchild)


def _record(pid: str) -> None:
    directory = _PIDS[0] if _PIDS else None
    if directory and pid:
        with open(os.path.join(directory, pid), "w") as handle:
            handle.write(pid)


def _send(**event: object) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def _turn(prompt: str) -> None:
    _daemonize(scrub=prompt == "scrub")
    if prompt == "complete":
        _send(type="message.delta", text="ok")
        _send(type="turn.completed", text="ok")
        return
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if prompt == "crash":
        _send(type="message.delta", text="about to crash")
        os._exit(3)
    if prompt in ("hang", "scrub"):
        _send(type="message.delta", text="working")
    while True:
        time.sleep(3600)


_PIDS: list[str] = []


def main() -> int:
    args = sys.argv[1:]
    session = "--session" in args
    if "--pids" in args:
        _PIDS.append(args[args.index("--pids") + 1])
    _record(str(os.getpid()))
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("type") != "turn":
            continue  # the cancel line is ignored on purpose
        _turn(str(message.get("prompt", "")))
        if not session:
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
