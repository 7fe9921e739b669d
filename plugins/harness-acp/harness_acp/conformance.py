"""``conformance_profile``: drive the real CLI offline against harness_core's fake model server.

Needs ``harness-core[testing]`` (imported lazily, only when the conformance kit asks).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager

from harness_hookspecs import HarnessError
from harness_hookspecs.specs.conformance import ConformanceProfile

SLOW = "Take your time with the slow task"


def find_binary(name: str) -> str:
    from harness_core.testing.clis import find_cli

    return find_cli(name)


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
def fake_server(openai: bool = True, port: int = 0) -> Iterator[tuple[str, object]]:
    """The fake model server with the slow step for cancel. ``port``: a fixed port (agents
    whose endpoint cannot be configured); taken -> ``provider-unavailable``, never another."""
    from harness_core.testing.fake_model import FakeModelServer, Match, Step

    script = [
        Step(text="still working", delay=30, times=None, match=Match(contains=SLOW, tools=None))
    ]
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
        yield (server.openai_base_url if openai else server.base_url), server
    finally:
        server.stop()


#: agent -> (binary, OpenAI-style endpoint?, model, extra config, fixed port or 0).
#: cline: its ACP mode ignores base_url, so it runs through its ``lmstudio`` provider, whose
#: endpoint is fixed at http://localhost:1234/v1 (see the registry); the model must be one of
#: Cline's LM Studio ids (an unknown one is replaced by Cline's default anyway).
OFFLINE = {
    "claude-code": ("claude-code-acp", False, "claude-sonnet-4-5", {}, 0),
    "codex": ("codex-acp", True, "gpt-5", {"mode": "full-access"}, 0),
    "cline": ("cline", True, "openai/gpt-oss-20b", {"provider": "lmstudio"}, 1234),
}


@contextmanager
def profile(agent: str) -> Iterator[ConformanceProfile]:
    binary, openai, model, extra, port = OFFLINE[agent]
    command = [find_binary(binary)]
    if agent == "cline":
        command.append("--acp")
    with fake_server(openai, port) as (url, _):
        config = {"command": command, "api_key": "sk-conf", **extra}
        if not port:  # a fixed-port agent dials its own endpoint
            config["base_url"] = url
        yield ConformanceProfile(
            slow_prompt=SLOW,
            model=model,
            config=config,
            turn_timeout=60,
            cancel_after=1.0,
        )
