"""First contact with the real harness CLIs on a machine with no credentials: every adapter finds
its CLI through ``HARNESS_CLI_PATH`` alone, a CLI that is not logged in ends
``authentication-required`` (exit 69) with a hint naming the variable the key comes from, a
missing model says how to give one, and a missing CLI names the command and where it looked."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_run import harness

from harness_core.testing.clis import NPM_BIN

UNAVAILABLE = 69
CLIS = {
    "claude-code": "claude",
    "codex": "codex",
    "acp:claude-code": "claude-code-acp",
    "acp:codex": "codex-acp",
    "pi": "pi",
}


def bare_env(cli_env, tmp_path, cli_path: str) -> dict[str, str]:
    """No key, no login, a HOME of its own, and the CLIs only on HARNESS_CLI_PATH."""
    env = {
        k: v
        for k, v in cli_env.items()
        if not k.endswith(("_API_KEY", "_BASE_URL", "_AUTH_TOKEN")) and k != "HARNESS_CLI_PATH"
    }
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        PATH=os.pathsep.join(
            p for p in os.environ["PATH"].split(os.pathsep) if Path(p) != NPM_BIN and p
        ),
        HARNESS_CLI_PATH=cli_path,
    )
    return env


@pytest.fixture
def installed():
    missing = [cli for cli in CLIS.values() if not (NPM_BIN / cli).exists()]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed in {NPM_BIN} (run .ci/install-clis.sh)")


@pytest.mark.parametrize(
    ("name", "var"),
    [
        ("claude-code", "ANTHROPIC_API_KEY"),
        ("codex", "OPENAI_API_KEY"),
        ("acp:claude-code", "ANTHROPIC_API_KEY"),
        ("acp:codex", "OPENAI_API_KEY"),
        ("pi", "OPENAI_API_KEY"),
    ],
)
def test_a_cli_without_credentials_is_authentication_required(
    installed, cli_env, tmp_path, name, var
):
    env = bare_env(cli_env, tmp_path, str(NPM_BIN))
    model = ["--model", "gpt-4.1-mini"] if name == "pi" else []
    run = harness(env, "run", name, "hi", "--workspace", str(tmp_path), *model, timeout=120)
    assert run.returncode == UNAVAILABLE, run.stderr
    assert "authentication-required" in run.stderr
    assert f"has no valid credentials: set {var}" in run.stderr
    assert "grants.toml" in run.stderr


@pytest.mark.parametrize(
    ("name", "example"), [("opencode", "openai/gpt-4.1-mini"), ("pi", "gpt-4.1-mini")]
)
def test_needs_a_model_says_how_to_give_one(installed, cli_env, tmp_path, name, example):
    env = bare_env(cli_env, tmp_path, str(NPM_BIN))
    run = harness(env, "run", name, "hi", "--workspace", str(tmp_path))
    assert run.returncode == 1
    assert f"{name} needs a model: --model" in run.stderr
    assert f"(e.g. --model {example})" in run.stderr


@pytest.mark.parametrize(
    "name", ["claude-code", "codex", "acp:claude-code", "acp:codex", "opencode", "pi"]
)
def test_a_missing_cli_names_the_command_and_where_it_looked(cli_env, tmp_path, name):
    nowhere = tmp_path / "no-clis"
    nowhere.mkdir()
    env = bare_env(cli_env, tmp_path, str(nowhere))
    run = harness(env, "run", name, "hi", "--workspace", str(tmp_path), "--model", "openai/m")
    assert run.returncode == UNAVAILABLE, run.stderr
    command = {"opencode": "opencode", "pi": "pi", **CLIS}[name]
    assert f"{command} was not found on PATH or in HARNESS_CLI_PATH={nowhere}" in run.stderr


@pytest.mark.parametrize(
    ("model", "key", "code", "said"),
    [
        # no key: OpenCode leaves the provider out of its connected ones and answers an opaque
        # 500 ("model not found"); the adapter asks which providers have credentials
        ("openai/gpt-4.1-mini", None, UNAVAILABLE, "has no valid credentials: set OPENAI_API_KEY"),
        (
            "anthropic/claude-sonnet-4-5",
            None,
            UNAVAILABLE,
            "no credentials for provider anthropic: grant ANTHROPIC_API_KEY to opencode",
        ),
        # a key, but a model the provider does not have: not a credentials problem
        ("openai/no-such-model", "sk-not-a-real-key-0123", 1, "provider-failed"),
    ],
)
def test_opencode_without_credentials_is_authentication_required(
    cli_env, tmp_path, model, key, code, said
):
    if not (NPM_BIN / "opencode").exists():
        pytest.skip(f"opencode not installed in {NPM_BIN} (run .ci/install-clis.sh)")
    env = bare_env(cli_env, tmp_path, str(NPM_BIN))
    if key is not None:
        env["OPENAI_API_KEY"] = key
    run = harness(
        env, "run", "opencode", "hi", "--workspace", str(tmp_path), "--model", model, timeout=180
    )
    assert run.returncode == code, run.stderr
    assert said in run.stderr
    if key is None:
        assert "authentication-required" in run.stderr and "grants.toml" in run.stderr
    else:
        assert "authentication-required" not in run.stderr and key not in run.stderr
