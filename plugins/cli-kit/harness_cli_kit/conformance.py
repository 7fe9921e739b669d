"""The conformance profile of a CLI adapter: the real CLI, offline, against the fake model.

Each adapter declares an :class:`OfflineProfile` (data: which binary, model, endpoint style);
:func:`offline_profile` starts harness_core's fake model server with the slow step the kit cancels
and yields the :class:`~harness_hookspecs.specs.conformance.ConformanceProfile`. harness_core (its
``testing`` extra) is imported only here, when the conformance kit asks.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from harness_hookspecs import HarnessError
from harness_hookspecs.specs.conformance import ConformanceProfile

from .locate import require_cli

SLOW = "Take your time with the slow task"
#: The conformance kit's approval prompt: the fake model answers it with the profile's
#: ``approval_call`` (which the kit's host denies), then finishes once it sees the result.
APPROVAL = "Create the approval file now"


@dataclass(frozen=True)
class OfflineProfile:
    """How the conformance kit drives one CLI adapter offline."""

    binary: str
    model: str
    api_key: str = "sk-conf"
    #: ``anthropic``: the server's Messages endpoint; ``openai``: its ``/v1`` one.
    api: Literal["anthropic", "openai"] = "openai"
    #: How the adapter takes its binary: ``cli_path`` (a path) or ``command`` (an argv list).
    binary_key: Literal["cli_path", "command"] = "command"
    args: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: A fixed port for agents whose endpoint cannot be configured (no ``base_url`` then).
    port: int = 0
    #: ``(tool name, arguments)`` the fake model calls for the kit's approval prompt (an
    #: adapter that asks the host); ``None``: the approvals check runs no turn.
    approval_call: tuple[str, Mapping[str, Any]] | None = None

    def config(self) -> dict[str, Any]:
        """The session config without the endpoint (a missing CLI fails here, before any
        server starts)."""
        path = require_cli(self.binary)
        binary: Any = path if self.binary_key == "cli_path" else [path, *self.args]
        return {self.binary_key: binary, "api_key": self.api_key, **self.extra}


def port_in_use(port: int) -> bool:
    """Whether something already accepts connections on ``localhost:port`` (IPv4 or IPv6): a
    client dialling ``localhost`` could reach it instead of our server."""
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        try:
            with socket.socket(family, socket.SOCK_STREAM) as sock:
                sock.settimeout(0.5)
                if sock.connect_ex((host, port)) == 0:
                    return True
        except OSError:
            continue
    return False


@contextmanager
def fake_server(
    port: int = 0, approval_call: tuple[str, Mapping[str, Any]] | None = None
) -> Iterator[Any]:
    """The fake model server with the slow step for cancel and (with ``approval_call``) the
    approval prompt's tool call and the answer after its result. ``port``: a fixed port (agents
    whose endpoint cannot be configured); taken -> ``provider-unavailable``, never another."""
    from harness_core.testing.fake_model import FakeModelServer, Match, Step, ToolCall

    slow = Step(text="still working", delay=30, times=None, match=Match(contains=SLOW, tools=None))
    script: list[Any] = [slow]
    if approval_call is not None:
        name, arguments = approval_call
        call = Step(text="Asking to run it.", tool_calls=[ToolCall(name, dict(arguments))])
        finished = Step(text="Finished.")

        def respond(request: Any) -> Any:
            # Whichever of the kit's prompts comes (a cancelled slow turn may never reach the
            # model): the server replays its script in order, so one responder answers both.
            if SLOW in request.last_user_text:
                return slow
            if APPROVAL in request.last_user_text and request.tool_names:
                return finished if request.has_tool_result else call
            return None

        script = [respond] * 50  # a responder item is used once per request it answers
    busy = HarnessError(
        "provider-unavailable",
        f"port {port} on localhost is already in use: the fake model server must listen there "
        "(the agent's endpoint is fixed); stop whatever holds the port and run again",
    )
    if port and port_in_use(port):
        raise busy
    server = FakeModelServer(script, default_text="ok", port=port)
    try:
        server.start()
    except OSError:
        raise busy from None
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def offline_profile(profile: OfflineProfile) -> Iterator[ConformanceProfile]:
    config = profile.config()
    with fake_server(profile.port, profile.approval_call) as server:
        if not profile.port:
            api = profile.api
            config["base_url"] = server.base_url if api == "anthropic" else server.openai_base_url
        yield ConformanceProfile(
            slow_prompt=SLOW,
            model=profile.model,
            config=config,
            turn_timeout=60,
            cancel_after=1.0,
            approval_prompt=APPROVAL if profile.approval_call is not None else None,
        )
