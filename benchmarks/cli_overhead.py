"""Real-CLI turn overhead: ``harness run NAME PROMPT`` vs. the bare CLI invocation it makes.

For each CLI adapter - the per-turn ones (Claude Code, Codex, OpenCode, Pi) and Cline
(``acp:cline``, ``cline --acp``: an ACP agent that lives for the session) - against the fake
model server (one for all; Cline its own on port 1234, the only endpoint its ACP mode reaches
offline: its ``lmstudio`` provider's fixed ``http://localhost:1234/v1``):

1. Record: one ``harness run`` with the CLI replaced by a wrapper that saves the exact argv,
   environment, working directory and a copy of the session state directory (the CLI's private
   HOME / config the adapter wrote) at the moment the CLI starts, then ``exec``s the real CLI.
   The wrapper also saves what the adapter wrote on the CLI's stdin (Claude Code's user
   message, Pi's RPC commands, Codex's and Cline's JSON-RPC requests). The adapter is given the
   wrapper as its binary (``cli_path``, or ``command`` = wrapper + the profile's arguments).
2. Bare: that recorded invocation, run directly (a fresh copy of the saved state each time, so
   every run starts like a new session does) by a bare client that speaks the CLI's protocol
   as the adapter does (:mod:`_bare_cli`: the recorded stdin lines, Codex's JSON-RPC
   conversation, OpenCode's HTTP API, Cline's ACP ``initialize`` -> ``session/new`` ->
   ``session/prompt``) until the turn's outcome is known (the terminal line, OpenCode's prompt
   reply, the ``session/prompt`` response); then its process group is killed and reaped.
3. Through us: the same ``harness run`` (real CLI, fresh session each run, SQLite ledger) until
   the ``harness`` process exits, with its phases timestamped (:mod:`_trace_harness`: imports,
   controller up, session opened, CLI spawned, first CLI line, terminal, CLI reaped, closed).
   Cline's ``harness run`` is the same protocol steps: ``open_session`` spawns it and does
   ``initialize`` + ``session/new``, the turn its ``session/prompt``, ``--close`` stops it; its
   phases are in another order (spawn and first line inside ``open_session``, the terminal event
   before the reaping), and its terminal line is the ``session/prompt`` response.

4. In a running host (:mod:`_host`): one process that has imported harness_core and has a
   ``Controller`` up (SQLite ledger, the plugins ``harness run`` loads) times ``open_session``
   + ``run_turn`` + ``close_session`` of a fresh session with the same config (so the same CLI
   invocation): what the runtime adds per turn without starting a ``harness`` process
   (``cli_overhead.NAME.host.added_ms``).

Overhead = median(harness) - median(bare) over ``--runs`` (default 5); target: <= 50 ms or
<= 5 % of bare, whichever is larger. Printed too, to say where the time goes: ``python -c pass``
(interpreter start) and ``harness run echo`` (no CLI at all: the fixed cost of a ``harness``
process - interpreter, imports, plugin loading, ledger, session open/close).

    python benchmarks/cli_overhead.py [--runs 5] [--clis claude-code,codex,opencode,pi,cline]
        [--natural]  (bare: close stdin and let the CLI exit by itself, as adapters used to)
        [--phases]  (each run's phases)  [--before PYTHONPATH]  (older code, interleaved)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _bare_cli
import _host
import _trace_harness
from _common import ROOT, figure, positive_int, venv_bin

PROMPT = "Say ok"
CLIS = ("claude-code", "codex", "opencode", "pi", "cline")
#: The harness a CLI runs as, where the names differ.
HARNESS = {"cline": "acp:cline"}
TRACER = str(Path(__file__).resolve().parent / "_trace_harness.py")
# The CLI gets a minimal environment, so the wrapper has its paths written in. A piped stdin
# (the adapter writes to it) goes through tee into the record; only in the recording run.
WRAPPER = """#!/bin/sh
d='{record}'
if [ "$1" != "--version" ] && [ ! -e "$d/argv" ]; then
  printf '%s\\0' "$@" > "$d/argv"
  env -0 > "$d/env"
  pwd > "$d/cwd"
  cp -a '{state}' "$d/state"
  if [ -p /dev/stdin ]; then
    tee "$d/stdin" | '{real}' "$@"
    exit $?
  fi
