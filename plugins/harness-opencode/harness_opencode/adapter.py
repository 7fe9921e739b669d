"""The OpenCode adapter: one ``opencode run --format json`` process per turn.

What it relies on (verified against opencode-ai 1.18.33, see ``docs/cli-streams.md``):

- a private HOME and XDG dirs under the session's ``state_dir`` (sessions live in the data dir, so
  resume needs the same dirs) and a generated config file given by ``OPENCODE_CONFIG``;
- ``--dir WORKSPACE`` *and* ``PWD=WORKSPACE`` (a Bun binary: it takes its cwd from ``$PWD``);
- an OpenAI-compatible provider whose ``apiKey`` is ``{env:HARNESS_OPENCODE_API_KEY}``, so the key
  only ever lives in the process environment (never in a file);
- ``--title`` on the first turn (no title-generation side request);
- resume with ``--session NATIVE_ID``; the native id is only known from the first turn's stream,
  so it is kept in ``state_dir``.

OpenCode takes ~70 s to give up on an unreachable endpoint and has no retry knob, so the adapter
probes the endpoint (TCP connect, bounded) before spawning and fails ``provider-unavailable`` at
once; anything later is bounded by the controller's deadline.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness_cli_kit import (
    NativeSession,
    api_key,
    base_url,
    bridge_of,
    command_of,
    extra_env,
    opencode_mcp,
    safe_prompt,
)
from harness_cli_kit.lifecycle import CliTurn, PerTurnCliAdapter
from harness_hookspecs import HarnessError, SessionContext

from .stream import OpenCodeStream, classify, parse_stream

TESTED_CLI = "1.18.33"
KEY_VAR = "HARNESS_OPENCODE_API_KEY"
PROVIDER_ID = "harness"
STATE_FILE = "opencode-session.json"


class OpenCodeAdapter(PerTurnCliAdapter):
    """``opencode``: OpenCode CLI, one process per turn, resume by native session id."""

    name = "opencode"
    state_file = STATE_FILE

    display_name = "OpenCode"
    tested_cli = f"opencode-ai {TESTED_CLI}"
    details = {"wire_api": "chat-completions"}
    features = ("resume", "cancel", "usage", "mcp")

    async def check(self, context: SessionContext) -> str:
        command_of(context.config, [self.name])
        return ""

    # -- turn -------------------------------------------------------------------------------

    def _settings(self, context: SessionContext) -> tuple[str | None, str | None, str]:
        url = base_url(context, "OPENAI_BASE_URL")
        key = api_key(context, "OPENAI_API_KEY")
        model = context.model or context.config.get("model")
        if not isinstance(model, str) or not model:
            raise HarnessError("invalid-request", "opencode needs a model (request or config)")
        return url, key, model

    def _write_config(
        self, context: SessionContext, home: Path, base_url: str | None, model: str
    ) -> tuple[Path, str]:
        allow = "deny" if context.posture == "strict" else "allow"
        config: dict[str, Any] = {
            "autoupdate": False,
            "share": "disabled",
            "permission": {"edit": allow, "bash": allow, "webfetch": allow},
        }
        if base_url:
            model_id = model.split("/", 1)[1] if model.startswith(PROVIDER_ID + "/") else model
            config["provider"] = {
                PROVIDER_ID: {
                    "npm": str(context.config.get("provider_package", "@ai-sdk/openai-compatible")),
                    "name": "harness_core provider",
                    "options": {"baseURL": base_url, "apiKey": "{env:" + KEY_VAR + "}"},
                    "models": {model_id: {"name": model_id}},
                }
            }
            full = f"{PROVIDER_ID}/{model_id}"
        else:
            if "/" not in model:
                raise HarnessError(
                    "invalid-request", "without base_url the model must be provider/model"
                )
            full = model
        config["model"] = full
        config["small_model"] = full
        bridge = bridge_of(context)
        if bridge is not None:
            config["mcp"] = opencode_mcp(bridge)
        path = home / "opencode.json"
        path.write_text(json.dumps(config, indent=2))
        return path, full

    def _env(
        self, context: SessionContext, home: Path, config_path: Path, key: str | None
    ) -> dict[str, str]:
        workspace = context.workspace or str(home)
        env = {
            "HOME": str(home),
            "PWD": workspace,
            "OPENCODE_CONFIG": str(config_path),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
            "OPENCODE_DISABLE_SHARE": "1",
            "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
            "OPENCODE_DISABLE_CLAUDE_CODE": "1",
            KEY_VAR: key or "",
        }
        return {**env, **extra_env(context.config)}

    def launch(
        self, prompt: str, context: SessionContext, session: NativeSession, workspace: str
    ) -> CliTurn:
        url, key, model = self._settings(context)
        home = Path(context.state_dir) / "home"
        home.mkdir(parents=True, exist_ok=True)
        config_path, full_model = self._write_config(context, home, url, model)
        argv = [*command_of(context.config, [self.name]), "run", "--format", "json"]
        argv += ["--dir", workspace, "-m", full_model]
        if session.native_id:
            argv += ["--session", session.native_id]
        else:
            argv += ["--title", "harness_core session"]
        argv += ["--", safe_prompt(prompt)]
        env = self._env(context, home, config_path, key)
        return CliTurn(argv, env, OpenCodeStream(), probe=url, started="opencode started")


__all__ = ["OpenCodeAdapter", "OpenCodeStream", "classify", "parse_stream"]
