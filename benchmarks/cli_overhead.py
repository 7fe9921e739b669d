"""Real-CLI turn overhead: ``harness run NAME PROMPT`` vs. the bare CLI invocation it makes.

For each per-turn CLI adapter (Claude Code, Codex, OpenCode, Pi), against one fake model server:

1. Record: one ``harness run`` with the CLI replaced by a wrapper that saves the exact argv,
   environment, working directory and a copy of the session state directory (the CLI's private
   HOME / config the adapter wrote) at the moment the CLI starts, then ``exec``s the real CLI.
2. Bare: that recorded invocation, run directly (a fresh copy of the saved state each time, so
   every run starts like a new session does), until the CLI prints its terminal JSON line
   (where the adapter ends the turn), then its process group is stopped and reaped.
3. Through us: the same ``harness run`` (real CLI, fresh session each run, SQLite ledger) until
   the ``harness`` process exits.

Overhead = median(harness) - median(bare) over ``--runs`` (default 5); target: <= 50 ms or
<= 5 % of bare, whichever is larger. Printed too, to say where the time goes: ``python -c pass``
(interpreter start) and ``harness run echo`` (no CLI at all: the fixed cost of a ``harness``
process - interpreter, imports, plugin loading, ledger, session open/close).

    python benchmarks/cli_overhead.py [--runs 5] [--clis claude-code,codex,opencode,pi]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import ROOT, figure, venv_bin

PROMPT = "Say ok"
CLIS = ("claude-code", "codex", "opencode", "pi")
#: The JSON line after which each adapter ends the turn (and stops the CLI's process group):
#: the bare run stops there too, not when the CLI gets round to exiting (OpenCode lingers).
TERMINAL: dict[str, Callable[[dict[str, Any]], bool]] = {
    "claude-code": lambda line: line.get("type") == "result",
    "codex": lambda line: line.get("type") in {"turn.completed", "turn.failed"},
    "opencode": lambda line: (
        line.get("type") == "error"
        or (line.get("type") == "step_finish" and (line.get("part") or {}).get("reason") == "stop")
    ),
    "pi": lambda line: line.get("type") == "agent_end",
}
# The CLI gets a minimal environment, so the wrapper has its paths written in.
WRAPPER = """#!/bin/sh
d='{record}'
if [ "$1" != "--version" ] && [ ! -e "$d/argv" ]; then
  printf '%s\\0' "$@" > "$d/argv"
  env -0 > "$d/env"
  pwd > "$d/cwd"
  cp -a '{state}' "$d/state"
