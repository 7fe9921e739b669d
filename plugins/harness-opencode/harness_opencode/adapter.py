"""The OpenCode adapter: one ``opencode serve`` process per turn, driven over HTTP.

What it relies on (verified against opencode-ai 1.18.33, see ``docs/cli-streams.md`` and the
server's ``/doc`` OpenAPI document):

- a private HOME and XDG dirs under the session's ``state_dir`` (sessions live in the data dir, so
  resume needs the same dirs) and a generated config file given by ``OPENCODE_CONFIG``;
- ``--dir WORKSPACE`` *and* ``PWD=WORKSPACE`` (a Bun binary: it takes its cwd from ``$PWD``);
- an OpenAI-compatible provider whose ``apiKey`` is ``{env:HARNESS_OPENCODE_API_KEY}``, so the key
  only ever lives in the process environment (never in a file);
- the first turn creates the OpenCode session with a title (no title-generation side request);
  its ``ses_...`` id is kept in ``state_dir`` and later turns (in any process) prompt it again;
- ``permission`` rules ``ask`` for shell, edits, fetches and paths outside the workspace unless
  the posture is ``dangerous``: every ``permission.asked`` is answered through the runtime's
  approval seam (:mod:`.turn`);
- a turn with an output schema posts ``format: {"type": "json_schema", ...}``: OpenCode adds a
  ``StructuredOutput`` tool and returns the call's input as the reply's ``info.structured``
  (not validated: the runtime does).

OpenCode takes ~70 s to give up on an unreachable endpoint and has no retry knob, so the adapter
probes the endpoint (TCP connect, bounded) before spawning and fails ``provider-unavailable`` at
once; anything later is bounded by the controller's deadline.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from harness_cli_kit import (
    COMMAND_PROPERTY,
    api_key,
    base_url,
    bridge_of,
    command_of,
    extra_env,
    located_command,
    opencode_mcp,
    preflight,
    require_workspace,
)
from harness_cli_kit.lifecycle import PerTurnCliAdapter
from harness_hookspecs import HarnessError, Payload, RunTurnRequest, SessionContext, Status

from .events import ServeEvents, classify, parse_events
from .turn import VENDOR, ServeTurn

TESTED_CLI = "1.18.33"
KEY_VAR = "HARNESS_OPENCODE_API_KEY"
PROVIDER_ID = "harness"
STATE_FILE = "opencode-session.json"
#: The permissions that ask (OpenCode's ``edit`` covers write, edit and patch); reads inside
#: the workspace run without asking, as in Claude Code's default mode.
ASKING = ("bash", "edit", "webfetch", "external_directory")


def permission_rules(posture: str) -> dict[str, str]:
    """OpenCode's ``permission`` config for a posture: ``dangerous`` allows everything, the
    others ask (the runtime answers: ``auto`` by its command policy, ``strict`` by the host).
    The ``question`` tool is off: nobody would answer it."""
    action = "allow" if posture == "dangerous" else "ask"
    return {**dict.fromkeys(ASKING, action), "question": "deny"}


def message_body(
    prompt: str, model: str, schema: Mapping[str, Any] | None, instructions: str | None = None
) -> dict[str, Any]:
    """The ``POST /session/{id}/message`` body: the prompt, the model, the schema if any, the
    host's instructions (``system``: added to the system prompt of this message's loop)."""
    provider, _, model_id = model.partition("/")
    body: dict[str, Any] = {
        "parts": [{"type": "text", "text": prompt}],
        "model": {"providerID": provider, "modelID": model_id},
    }
    if instructions:
        body["system"] = instructions
    if schema is not None:
        body["format"] = {"type": "json_schema", "schema": dict(schema)}
    return body


class OpenCodeAdapter(PerTurnCliAdapter):
    """``opencode``: OpenCode, one ``opencode serve`` per turn, resume by native session id."""

    name = "opencode"
    state_file = STATE_FILE
    command_name = "opencode"
    #: its key comes as OPENAI_API_KEY (credentials-env's vendor fallback for openai)
    vendor = VENDOR

    display_name = "OpenCode"
    tested_cli = f"opencode-ai {TESTED_CLI}"
    details = {
        "wire_api": "chat-completions",
        "approvals": "strict and auto ask the host: opencode serve's permission.asked",
        "structured_output": "format json_schema (the StructuredOutput tool)",
    }
    features = (
        "resume",
        "cancel",
        "usage",
        "permissions",
        "structured-output",
        "mcp",
        "instructions",
    )
    config_properties = {"command": COMMAND_PROPERTY, "provider_package": {"type": "string"}}

    async def check(self, context: SessionContext) -> str:
        command_of(context.config, [self.name])
        return ""

    # -- turn -------------------------------------------------------------------------------

    def _settings(self, context: SessionContext) -> tuple[str | None, str | None, str]:
        url = base_url(context, "OPENAI_BASE_URL")
        key = api_key(context, "OPENAI_API_KEY")
        model = context.model or context.config.get("model")
        if not isinstance(model, str) or not model:
            raise HarnessError(
                "invalid-request",
                "opencode needs a model: --model PROVIDER/MODEL (e.g. --model "
                "openai/gpt-4.1-mini), the session's model, or config model",
            )
        return url, key, model

    def _write_config(
        self, context: SessionContext, home: Path, base_url: str | None, model: str
    ) -> tuple[Path, str]:
        config: dict[str, Any] = {
            "autoupdate": False,
            "share": "disabled",
            "permission": permission_rules(context.posture),
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

    async def run_turn(
        self, request: RunTurnRequest, context: SessionContext
    ) -> AsyncIterator[Payload]:
        session = self._sessions.of(request.session)
        workspace = require_workspace(context, self.name)
        url, key, model = self._settings(context)
        home = Path(context.state_dir) / "home"
        home.mkdir(parents=True, exist_ok=True)
        config_path, full_model = self._write_config(context, home, url, model)
        unreachable = await preflight(context, url)
        if unreachable is not None:
            yield unreachable
            return
        # The server's password keeps other local users out; it lives in its environment only.
        password = secrets.token_urlsafe(24)
        context.add_secret(password)
        env = {**self._env(context, home, config_path, key), "OPENCODE_SERVER_PASSWORD": password}
        argv = [*located_command(context.config, self.name), "serve"]
        argv += ["--hostname", "127.0.0.1", "--port", "0"]
        process = await context.spawn(argv, env=env, cwd=workspace)
        yield Status(message="opencode started")
        turn = ServeTurn(
            context,
            process,
            password,
            workspace,
            session,
            message_body(request.prompt, full_model, request.output_schema, context.instructions),
            structured=request.output_schema is not None,
        )
        async for payload in turn.run():
            yield payload


__all__ = ["OpenCodeAdapter", "ServeEvents", "classify", "message_body", "parse_events"]
