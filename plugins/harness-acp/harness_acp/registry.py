"""The small registry of known ACP agents: command, arguments and environment per agent.

Each entry knows how to point its agent at the session's model endpoint (``base_url`` from the
session config or the injected credentials) with a private HOME under ``state_dir``; the key only
ever travels in the process environment. ``custom`` takes everything from the session config.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attrs import frozen
from harness_cli_kit import api_key, base_url, command_of, extra_env
from harness_hookspecs import HarnessError, SessionContext


@frozen
class Launch:
    argv: list[str]
    env: dict[str, str]
    #: The endpoint to probe before a turn (agents that retry forever on an unreachable one).
    base_url: str | None = None


Setup = Callable[[SessionContext, Path], Launch]


@frozen
class AgentSpec:
    name: str
    display_name: str
    command: tuple[str, ...]
    setup: Setup
    tested: str | None = None
    #: Verified to call host tools over HTTP MCP (``mcpServers`` in ``session/new``).
    mcp: bool = False
    #: The variable its key is injected as (named when the agent says it has no credentials).
    key_var: str | None = None
    #: Whose model it calls: credentials-env's vendor fallback injects that vendor's key.
    vendor: str | None = None
    #: Advertises ``sessionCapabilities.fork`` (ACP's ``session/fork``), verified to fork.
    fork: bool = False
    #: Whether the agent saved a turn (prompt, answer) of its native session under its home:
    #: a fork copies that home, and an agent that saves asynchronously is waited for.
    saved: Callable[[Path, str, str, str | None], bool] | None = None
    #: The ``_meta`` of a ``session/fork`` that keeps only the first N turns of a native session
    #: saved under the agent's home (``None``: the agent forks whole sessions only).
    fork_meta: Callable[[Path, str, int], dict[str, Any] | None] | None = None


def _command(context: SessionContext, default: tuple[str, ...]) -> list[str]:
    """The config's ``command`` (else ``default``) plus its ``args``."""
    args = context.config.get("args")
    extra = [str(a) for a in args] if isinstance(args, list | tuple) else []
    return [*command_of(context.config, list(default)), *extra]


def claude_code(context: SessionContext, home: Path) -> Launch:
    """``claude-code-acp`` (Zed): wraps Claude Code; Anthropic Messages API."""
    url = base_url(context, "ANTHROPIC_BASE_URL")
    env = {
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        # Claude Code retries 401 and connection errors for minutes by default.
        "CLAUDE_CODE_MAX_RETRIES": str(context.config.get("max_retries", 0)),
    }
    key = api_key(context, "ANTHROPIC_API_KEY")
    if key:
        env["ANTHROPIC_API_KEY"] = key
    if url:
        env["ANTHROPIC_BASE_URL"] = url
    if context.model:
        env["ANTHROPIC_MODEL"] = context.model
    env.update(extra_env(context.config))
    return Launch(_command(context, ("claude-code-acp",)), env, url)


