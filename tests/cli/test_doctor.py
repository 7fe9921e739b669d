"""``harness doctor``: each installed harness's CLI (path, version, tested version), which
credential variables resolve for it (names, never values), and whether each sandbox provider
works here - on this machine, and with one CLI taken away."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_run import harness

from harness_core.testing.clis import NPM_BIN

KEY = "sk-ant-" + "doctor0test0value0123456"


def doctor_env(cli_env, tmp_path, cli_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in cli_env.items() if not k.endswith("_API_KEY")}
    env.update(
        HOME=str(tmp_path / "home"),
        PATH=os.pathsep.join(
            p for p in os.environ["PATH"].split(os.pathsep) if p and Path(p) != NPM_BIN
        ),
        HARNESS_CLI_PATH=str(cli_dir),
        ANTHROPIC_API_KEY=KEY,
    )
    return env


def rows(env) -> dict[str, dict]:
    out = harness(env, "doctor", "--json", timeout=300)
    assert out.returncode == 0, out.stderr
    assert KEY not in out.stdout + out.stderr
    return {(r["kind"], r["name"]): r for r in map(json.loads, out.stdout.splitlines())}


@pytest.fixture
def clis():
    if not (NPM_BIN / "claude").exists() or not (NPM_BIN / "codex").exists():
        pytest.skip(f"the CLIs are not installed in {NPM_BIN} (run .ci/install-clis.sh)")
    return NPM_BIN


def test_doctor_on_this_machine(cli_env, tmp_path, clis):
    found = rows(doctor_env(cli_env, tmp_path, clis))
    claude = found[("harness", "claude-code")]
    assert claude["ok"] and claude["cli_path"] == str(clis / "claude")
    assert claude["tested"].endswith(claude["cli_version"])  # the pinned CLI is the tested one
    assert claude["credentials"] == ["ANTHROPIC_API_KEY"]  # the name; the value is never shown
    assert found[("harness", "codex")]["credentials"] == []  # no OPENAI_API_KEY here
    assert found[("harness", "acp:claude-code")]["cli_path"] == str(clis / "claude-code-acp")
    assert found[("harness", "echo")] == {
        "kind": "harness",
        "name": "echo",
        "cli_path": None,
        "cli_version": None,
        "tested": None,
        "credentials": [],
        "ok": True,
    }
    assert found[("sandbox", "local")] == {"kind": "sandbox", "name": "local", "ok": True}
    assert ("sandbox", "bubblewrap") in found


def test_doctor_with_one_cli_removed_says_so(cli_env, tmp_path, clis):
    partial = tmp_path / "clis"
    partial.mkdir()
    for entry in clis.iterdir():
        if entry.name != "codex":
            (partial / entry.name).symlink_to(entry.resolve())
    env = doctor_env(cli_env, tmp_path, partial)
    found = rows(env)
    codex = found[("harness", "codex")]
    assert codex["ok"] is False and codex["cli_path"] is None
    assert codex["problem"] == "CLI not found (PATH, HARNESS_CLI_PATH)"
    assert found[("harness", "claude-code")]["ok"]
    table = harness(env, "doctor", timeout=300)
    assert table.returncode == 0
    (line,) = [x for x in table.stdout.splitlines() if x.startswith("codex ")]
    assert line.split()[1:3] == ["MISSING", "not"]
    assert "1 harness(es) cannot run here: codex" in table.stderr
    assert KEY not in table.stdout + table.stderr