fi
exec '{real}' "$@"
"""


@dataclass
class Overhead:
    name: str
    bare_ms: float
    harness_ms: float

    @property
    def added_ms(self) -> float:
        return self.harness_ms - self.bare_ms

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
    }[name]
    return __import__(module, fromlist=["OFFLINE"]).OFFLINE


def _cli_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("HARNESS_CORE_PLUGINS", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as users run harness: with .pyc files
    bin_dir = ROOT / "tools" / "npm" / "node_modules" / ".bin"
    env["HARNESS_CLI_PATH"] = str(bin_dir)
    return env


def _harness_argv(name: str, profile: Any, binary: Any, base: Path, server: Any) -> list[str]:
    url = server.base_url if profile.api == "anthropic" else server.openai_base_url
    config = {profile.binary_key: binary, "api_key": profile.api_key, "base_url": url}
    config.update(profile.extra)
    argv = [venv_bin("harness"), "run", name, PROMPT, "--model", profile.model]
    argv += ["--workspace", str(base / "workspace"), "--ledger", f"sqlite:///{base}/ledger.sqlite"]
    argv += ["--close"]
    for key, value in config.items():
        argv += ["--config", f"{key}={value if isinstance(value, str) else json.dumps(value)}"]
    return argv


def _wall(argv: list[str], env: dict[str, str], cwd: str | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, timeout=300
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        tail = (done.stderr or done.stdout)[-400:].decode(errors="replace")
        raise RuntimeError(f"{argv[0]} {argv[1:3]} exited {done.returncode}: {tail}")
    return wall * 1000


def _until_terminal(
    argv: list[str], env: dict[str, str], cwd: str, done: Callable[[dict[str, Any]], bool]
) -> float:
    """Run the CLI until its terminal JSON line (or its exit), then stop its process group as
    the adapter does; wall ms from spawn to the group reaped."""
    start = time.perf_counter()
    process = subprocess.Popen(
        argv,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    assert process.stdout is not None
    finished = False
    for raw in process.stdout:
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if isinstance(line, dict) and done(line):
            finished = True
            break
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    process.wait()
    wall = (time.perf_counter() - start) * 1000
    if not finished and process.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited {process.returncode} before its terminal line")
    return wall


@contextmanager
def _server() -> Iterator[Any]:
    from harness_core.testing.fake_model import FakeModelServer

    server = FakeModelServer([], default_text="ok")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def measure(name: str, runs: int, server: Any) -> Overhead:
    profile = _profile(name)
    real = shutil.which(profile.binary, path=_cli_env()["HARNESS_CLI_PATH"])
    if real is None:
        raise RuntimeError(f"{profile.binary} CLI not found (tools/npm)")
    base = Path(tempfile.mkdtemp(prefix=f"harness-bench-cli-{name}-"))
    try:
        (base / "workspace").mkdir()
        env = _cli_env()
        record = base / "record"
        record.mkdir()
        state = base / "state-record"
        wrapper = base / "wrapper.sh"
        wrapper.write_text(WRAPPER.format(record=record, state=state, real=real))
        wrapper.chmod(0o755)

        def binary(path: str) -> Any:
            return path if profile.binary_key == "cli_path" else [path, *profile.args]

        def harness_env(state: Path) -> dict[str, str]:
            return {**env, "HARNESS_STATE_DIR": str(state)}

        _wall(_harness_argv(name, profile, binary(str(wrapper)), base, server), harness_env(state))
        argv = record.joinpath("argv").read_bytes().decode().split("\0")[:-1]
        bare_env = dict(
            item.split("=", 1) for item in record.joinpath("env").read_text().split("\0") if item
        )
        cwd = record.joinpath("cwd").read_text().strip()
        old = str(state)

        def bare_once(index: int) -> float:
            fresh = base / f"state-bare-{index}"
            shutil.copytree(record / "state", fresh, symlinks=True)
            run_argv = [real, *(a.replace(old, str(fresh)) for a in argv)]
            run_env = {k: v.replace(old, str(fresh)) for k, v in bare_env.items()}
            return _until_terminal(run_argv, run_env, cwd.replace(old, str(fresh)), TERMINAL[name])

        def harness_once(index: int) -> float:
            argv_ = _harness_argv(name, profile, binary(real), base, server)
            return _wall(argv_, harness_env(base / f"state-harness-{index}"))

        bare_once(-1), harness_once(-1)  # warm caches (page cache, __pycache__, CLI caches)
        bare, ours = [], []
        for index in range(runs):  # alternate, so load changes hit both alike
            bare.append(bare_once(index))
            ours.append(harness_once(index))
        return Overhead(name, statistics.median(bare), statistics.median(ours))
    finally:
        shutil.rmtree(base, ignore_errors=True)


def echo_ms(runs: int) -> float:
    """``harness run echo`` end to end: what any ``harness run`` process costs without a CLI."""
    base = Path(tempfile.mkdtemp(prefix="harness-bench-echo-"))
    try:
        env = {**_cli_env(), "HARNESS_STATE_DIR": str(base / "state")}
        argv = [venv_bin("harness"), "run", "echo", PROMPT, "--workspace", str(base), "--close"]
        argv += ["--ledger", f"sqlite:///{base}/ledger.sqlite"]
        _wall(argv, env)
        return statistics.median(_wall(argv, env) for _ in range(runs))
    finally:
        shutil.rmtree(base, ignore_errors=True)


def interpreter_ms(runs: int) -> float:
    """``python -c pass`` in the project venv: the part of any ``harness`` process before our code."""
    argv = [sys.executable, "-c", "pass"]
    _wall(argv, _cli_env())
    return statistics.median(_wall(argv, _cli_env()) for _ in range(runs))


def run_all(runs: int, clis: list[str]) -> tuple[list[Overhead], dict[str, str]]:
    """Every CLI's overhead; CLIs that could not run are returned with the reason."""
    results, failed = [], {}
    with _server() as server:
        for name in clis:
            try:
                results.append(measure(name, runs, server))
            except Exception as error:  # a missing CLI is reported, not fatal
                failed[name] = f"{type(error).__name__}: {error}"[:300]
    return results, failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--clis", default=",".join(CLIS))
    args = parser.parse_args()
    figure("cli_overhead.python_startup", interpreter_ms(args.runs), "ms", "", "python -c pass")
    figure("cli_overhead.echo.harness_run", echo_ms(args.runs), "ms", "", "no CLI: the fixed cost")
    results, failed = run_all(args.runs, [c for c in args.clis.split(",") if c])
    for r in results:
        note = f"bare {r.bare_ms:.0f} ms, harness run {r.harness_ms:.0f} ms, median of {args.runs}"
        figure(f"cli_overhead.{r.name}", r.added_ms, "ms", f"<= {r.bound_ms:.0f} ms", note)
    for name, reason in failed.items():
        print(f"cli_overhead.{name}: not measured  {reason}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
