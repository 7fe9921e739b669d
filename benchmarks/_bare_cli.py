"""Bare clients for one CLI turn: what each adapter says to its CLI, without ``harness``.

Each driver replays the invocation a ``harness run`` made (argv, environment, working directory
and the lines the adapter wrote on the CLI's stdin, all recorded by ``cli_overhead.py``'s
wrapper) and speaks the CLI's protocol as the adapter does, up to the moment the adapter has the
turn's outcome (its terminal line, OpenCode's prompt reply, an ACP ``session/prompt``
response). Then the CLI's process group is killed and reaped (the leader, and its children when
this process is their subreaper): a bare client needs nothing more from the CLI. Timestamps of
the phases (first output, an ACP agent's ``session/new`` response, terminal, reaped) are
returned in ms after the spawn.

- Claude Code (``-p --input-format stream-json``): the recorded user message on stdin, until
  the ``result`` line.
- Pi (``--mode rpc``): the recorded ``get_state`` and ``prompt`` commands, until ``agent_end``.
- Codex (``app-server``, JSON-RPC lines): ``initialize`` -> ``initialized`` + the recorded
  ``thread/start`` -> the recorded ``turn/start`` (with the new thread id), until
  ``turn/completed``.
- OpenCode (``serve``, HTTP): the announced URL, ``POST /session``, ``GET /event`` until
  ``server.connected``, then ``POST /session/{id}/message``, until its reply.
- An ACP agent (Cline's ``--acp``, JSON-RPC lines; it lives for the session, so its open is
  part of the turn here as in ``harness run --close``): the recorded requests one after the
  other as each is answered - ``initialize``, ``session/new``, ``session/prompt`` (with the new
  session id) - answering what the agent asks the client as the adapter does, until the
  ``session/prompt`` response.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

Lines = list[dict[str, Any]]


@dataclass
class Recorded:
    """One CLI invocation as the adapter made it."""

    argv: list[str]
    env: dict[str, str]
    cwd: str
    #: The JSON lines the adapter wrote on the CLI's stdin (none: stdin was /dev/null).
    stdin: Lines = field(default_factory=list)


@dataclass
class Phases:
    """ms after the spawn; ``natural_exit``: the CLI exited by itself (stdin closed) in the
    ``--natural`` mode, instead of being killed at the terminal."""

    first_output: float = 0.0
    #: an ACP agent's ``session/new`` response (its open done); 0: not an ACP agent
    opened: float = 0.0
    terminal: float = 0.0
    reaped: float = 0.0
    #: ``time.perf_counter()`` at the spawn
    start: float = field(default=0.0, repr=False)

    def now(self) -> float:
        """ms since the spawn."""
        return (time.perf_counter() - self.start) * 1000


def _popen(rec: Recorded, stdin: bool) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        rec.argv,
        env=rec.env,
        cwd=rec.cwd,
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _json_lines(stdout: IO[bytes]) -> Iterator[dict[str, Any]]:
    for raw in stdout:
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if isinstance(line, dict):
            yield line


def _send(process: subprocess.Popen[bytes], *messages: dict[str, Any]) -> None:
    assert process.stdin is not None
    process.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
    process.stdin.flush()


def _stop(process: subprocess.Popen[bytes], natural: bool | str) -> None:
    """Kill the group at once (a bare client has its answer), or with ``natural`` close stdin
    and wait for the CLI to exit by itself (what the adapters did before), then kill the rest;
    ``"term"``: close stdin, SIGTERM the group and wait for the leader."""
    if natural == "term":
        if process.stdin is not None:
            process.stdin.close()
        os.killpg(process.pid, signal.SIGTERM)
        process.wait()
    elif natural:
        if process.stdin is not None:
            process.stdin.close()
        if process.stdout is not None:
            for _ in process.stdout:
                pass
        process.wait()
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()
    _reap_group(process.pid)


def _reap_group(pgid: int) -> None:
    """Reap the rest of the killed group that is ours: the CLI's children (Codex's native
    binary), orphaned to this process once it is a child subreaper (``cli_overhead`` makes it
    one). So the bare run ends when the whole group is gone, as a turn does in the runtime, and
    their CPU is counted with the CLI's."""
    while True:
        try:
            os.waitpid(-pgid, 0)
        except ChildProcessError:
            return


def _stdio_turn(
    rec: Recorded,
    first: Lines,
    done: Callable[[dict[str, Any], subprocess.Popen[bytes]], bool],
    natural: bool,
    phases: Phases | None = None,
) -> Phases:
    """``phases``: where ``done`` marks phases of its own (its ``start`` is set here)."""
    phases = phases or Phases()
    phases.start = time.perf_counter()
    process = _popen(rec, stdin=bool(rec.stdin))
    if first:
        _send(process, *first)
    assert process.stdout is not None
    for line in _json_lines(process.stdout):
        phases.first_output = phases.first_output or phases.now()
        if done(line, process):
            phases.terminal = phases.now()
            break
    else:
        raise RuntimeError(f"{rec.argv[0]} ended before its terminal line")
    _stop(process, natural)
    phases.reaped = phases.now()
    return phases


def claude(rec: Recorded, natural: bool = False) -> Phases:
    return _stdio_turn(rec, rec.stdin[:1], lambda line, _: line.get("type") == "result", natural)


