"""The `{{ cookiecutter.plugin_name }}` adapter: spawn the agent command per turn, map its JSONL.

Built on harness_cli_kit, the floor every bundled CLI adapter shares: the session lifecycle
(`PerTurnCliAdapter`: open, resume with the agent's own session id kept under `state_dir`,
close), spawning the turn's process (its own process group, inside the session's sandbox,
killed when the turn ends, times out or is cancelled), and the stream base (`JsonLinesStream`:
blank, over-long and non-JSON lines are counted, never forwarded). The runtime does sessions,
the ledger, envelopes and ordering, deadlines and exactly one terminal event per turn.

What stays here is this CLI's own: its command line (`launch`) and the mapping of its native
lines to contract payloads (`AgentStream.event`), failures mapped to fixed reasons.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from harness_cli_kit import (
    COMMAND_PROPERTY,
    JsonLinesStream,
    NativeSession,
    command_of,
    count,
    usage_report,
)
from harness_cli_kit.lifecycle import CliTurn, PerTurnCliAdapter
from harness_hookspecs import (
    MessageDelta,
    Payload,
    SessionContext,
    ToolCompleted,
    ToolStarted,
    TurnCompleted,
    UsageReported,
)

from . import __version__

NAME = {{ cookiecutter.plugin_name | tojson }}
#: Host variable that overrides the command (a JSON list or a shell-style string).
ENV_COMMAND = "{{ cookiecutter.__env_prefix }}_COMMAND"
#: The bundled stand-in agent, run by path so it needs nothing on the child's PYTHONPATH.
FAKE_AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_agent.py")
#: Native error kinds -> the contract's fixed reasons.
ERROR_REASONS = {
    "auth": "authentication-required",
    "unavailable": "provider-unavailable",
    "rate_limit": "provider-unavailable",
}


class AgentStream(JsonLinesStream):
    """The agent's native lines -> contract payloads (pure: no I/O). Unknown native types and
    unknown fields are dropped (forward compatibility); raw provider text never crosses."""

    cli = NAME

    def __init__(self) -> None:
        super().__init__()
        self.ended = False
        self._usage: UsageReported | None = None

    def event(self, data: dict[str, Any]) -> list[Payload]:
        kind = data.get("type")
        if kind == "init" and isinstance(data.get("session"), str):
            self.session_id = data["session"]  # the agent's own session id (kept for resume)
        elif kind == "text" and isinstance(data.get("delta"), str) and data["delta"]:
            return [MessageDelta(text=data["delta"])]
        elif kind == "tool":
            call_id, name = str(data.get("id"))[:256], str(data.get("name"))[:128]
            if data.get("phase") == "start":
                return [ToolStarted(call_id=call_id, name=name, summary=f"running {name}")]
            return [ToolCompleted(call_id=call_id, name=name, ok=bool(data.get("ok", True)))]
        elif kind == "usage":
            tokens_in, tokens_out = count(data.get("input")), count(data.get("output"))
            self._usage = usage_report({"input_tokens": tokens_in, "output_tokens": tokens_out})
        elif kind == "result":
            self.ended = True
            text = data.get("text")
            self.last_text = text if isinstance(text, str) else None
        elif kind == "error":
            # Ends the turn now: the rest of the stream is not read.
            self.failure = ERROR_REASONS.get(str(data.get("kind")), "provider-failed")
        return []  # init, thinking, anything new: not part of the contract

    def usage(self) -> UsageReported | None:
        return self._usage

    def terminal(self, exit_code: int | None) -> Payload:
        if self.failure is not None:
            return self.failed(self.failure)
        if not self.ended:
            return self.unfinished("exited without ending the turn")
        return TurnCompleted(text=self.last_text)


#: Parse a whole captured stream: ``parse_stream(lines, exit_code=0) -> payloads``.
parse_stream = AgentStream.parse


class {{ cookiecutter.__class_prefix }}Adapter(PerTurnCliAdapter):
    """A full harness adapter (see `harness_hookspecs.HarnessAdapter`)."""

    name = NAME
    state_file = "{{ cookiecutter.__package_name }}-session.json"
    display_name = {{ cookiecutter.plugin_name | tojson }}
    tested_cli = f"fake_agent.py ({NAME} {__version__})"
    # Declare only what really works: the conformance kit checks each declared feature.
    features = ("resume", "cancel", "usage")
    # The config keys this adapter reads besides the kit's own (a session config with any
    # other key is refused at open, naming it).
    config_properties: Mapping[str, Any] = MappingProxyType({"command": COMMAND_PROPERTY})

    def _command(self, config: Mapping[str, Any]) -> list[str]:
        raw = config.get("command") or os.environ.get(ENV_COMMAND)
        return command_of({"command": raw}, []) if raw else [sys.executable, FAKE_AGENT]

    async def check(self, context: SessionContext) -> str:
        self._command(context.config)  # a bad command is invalid-request at open, not later
        return ""

    def launch(
        self, prompt: str, context: SessionContext, session: NativeSession, workspace: str
    ) -> CliTurn:
        argv = [*self._command(context.config), "--session-id", context.session_id]
        argv += ["--state-dir", context.state_dir]
        if session.native_id:  # the agent named its session on an earlier turn
            argv.append("--resume")
        if context.model:
            argv += ["--model", context.model]
        argv += ["-p", prompt]
        # No in-band cancel: the runtime kills the turn's process group (a CLI with a cancel
        # message would override `cancel_turn`).
        return CliTurn(argv, {}, AgentStream(), started=f"{NAME} started")
