"""Run ``harness`` (``harness_core.cli.main``) with the phases of a run timestamped.

``python _trace_harness.py OUT ARGS...``: like ``harness ARGS...``, and writes to OUT one line
``phase wall-clock-seconds`` per phase (``time.time()``, comparable with the caller's). The
hooks wrap functions from the outside (nothing in ``harness_core`` knows about them); each
costs a few microseconds.

An ACP agent (``acp:NAME``) lives for the whole session: it is spawned and its first line read
inside ``open_session``, and its stdout stays open after the turn, so the turn's end is marked
where its ``session/prompt`` response is read (the first line holding :data:`ACP_TERMINAL`).
"""

from __future__ import annotations

import time

_T0 = time.time()

import atexit  # noqa: E402
import functools  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from typing import Any  # noqa: E402

_marks: list[tuple[str, float]] = [("interpreter", _T0)]
#: The key only an ACP ``session/prompt`` response has (a JSON string's quotes are escaped).
ACP_TERMINAL = b'"stopReason"'
#: A line holding this is the CLI's terminal line (marked ``terminal_line``); ``None``: the last
#: line before the CLI's stdout closed or its reaping started is (a per-turn CLI's).
terminal_marker: bytes | None = None


def mark(name: str) -> None:
    _marks.append((name, time.time()))


def phase_ends(rows: list[tuple[str, float]], start: float) -> dict[str, float]:
    """Each phase's first end in ms after ``start`` (``time.time()``); the last CLI line before
    its stdout closed (or its reaping started) is its terminal line, unless one was marked."""
    marks: dict[str, float] = {}
    last_line = 0.0
    for name, at in rows:
        ms = (at - start) * 1000
        if name == "line":
            last_line = ms
        elif name in ("eof", "terminate") and "terminal_line" not in marks:
            marks["terminal_line"] = last_line or ms
            marks[name] = ms
        elif name not in marks:
            marks[name] = ms
    return marks


def _save(path: str) -> None:
    mark("exit")
    with open(path, "w") as out:
        out.writelines(f"{name} {at:.6f}\n" for name, at in _marks)


def _wrap_async(owner: Any, name: str, before: str | None, after: str | None) -> None:
    function = getattr(owner, name)

    @functools.wraps(function)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        if before:
            mark(before)
        try:
            return await function(*args, **kwargs)
        finally:
            if after:
                mark(after)

    setattr(owner, name, wrapper)


def _wrap(owner: Any, name: str, before: str) -> None:
    function = getattr(owner, name)

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        mark(before)
        return function(*args, **kwargs)

    setattr(owner, name, wrapper)


def _wrap_sync(owner: Any, name: str) -> None:
    function = getattr(owner, name)

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        mark(name)
        try:
            return function(*args, **kwargs)
        finally:
            mark(f"{name}_done")

    setattr(owner, name, wrapper)


def _install() -> None:
    from harness_core import controller, process
    from harness_core.cli import run

    mark("imports")
    _wrap(run, "cmd_run", "cmd_run")
    if os.environ.get("HARNESS_TRACE_REAP"):  # the steps before the controller, in detail
        from harness_core import plugin_cache, plugin_manager

        _wrap_sync(plugin_cache, "plugins_for")
        _wrap_sync(plugin_manager.Plugins, "__init__")
        _wrap_sync(controller.Controller, "__init__")
    _wrap_async(controller.Controller, "__aenter__", None, "controller")
    _wrap_async(controller.Controller, "open_session", None, "opened")
    _wrap_async(controller.Controller, "close_session", "close", "closed")
    _wrap_async(controller.Controller, "__aexit__", "controller_exit", "controller_exited")
    _wrap_async(process, "spawn", "spawn", "spawned")
    _wrap_async(process.Process, "terminate", "terminate", "terminated")
    if os.environ.get("HARNESS_TRACE_REAP"):  # the steps of reaping, in detail
        from harness_core import proctree

        for name in ("kill_cgroup", "kill_all", "members", "_reap_when_dead", "snapshot"):
            _wrap_sync(proctree, name)
        _wrap_sync(process.Process, "_tree")
        for name in ("ensure_watchdog", "become_subreaper", "place", "cgroup_base", "prepare_move"):
            _wrap_sync(proctree, name)
        _wrap_sync(process, "_resolve")
        _wrap_async(process.anyio, "open_process", "open_process", "open_process_done")
        _wrap_async(process.Process, "wait", "wait", "waited")
    lines = process.Process.lines

    async def traced_lines(self: Any) -> Any:
        first = True
        async for line in lines(self):
            if first:
                mark("first_line")
                first = False
            mark("line")
            if terminal_marker is not None and terminal_marker in line:
                mark("terminal_line")
            yield line
        mark("eof")

    process.Process.lines = traced_lines  # type: ignore[method-assign]
    event = run._Printer.event

    def traced_event(self: Any, item: Any) -> None:
        if item.type in ("turn.completed", "turn.failed", "turn.cancelled"):
            mark("terminal")
        event(self, item)

    run._Printer.event = traced_event  # type: ignore[method-assign]


if __name__ == "__main__":
    out, sys.argv = sys.argv[1], ["harness", *sys.argv[2:]]
    if sys.argv[1:2] == ["run"] and sys.argv[2:3] and sys.argv[2].startswith("acp:"):
        terminal_marker = ACP_TERMINAL
    atexit.register(_save, out)
    _install()
    from harness_core.cli import main

    code = main()
    sys.stdout.flush()
    raise SystemExit(code)