def pi(rec: Recorded, natural: bool = False) -> Phases:
    return _stdio_turn(rec, rec.stdin[:2], lambda line, _: line.get("type") == "agent_end", natural)


def codex(rec: Recorded, natural: bool = False) -> Phases:
    sent = {m.get("method"): m for m in rec.stdin}
    thread, turn = sent["thread/start"], sent["turn/start"]

    def step(line: dict[str, Any], process: subprocess.Popen[bytes]) -> bool:
        if line.get("id") == sent["initialize"]["id"] and "result" in line:
            _send(process, sent["initialized"], thread)
        elif line.get("id") == thread["id"] and "result" in line:
            params = {**turn["params"], "threadId": line["result"]["thread"]["id"]}
            _send(process, {**turn, "params": params})
        return line.get("method") == "turn/completed"

    return _stdio_turn(rec, [sent["initialize"]], step, natural)


#: JSON-RPC "method not found": the adapter's answer to an fs/terminal/unknown request (it
#: advertises no client capabilities).
_NOT_FOUND = {"code": -32601, "message": "Method not found"}


def _acp_answer(request: dict[str, Any]) -> dict[str, Any]:
    """The client's answer to a request from the agent, as the adapter gives it: a permission
    request gets the agent's ``allow_once`` option (the ``auto`` posture ``harness run`` uses
    allows what the fake model asks for; the benchmark's prompt asks for no tool), anything
    else "method not found"."""
    answer: dict[str, Any] = {"jsonrpc": "2.0", "id": request["id"]}
    if request.get("method") == "session/request_permission":
        options = request.get("params", {}).get("options") or []
        chosen = next((o for o in options if o.get("kind") == "allow_once"), None)
        outcome = {"outcome": "selected", "optionId": chosen["optionId"]} if chosen else None
        answer["result"] = {"outcome": outcome or {"outcome": "cancelled"}}
    else:
        answer["error"] = _NOT_FOUND
    return answer


def acp(rec: Recorded, natural: bool = False) -> Phases:
    """An ACP agent's session: each recorded request once the one before it is answered (the
    agent's session id in place of the recorded one), until the last one's (``session/prompt``)
    response."""
    requests = [m for m in rec.stdin if "method" in m and "id" in m]
    if [m["method"] for m in requests[:2]] != ["initialize", "session/new"]:
        raise RuntimeError("the recorded ACP conversation does not start with a session/new")
    pending = iter(requests[1:])
    waiting, session, phases = requests[0]["id"], None, Phases()

    def step(line: dict[str, Any], process: subprocess.Popen[bytes]) -> bool:
        nonlocal waiting, session
        if "method" in line:  # a request from the agent (notifications need no answer)
            if "id" in line:
                _send(process, _acp_answer(line))
            return False
        if line.get("id") != waiting:
            return False
        if "result" not in line:
            raise RuntimeError(f"{rec.argv[0]} refused a recorded request: {line.get('error')}")
        if session is None and isinstance(line["result"], dict):
            session = line["result"].get("sessionId")
            phases.opened = phases.now() if session else 0.0
        nxt = next(pending, None)
        if nxt is None:
            return True
        params = nxt.get("params", {})
        if "sessionId" in params:
            nxt = {**nxt, "params": {**params, "sessionId": session}}
        _send(process, nxt)
        waiting = nxt["id"]
        return False

    return _stdio_turn(rec, requests[:1], step, natural, phases)


_LISTENING = re.compile(rb"listening on (http://127\.0\.0\.1:\d+)")


def opencode(rec: Recorded, natural: bool = False, *, model: str, prompt: str) -> Phases:
    import httpx

    phases = Phases(start=time.perf_counter())
    process = _popen(rec, stdin=False)
    assert process.stdout is not None
    url = None
    for raw in process.stdout:
        phases.first_output = phases.first_output or phases.now()
        match = _LISTENING.search(raw)
        if match:
            url = match.group(1).decode()
            break
    if url is None:
        raise RuntimeError("opencode serve did not announce its URL")
    threading.Thread(target=lambda: [None for _ in process.stdout or ()], daemon=True).start()
    auth = ("opencode", rec.env["OPENCODE_SERVER_PASSWORD"])
    params = {"directory": rec.cwd}
    with httpx.Client(base_url=url, auth=auth, params=params, timeout=60, trust_env=False) as http:
        session = http.post("/session", json={"title": "harness_core session"}).json()["id"]
        connected = threading.Event()

        def events() -> None:
            try:
                with http.stream("GET", "/event", timeout=httpx.Timeout(60, read=None)) as reply:
                    for line in reply.iter_lines():
                        if "server.connected" in line:
                            connected.set()
            except httpx.HTTPError:
                pass
            connected.set()

        threading.Thread(target=events, daemon=True).start()
        connected.wait(60)
        provider, _, model_id = model.partition("/")
        body = {
            "parts": [{"type": "text", "text": prompt}],
            "model": {"providerID": provider, "modelID": model_id},
        }
        reply = http.post(f"/session/{session}/message", json=body, timeout=None)
        reply.raise_for_status()
        phases.terminal = phases.now()
        _stop(process, False)  # serve does not exit by itself
    phases.reaped = phases.now()
    return phases
