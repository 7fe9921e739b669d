"""The conformance profile of a CLI adapter: the real CLI, offline, against the fake model.

Each adapter declares an :class:`OfflineProfile` (data: which binary, model, endpoint style);
:func:`offline_profile` starts harness_core's fake model server with the slow step the kit cancels
and yields the :class:`~harness_hookspecs.specs.conformance.ConformanceProfile`. harness_core (its
``testing`` extra) is imported only here, when the conformance kit asks.

An adapter that asks the host (feature ``permissions``) names the tool call its CLI makes
(``approval_call``: the tool and its input, e.g. Claude Code's ``Bash``): the profile then has an
``approval_prompt`` on which the fake model scripts that call, and the kit's approvals check runs
(strict posture, a host that denies) instead of being skipped for want of a prompt.
"""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from harness_hookspecs import HarnessError
from harness_hookspecs.specs.conformance import ConformanceProfile

from .locate import require_cli

SLOW = "Take your time with the slow task"
APPROVAL = "Create approved.txt with a shell command"


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
    #: The tool call (name, input) the fake model makes on the profile's ``approval_prompt``
    #: (an adapter that asks the host); ``None``: no approval prompt.
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


class _Script:
    """The profile's fake model, for as many requests as the kit makes: the slow step (the
    cancel phase), the approval turn's tool call and its follow-up, ``ok`` for the rest."""

    times = None  # answers every request (the server's cursor never moves past it)

    def __init__(self, approval_call: tuple[str, Mapping[str, Any]] | None) -> None:
        self.approval_call = approval_call

    def __call__(self, request: Any) -> Any:
        from harness_core.testing.fake_model import Step, ToolCall

        if SLOW in request.last_user_text:
            return Step(text="still working", delay=30)
        if self.approval_call is None or APPROVAL not in json.dumps(request.body):
            return None
        if request.has_tool_result:
            return Step(text="Finished.")
        name, arguments = self.approval_call
        return Step(text="Asking to run it.", tool_calls=[ToolCall(name, dict(arguments))])


@contextmanager
def fake_server(
    port: int = 0, approval_call: tuple[str, Mapping[str, Any]] | None = None
) -> Iterator[Any]:
    """The fake model server with the slow step for cancel (and the approval turn's tool call).
    ``port``: a fixed port (agents whose endpoint cannot be configured); taken ->
    ``provider-unavailable``, never another."""
    from harness_core.testing.fake_model import FakeModelServer, fixed_port_lock

    busy = HarnessError(
        "provider-unavailable",
        f"port {port} on localhost is already in use: the fake model server must listen there "
        "(the agent's endpoint is fixed); stop whatever holds the port and run again",
    )
    with fixed_port_lock(port) if port else contextlib.nullcontext():  # other test processes wait
        if port and port_in_use(port):
            raise busy
        server = FakeModelServer([_Script(approval_call)], default_text="ok", port=port)
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