def claude_saved(home: Path, native_id: str, prompt: str, answer: str | None) -> bool:
    """Whether Claude Code's transcript of ``native_id`` holds the turn ``prompt`` and its whole
    ``answer`` (the assistant's text after it): Claude Code writes its transcript lazily, a
    moment after the turn's answer."""
    for path in (home / ".claude" / "projects").glob(f"*/{native_id}.jsonl"):
        said: list[str] | None = None  # the assistant's text since the prompt
        for line in path.read_text(errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            message = entry.get("message") if isinstance(entry, dict) else None
            if not isinstance(message, dict):
                continue
            texts = _texts(message.get("content"))
            if entry.get("type") == "user" and prompt in texts:
                said = []
            elif entry.get("type") == "assistant" and said is not None:
                said += texts
        if said and (answer is None or "".join(said) == answer):
            return True
    return False


def claude_fork_meta(home: Path, native_id: str, turns: int) -> dict[str, Any] | None:
    """A fork of Claude Code's session ``native_id`` after its first ``turns`` turns:
    ``claude-code-acp`` passes ``_meta.claudeCode.options`` to the Agent SDK, whose
    ``resumeSessionAt`` (``--resume-session-at``) cuts the resumed conversation after the
    main chain's last assistant message before the next turn's prompt. ``None`` when the
    transcript has no such message."""
    for path in (home / ".claude" / "projects").glob(f"*/{native_id}.jsonl"):
        prompts, last = 0, None
        for line in path.read_text(errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if not isinstance(entry, dict) or entry.get("isSidechain") or entry.get("isMeta"):
                continue
            message = entry.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            if entry.get("type") == "user" and _texts(content):
                prompts += 1  # a turn's prompt (a tool result carries no text block)
                if prompts > turns:
                    break
            elif entry.get("type") == "assistant" and isinstance(entry.get("uuid"), str):
                last = entry["uuid"]
        if last is not None:
            return {"claudeCode": {"options": {"resumeSessionAt": last}}}
    return None


def _texts(content: object) -> list[str]:
    if isinstance(content, str):
        return [content]
    blocks = content if isinstance(content, list) else []
    return [b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str)]


def codex(context: SessionContext, home: Path) -> Launch:
    """``codex-acp`` (Zed): wraps Codex; OpenAI Responses API, config in ``CODEX_HOME``."""
    url = base_url(context, "OPENAI_BASE_URL")
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    env = {"HOME": str(home), "CODEX_HOME": str(codex_home)}
    key = api_key(context, "OPENAI_API_KEY")
    lines = []
    if context.model:
        lines.append(f"model = {json.dumps(context.model)}")
    if url:
        env["HARNESS_CODEX_API_KEY"] = key or ""
        lines += [
            'model_provider = "harness"',
            "[model_providers.harness]",
            'name = "harness_core provider"',
            f"base_url = {json.dumps(url)}",
            'wire_api = "responses"',
            'env_key = "HARNESS_CODEX_API_KEY"',
            # bounds 401/5xx retries; an unreachable endpoint is retried forever (probe + deadline)
            "request_max_retries = 0",
            "stream_max_retries = 0",
        ]
    elif key:
        env["OPENAI_API_KEY"] = key
    (codex_home / "config.toml").write_text("\n".join(lines) + "\n")
    env.update(extra_env(context.config))
    return Launch(_command(context, ("codex-acp",)), env, url)


#: Cline providers whose endpoint is fixed in Cline itself (cline 3.0.65): the only way to point
#: ``cline --acp`` at a local, OpenAI-compatible server, because its ACP mode ignores a configured
#: ``baseUrl``. Whatever serves the model (LM Studio, or harness_core's fake model server in tests)
#: must listen on exactly this port.
CLINE_LOCAL_ENDPOINTS = {"lmstudio": "http://localhost:1234/v1"}


def cline(context: SessionContext, home: Path) -> Launch:
    """``cline --acp`` (cline 3.0.65).

    Cline's ACP mode takes provider, model and key from ``CLINE_PROVIDER``, ``CLINE_MODEL`` and
    ``CLINE_API_KEY`` only and ignores a provider's ``baseUrl``, so a custom endpoint cannot be
    configured. Two routes:

    - **local** (``provider: lmstudio``): Cline's LM Studio provider always dials the fixed,
      OpenAI-compatible ``http://localhost:1234/v1`` (:data:`CLINE_LOCAL_ENDPOINTS`); whatever
      serves the model -- LM Studio, or the fake model server started with ``port=1234`` -- must
      listen there. That endpoint is probed before each turn, so nothing listening ->
      ``provider-unavailable`` within seconds. Cline sends a model id from its own LM Studio list
      (``openai/gpt-oss-20b`` unless ``model`` names one of the others), any server must accept it.
      (``ollama``'s ``http://localhost:11434`` is fixed too, but Cline resolves no model for it
      and refuses the prompt, so it is not offered.)
    - **vendor** (any other Cline provider id, e.g. ``anthropic``, ``openai-native``,
      ``openrouter``): Cline dials the vendor's own endpoint with ``api_key`` (or
      ``CLINE_API_KEY`` from the injected credentials); no probe.

    A ``base_url`` in the config is refused (``invalid-request``) unless it is the local
    provider's own fixed endpoint, rather than silently ignored. ``CLINE_SESSION_BACKEND_MODE=local``
    keeps Cline's sessions in the agent process, under the private HOME, instead of Cline's
    background hub (``cline --cline-hub-daemon``, which detaches from the session's process group).
    """
    env = {"HOME": str(home), "CLINE_SESSION_BACKEND_MODE": "local"}
    key = api_key(context, "CLINE_API_KEY")
    if key:
        env["CLINE_API_KEY"] = key
    provider = context.config.get("provider")
    if provider is not None and (not isinstance(provider, str) or not provider):
        raise HarnessError("invalid-request", "provider must be a Cline provider id")
    local = CLINE_LOCAL_ENDPOINTS.get(provider) if provider else None
    wanted = context.config.get("base_url")
    if wanted is not None and wanted != local and _norm(wanted) != _norm(local):
        raise HarnessError(
            "invalid-request",
            "cline --acp ignores base_url; use provider=lmstudio and serve the model on "
            f"{CLINE_LOCAL_ENDPOINTS['lmstudio']} (see the harness-acp README)",
        )
    if provider:
        env["CLINE_PROVIDER"] = provider
    if context.model:
        env["CLINE_MODEL"] = context.model
    env.update(extra_env(context.config))
    return Launch(_command(context, ("cline", "--acp")), env, local)


def _norm(url: object) -> str | None:
    if not isinstance(url, str):
        return None
    return url.rstrip("/").replace("://127.0.0.1:", "://localhost:")


def custom(context: SessionContext, home: Path) -> Launch:
    """``custom``: the command (and ``env``) come from the session config."""
    if "command" not in context.config:
        raise HarnessError("invalid-request", "acp:custom needs a command in its config")
    env = {"HOME": str(home), **extra_env(context.config)}
    url = context.config.get("base_url")
    return Launch(_command(context, ()), env, url if isinstance(url, str) and url else None)


AGENTS: dict[str, AgentSpec] = {
    spec.name: spec
    for spec in (
        AgentSpec(
            "claude-code",
            "Claude Code (ACP)",
            ("claude-code-acp",),
            claude_code,
            "@zed-industries/claude-code-acp 0.16.2",
            mcp=True,
            key_var="ANTHROPIC_API_KEY",
            vendor="anthropic",
            fork=True,
            saved=claude_saved,
            fork_meta=claude_fork_meta,
        ),
        AgentSpec(
            "codex",
            "Codex (ACP)",
            ("codex-acp",),
            codex,
            "@zed-industries/codex-acp 0.16.0",
            key_var="OPENAI_API_KEY",
            vendor="openai",
        ),
        AgentSpec(
            "cline",
            "Cline (ACP)",
            ("cline", "--acp"),
            cline,
            "cline 3.0.65",
            key_var="CLINE_API_KEY",
        ),
        AgentSpec("custom", "Any ACP agent", (), custom),
    )
}