fi
exec '{real}' "$@"
"""
#: Phases of a ``harness run`` in order (see _trace_harness), with what each span is.
PHASES = (
    ("interpreter", "python start-up"),
    ("imports", "harness_core imports"),
    ("controller", "args, plugins, ledger open"),
    ("opened", "open_session"),
    ("spawn", "turn start -> spawn"),
    ("spawned", "fork/exec"),
    ("first_line", "CLI start-up"),
    ("terminal_line", "CLI turn"),
    ("eof", "terminal line -> CLI's stdout closed"),
    ("terminate", "-> reaping starts"),
    ("terminated", "reaping the CLI's processes"),
    ("terminal", "-> terminal event out"),
    ("closed", "close_session"),
    ("exit", "controller exit, interpreter exit"),
)
#: An ACP agent's phases where they differ: it is spawned and initialized inside open_session,
#: its turn ends at its session/prompt response, and it is stopped by close_session.
ACP_PHASES = {
    "spawn": "open_session -> spawn (the agent's HOME and argv)",
    "first_line": "agent start-up -> initialize response",
    "opened": "session/new -> its response: open_session returns",
    "terminal_line": "turn: endpoint probe, session/prompt -> its response",
    "terminate": "close_session: stdin closed -> reaping starts",
    # the adapter stops the agent at once after closing its stdin (Cline takes ~1 s to exit)
    "terminated": "SIGKILL, reaping the agent's processes",
}


@dataclass
class Overhead:
    name: str
    bare_ms: float
    harness_ms: float
    #: median ms after the spawn of the bare client: first_output, terminal, reaped
    bare_phases: dict[str, float] = field(default_factory=dict)
    #: median ms after the Popen of ``harness run`` at which each phase ended
    harness_phases: dict[str, float] = field(default_factory=dict)
    harness_cpu_ms: float = 0.0
    #: a fresh session's open + turn + close in a running host (:mod:`_host`), and its phases
    host_ms: float = 0.0
    host_phases: dict[str, float] = field(default_factory=dict)
    #: ``--before``: the same ``harness run`` with older code first on ``PYTHONPATH``
    before_ms: float | None = None
    before_phases: dict[str, float] = field(default_factory=dict)
    #: median CPU ms of ``bare``, ``harness`` (run) and ``host`` (turn): this process (the bare
    #: client or the host, and the fake model's thread) + its reaped children (the CLI,
    #: ``harness``) - steadier than wall on a loaded machine, but the CLI's own CPU is in it
    cpu: dict[str, float] = field(default_factory=dict)

    @property
    def added_ms(self) -> float:
        return self.harness_ms - self.bare_ms

    def ours_ms(self, before: bool = False, host: bool = False) -> float | None:
        """What ``harness run`` (``host``: the turn in the running host) adds, from the phases
        (the CLI's own start-up and turn, which vary by tens of ms run to run, left out): up to
        the spawn, plus from the CLI's terminal line to the process's exit (the session's
        close), less what the bare client spends after the terminal line."""
        phases = self.host_phases if host else self.before_phases if before else self.harness_phases
        wall = self.host_ms if host else self.before_ms if before else self.harness_ms
        if self.name == "opencode":  # its turn is HTTP: no terminal line on the CLI's stdout
            return None
        if wall is None or "spawned" not in phases or "terminal_line" not in phases:
            return None
        bare_tail = self.bare_phases.get("reaped", 0.0) - self.bare_phases.get("terminal", 0.0)
        return phases["spawned"] + (wall - phases["terminal_line"]) - bare_tail

    def startup_ms(self) -> float | None:
        """Of ``harness run``: the ``harness`` process's own start-up before the runtime is
        up (interpreter, imports, arguments, plugins, ledger open: the "controller" phase)."""
        return self.harness_phases.get("controller")

    def turn_work_ms(self) -> float | None:
        """Of ``harness run``: what the runtime adds to the turn itself (open_session, config
        files, the spawn, parsing, reaping, close, exit): :meth:`ours_ms` less the start-up."""
        ours, startup = self.ours_ms(), self.startup_ms()
        return None if ours is None or startup is None else ours - startup

    @property
    def host_added_ms(self) -> float:
        return self.host_ms - self.bare_ms

    @property
    def bound_ms(self) -> float:
        return max(50.0, 0.05 * self.bare_ms)


def _profile(name: str) -> Any:
    """The adapter's offline profile (binary, model, endpoint style) from its plugin module."""
    module = {
        "claude-code": "harness_claude_code.plugin",
        "codex": "harness_codex.plugin",
        "opencode": "harness_opencode.plugin",
        "pi": "harness_pi.plugin",
        "cline": "harness_acp.plugin",
    }[name]
    offline = __import__(module, fromlist=["OFFLINE"]).OFFLINE
    return offline[name] if isinstance(offline, dict) else offline


def _cli_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("HARNESS_CORE_PLUGINS", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as users run harness: with .pyc files
    bin_dir = ROOT / "tools" / "npm" / "node_modules" / ".bin"
    env["HARNESS_CLI_PATH"] = str(bin_dir)
    return env


def _config(profile: Any, binary: Any, server: Any) -> dict[str, Any]:
    """The adapter's session config against the fake model (what ``harness run`` is given); a
    CLI with a fixed endpoint (``profile.port``: Cline) gets no ``base_url``."""
    config = {profile.binary_key: binary, "api_key": profile.api_key}
    if not profile.port:
        api = profile.api
        config["base_url"] = server.base_url if api == "anthropic" else server.openai_base_url
    config.update(profile.extra)
    return config


def _harness_argv(name: str, profile: Any, binary: Any, base: Path, server: Any) -> list[str]:
    config = _config(profile, binary, server)
    argv = ["run", HARNESS.get(name, name), PROMPT, "--model", profile.model]
    argv += ["--workspace", str(base / "workspace"), "--ledger", f"sqlite:///{base}/ledger.sqlite"]
    argv += ["--close"]
    for key, value in config.items():
        argv += ["--config", f"{key}={value if isinstance(value, str) else json.dumps(value)}"]
    return argv


def _wall(argv: list[str], env: dict[str, str], cwd: str | None = None) -> tuple[float, float]:
    """Wall and CPU (user + sys of the child and its children) ms of one process."""
    before = os.times()
    start = time.perf_counter()
    done = subprocess.run(
        argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, timeout=300
    )
    wall = time.perf_counter() - start
    after = os.times()
    if done.returncode != 0:
        tail = (done.stderr or done.stdout)[-400:].decode(errors="replace")
        raise RuntimeError(f"{argv[0]} {argv[1:3]} exited {done.returncode}: {tail}")
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return wall * 1000, cpu * 1000


def _traced(
    argv: list[str], env: dict[str, str], base: Path
) -> tuple[float, float, dict[str, float]]:
    """``harness ARGV`` through the tracer: wall, CPU, and each phase's end in ms after the
    Popen (the first line after a CLI's terminal line is its terminal line)."""
    out = base / "phases.txt"
    start = time.time()
    wall, cpu = _wall([sys.executable, TRACER, str(out), *argv], env)
    rows = [(name, float(at)) for name, at in map(str.split, out.read_text().splitlines())]
    return wall, cpu, _trace_harness.phase_ends(rows, start)


@contextmanager
def _server(port: int = 0) -> Iterator[Any]:
    """The fake model server; ``port``: the fixed port a CLI dials (Cline's 1234), refused
    when anything answers there already (the CLI could reach that instead)."""
    from harness_cli_kit.conformance import port_in_use

    from harness_core.testing.fake_model import FakeModelServer

    if port and port_in_use(port):
        raise RuntimeError(f"port {port} on localhost is in use: the fake model must listen there")
    server = FakeModelServer([], default_text="ok", port=port)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _recorded(record: Path) -> _bare_cli.Recorded:
    argv = record.joinpath("argv").read_bytes().decode().split("\0")[:-1]
    env = dict(
        item.split("=", 1) for item in record.joinpath("env").read_text().split("\0") if item
    )
    stdin = record / "stdin"
    lines = (
        [json.loads(x) for x in stdin.read_text().splitlines() if x.strip()]
        if stdin.exists()
        else []
    )
    return _bare_cli.Recorded(argv, env, record.joinpath("cwd").read_text().strip(), lines)


def _fresh(rec: _bare_cli.Recorded, real: str, old: str, new: str) -> _bare_cli.Recorded:
    """The recorded invocation against a fresh copy of its state directory."""
    swap = lambda text: text.replace(old, new)  # noqa: E731
    return _bare_cli.Recorded(
        [real, *map(swap, rec.argv)],
        {k: swap(v) for k, v in rec.env.items()},
        swap(rec.cwd),
        json.loads(swap(json.dumps(rec.stdin))),
    )


def _median_phases(runs: list[dict[str, float]]) -> dict[str, float]:
    keys = [k for k in runs[0] if all(k in r for r in runs)]
    return {k: statistics.median(r[k] for r in runs) for k in keys}


class Recording:
    """One CLI's invocation recorded from a ``harness run`` (through the wrapper), to replay
    bare, next to fresh ``harness run`` processes; the files live until :meth:`close`."""

    def __init__(self, name: str, server: Any) -> None:
        self.name, self.server, self.profile = name, server, _profile(name)
        real = shutil.which(self.profile.binary, path=_cli_env()["HARNESS_CLI_PATH"])
        if real is None:
            raise RuntimeError(f"{self.profile.binary} CLI not found (tools/npm)")
        self.real = real
        self.base = base = Path(tempfile.mkdtemp(prefix=f"harness-bench-cli-{name}-"))
        (base / "workspace").mkdir()
        self.record, self.state = base / "record", base / "state-record"
        self.record.mkdir()
        wrapper = base / "wrapper.sh"
        wrapper.write_text(WRAPPER.format(record=self.record, state=self.state, real=real))
        wrapper.chmod(0o755)
        _wall([venv_bin("harness"), *self._argv(str(wrapper))], self._env(self.state))
        self.rec = _recorded(self.record)

    def _binary(self, path: str) -> Any:
        return path if self.profile.binary_key == "cli_path" else [path, *self.profile.args]

    def _argv(self, path: str) -> list[str]:
        return _harness_argv(self.name, self.profile, self._binary(path), self.base, self.server)

    def _env(self, state: Path) -> dict[str, str]:
        return {**_cli_env(), "HARNESS_STATE_DIR": str(state)}

    def bare(self, index: int, natural: bool | str = False) -> _bare_cli.Phases:
        fresh = self.base / f"state-bare-{index}"
        shutil.copytree(self.record / "state", fresh, symlinks=True)
        rec = _fresh(self.rec, self.real, str(self.state), str(fresh))
        if self.name == "opencode":
            model = f"harness/{self.profile.model}"
            return _bare_cli.opencode(rec, natural, model=model, prompt=PROMPT)
        driver = {
            "claude-code": _bare_cli.claude,
            "codex": _bare_cli.codex,
            "pi": _bare_cli.pi,
            "cline": _bare_cli.acp,
        }
        return driver[self.name](rec, natural)

    def harness(
        self, index: int | str, pythonpath: str | None = None
    ) -> tuple[float, float, dict[str, float]]:
        """One traced ``harness run`` (fresh session): wall, CPU, phases. ``pythonpath``: put
        that code first (another checkout's packages, for before/after)."""
        env = self._env(self.base / f"state-harness-{index}")
        if pythonpath:
            env["PYTHONPATH"] = pythonpath
        return _traced(self._argv(self.real), env, self.base)

    def host(self) -> _host.Host:
        """A running host (controller up, own SQLite ledger and state root) for :meth:`Host.turn`:
        the same config, model and workspace as the ``harness run`` processes."""
        return _host.Host(
            HARNESS.get(self.name, self.name),
            config=_config(self.profile, self._binary(self.real), self.server),
            model=self.profile.model,
            prompt=PROMPT,
            workspace=str(self.base / "workspace"),
            ledger=f"sqlite:///{self.base}/host-ledger.sqlite",
            env=self._env(self.base / "state-host"),
        )

    def close(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)


def measure(
    name: str, runs: int, server: Any, natural: bool | str = False, before: str | None = None
) -> Overhead:
    recording = Recording(name, server)
    host = None
    try:
        host = recording.host()
        # warm caches (page cache, __pycache__, CLI caches)
        recording.bare(-1, natural), recording.harness(-1), host.turn()
        if before:
            recording.harness("before-warm", before)
        bare, ours, hosted, old = [], [], [], []
        cpu: dict[str, list[float]] = {"bare": [], "harness": [], "host": []}

        def timed(kind: str, call: Any, *args: Any) -> Any:
            before_cpu = _cpu_ms()
            result = call(*args)
            cpu[kind].append(_cpu_ms() - before_cpu)
            return result

        for index in range(runs):  # alternate, so load changes hit all alike
            bare.append(timed("bare", recording.bare, index, natural))
            ours.append(timed("harness", recording.harness, index))
            hosted.append(timed("host", host.turn))
            if before:
                old.append(recording.harness(f"before-{index}", before))
        result = Overhead(
            name,
            statistics.median(b.reaped for b in bare),
            statistics.median(o[0] for o in ours),
            {
                k: statistics.median(getattr(b, k) for b in bare)
                for k in ("first_output", "opened", "terminal", "reaped")
            },
            _median_phases([o[2] for o in ours]),
            statistics.median(o[1] for o in ours),
            statistics.median(h[0] for h in hosted),
            _median_phases([h[1] for h in hosted]),
            cpu={k: statistics.median(v) for k, v in cpu.items()},
        )
        if old:
            result.before_ms = statistics.median(o[0] for o in old)
            result.before_phases = _median_phases([o[2] for o in old])
        return result
    finally:
        if host is not None:
            host.close()
        recording.close()


def _cpu_ms() -> float:
    """User + system CPU ms of this process (all threads) and its reaped children so far."""
    times = os.times()
    return (times.user + times.system + times.children_user + times.children_system) * 1000


def echo_ms(runs: int) -> float:
    """``harness run echo`` end to end: what any ``harness run`` process costs without a CLI."""
    base = Path(tempfile.mkdtemp(prefix="harness-bench-echo-"))
    try:
        env = {**_cli_env(), "HARNESS_STATE_DIR": str(base / "state")}
        argv = [venv_bin("harness"), "run", "echo", PROMPT, "--workspace", str(base), "--close"]
        argv += ["--ledger", f"sqlite:///{base}/ledger.sqlite"]
        _wall(argv, env)
        return statistics.median(_wall(argv, env)[0] for _ in range(runs))
    finally:
        shutil.rmtree(base, ignore_errors=True)


def interpreter_ms(runs: int) -> float:
    """``python -c pass`` in the project venv: the part of any ``harness`` process before our code."""
    argv = [sys.executable, "-c", "pass"]
    _wall(argv, _cli_env())
    return statistics.median(_wall(argv, _cli_env())[0] for _ in range(runs))


def run_all(
    runs: int, clis: list[str], natural: bool | str = False, before: str | None = None
) -> tuple[list[Overhead], dict[str, str]]:
    """Every CLI's overhead; CLIs that could not run are returned with the reason."""
    from harness_core import proctree

    # The bare runs' killed CLI children come to this process, to be reaped (and their CPU
    # counted) as the runtime reaps them; a host's first spawn would make it so anyway.
    proctree.become_subreaper()
    results, failed = [], {}
    with ExitStack() as stack:
        servers: dict[int, Any] = {}  # by port: one for the CLIs that take a base_url
        for name in clis:
            try:
                port = _profile(name).port
                if port not in servers:
                    servers[port] = stack.enter_context(_server(port))
                results.append(measure(name, runs, servers[port], natural, before))
            except Exception as error:  # a missing CLI is reported, not fatal
                failed[name] = f"{type(error).__name__}: {error}"[:300]
    return results, failed


def phase_table(result: Overhead, host: bool = False) -> str:
    """One line per phase of the ``harness run`` (``host``: of the turn in the running host):
    when it ended and its span in ms (medians of each mark); with ``--before``, the older
    code's next to it."""
    rows, previous, old_previous = [], 0.0, 0.0
    phases = result.host_phases if host else result.harness_phases
    described = dict(PHASES)
    if HARNESS.get(result.name, "").startswith("acp:"):
        described.update(ACP_PHASES)
    for key, at in sorted(phases.items(), key=lambda item: item[1]):  # ACP: not PHASES' order
        what = described.get(key)
        if what is None:
            continue
        row = f"    {key:<14} {at:7.0f} ms  (+{at - previous:5.0f})"
        old = None if host else result.before_phases.get(key)
        if old is not None:
            row += f"  before {old:7.0f} ms (+{old - old_previous:5.0f})"
            old_previous = old
        rows.append(f"{row}  {what}")
        previous = at
    bare = result.bare_phases
    opened = f"session/new answered {bare['opened']:.0f} ms, " if bare.get("opened") else ""
    rows.append(
        f"    bare: first output {bare.get('first_output', 0):.0f} ms, {opened}terminal "
        f"{bare.get('terminal', 0):.0f} ms, reaped {bare.get('reaped', 0):.0f} ms"
    )
    return "\n".join(rows)


def parse_clis(parser: argparse.ArgumentParser, text: str) -> list[str]:
    """``--clis a,b``: the names, or one argparse error line naming the unknown ones."""
    clis = [c for c in text.split(",") if c]
    unknown = sorted(set(clis) - set(CLIS))
    if unknown:
        parser.error(f"--clis: unknown {', '.join(unknown)} (known: {', '.join(CLIS)})")
    return clis


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=positive_int, default=5)
    parser.add_argument("--clis", default=",".join(CLIS))
    parser.add_argument("--natural", action="store_true", help="bare: let the CLI exit itself")
    parser.add_argument("--phases", action="store_true", help="print each run's phases")
    parser.add_argument(
        "--before",
        metavar="PYTHONPATH",
        help="also time harness run with this code first on PYTHONPATH (interleaved)",
    )
    args = parser.parse_args()
    clis = parse_clis(parser, args.clis)
    figure("cli_overhead.python_startup", interpreter_ms(args.runs), "ms", "", "python -c pass")
    figure("cli_overhead.echo.harness_run", echo_ms(args.runs), "ms", "", "no CLI: the fixed cost")
    results, failed = run_all(args.runs, clis, args.natural, args.before)
    for r in results:
        note = f"bare {r.bare_ms:.0f} ms, harness run {r.harness_ms:.0f} ms"
        note += f" (CPU {r.harness_cpu_ms:.0f} ms), median of {args.runs}"
        if r.before_ms is not None:
            note += f"; before: {r.before_ms:.0f} ms ({r.before_ms - r.bare_ms:+.0f})"
        ours, old = r.ours_ms(), r.ours_ms(before=True)
        if ours is not None:
            note += f"; from the phases: {ours:+.0f} ms"
            note += f" (before: {old:+.0f} ms)" if old is not None else ""
        figure(f"cli_overhead.{r.name}", r.added_ms, "ms", f"<= {r.bound_ms:.0f} ms", note)
        cpu = r.cpu
        figure(
            f"cli_overhead.{r.name}.cpu_added_ms",
            cpu["harness"] - cpu["bare"],
            "ms",
            "",
            f"CPU (this process + reaped children, the CLI's included): bare {cpu['bare']:.0f}"
            f" ms, harness run {cpu['harness']:.0f} ms, running host {cpu['host']:.0f} ms"
            f" ({cpu['host'] - cpu['bare']:+.0f})",
        )
        note = f"bare {r.bare_ms:.0f} ms, open + turn + close in a running host {r.host_ms:.0f} ms"
        note += f", median of {args.runs}"
        hosted = r.ours_ms(host=True)
        note += f"; from the phases: {hosted:+.0f} ms" if hosted is not None else ""
        figure(
            f"cli_overhead.{r.name}.host.added_ms",
            r.host_added_ms,
            "ms",
            f"<= {r.bound_ms:.0f} ms",
            note,
        )
        if args.phases:
            print(phase_table(r), flush=True)
            print("  in a running host:\n" + phase_table(r, host=True), flush=True)
    for name, reason in failed.items():
        print(f"cli_overhead.{name}: not measured  {reason}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
