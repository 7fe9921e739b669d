"""The Pi adapter: one ``pi --mode json`` process per turn.

What it relies on (verified against @mariozechner/pi-coding-agent 0.73.1, see
``docs/cli-streams.md``):

- a private ``PI_CODING_AGENT_DIR`` (and HOME) under the session's ``state_dir`` holding a
  generated ``models.json`` (one provider ``harness`` pointing at the session's base URL, whose
  ``apiKey`` names the environment variable ``HARNESS_PI_API_KEY`` - the key itself is never
  written to a file) and ``settings.json`` with Pi's own retries off (otherwise an unreachable
  endpoint takes ~21 s);
- **Pi exits 0 when the model call failed**: the outcome is read from the stream
  (``stopReason: "error"`` + ``errorMessage``), never from the exit code alone;
- resume with ``--session NATIVE_ID``; the id comes from the first stream line (the session
  header) and is kept in ``state_dir``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness_cli_kit import NativeSession, api_key, base_url, command_of, extra_env, safe_prompt
from harness_cli_kit.lifecycle import CliTurn, PerTurnCliAdapter
from harness_hookspecs import HarnessError, SessionContext

from .stream import PiStream, classify, parse_stream

TESTED_CLI = "0.73.1"
KEY_VAR = "HARNESS_PI_API_KEY"
PROVIDER_ID = "harness"
STATE_FILE = "pi-session.json"
APIS = ("openai-completions", "openai-responses", "anthropic-messages")


class PiAdapter(PerTurnCliAdapter):
    """``pi``: the Pi coding agent, one process per turn, resume by native session id."""

    name = "pi"
    state_file = STATE_FILE

    display_name = "Pi coding agent"
    tested_cli = f"@mariozechner/pi-coding-agent {TESTED_CLI}"

    async def check(self, context: SessionContext) -> str:
        command_of(context.config, [self.name])
        return ""

    def _settings(self, context: SessionContext) -> tuple[str | None, str | None, str, str]:
        api = str(context.config.get("api", "openai-completions"))
        if api not in APIS:
            raise HarnessError("invalid-request", "api must be one of " + ", ".join(APIS))
        vendor = "ANTHROPIC" if api == "anthropic-messages" else "OPENAI"
        url = base_url(context, f"{vendor}_BASE_URL")
        key = api_key(context, f"{vendor}_API_KEY")
        model = context.model or context.config.get("model")
        if not isinstance(model, str) or not model:
            raise HarnessError("invalid-request", "pi needs a model (request or config)")
        return url, key, model, api

    def _write_agent_dir(
        self, context: SessionContext, agent: Path, base_url: str | None, model: str, api: str
    ) -> None:
        agent.mkdir(parents=True, exist_ok=True)
        if base_url:
            provider = {
                "baseUrl": base_url,
                "api": api,
                "apiKey": KEY_VAR,
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                "models": [{"id": model, "reasoning": False}],
            }
            (agent / "models.json").write_text(
                json.dumps({"providers": {PROVIDER_ID: provider}}, indent=2)
            )
        settings: dict[str, Any] = {"retry": {"enabled": False}}
        extra = context.config.get("settings")
        if isinstance(extra, Mapping):
            settings.update(extra)
        (agent / "settings.json").write_text(json.dumps(settings, indent=2))

    def launch(
        self, prompt: str, context: SessionContext, session: NativeSession, workspace: str
    ) -> CliTurn:
        url, key, model, api = self._settings(context)
        home = Path(context.state_dir) / "home"
        agent = home / ".pi" / "agent"
        self._write_agent_dir(context, agent, url, model, api)
        argv = [*command_of(context.config, [self.name]), "--mode", "json"]
        if url:
            argv += ["--provider", PROVIDER_ID, "--model", model]
        else:
            argv += ["--model", model]
        argv += ["--no-extensions", "--no-skills", "--no-prompt-templates", "--no-themes"]
        if context.posture == "strict":
            argv += ["--tools", "read"]
        if session.native_id:
            argv += ["--session", session.native_id]
        # Pi treats a leading '@' as a file to include and a leading '-' as a flag.
        argv.append(safe_prompt(prompt, ("-", "@")))
        env = {
            "HOME": str(home),
            "PWD": workspace,
            "PI_CODING_AGENT_DIR": str(agent),
            "PI_OFFLINE": "1",
            "PI_SKIP_VERSION_CHECK": "1",
            "PI_TELEMETRY": "0",
            KEY_VAR: key or "",
            **extra_env(context.config),
        }
        return CliTurn(argv, env, PiStream(), probe=url, started="pi started")


__all__ = ["PiAdapter", "PiStream", "classify", "parse_stream"]
