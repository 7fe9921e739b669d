"""Injection through the core: a harness spawns ``env`` via ``context.spawn`` and we look at
exactly what arrived - the granted variables plus the minimal base environment, nothing else."""

from __future__ import annotations

import os

import anyio
import pytest
from credentials_env import EnvCredentialResolver, FileCredentialResolver
from harness_hookspecs import (
    HarnessDescriptor,
    HarnessError,
    MessageCompleted,
    SessionRef,
    TurnCompleted,
    hookimpl,
)

from harness_core import Controller, plugins_from
from harness_core.process import BASE_ENV_KEYS
from harness_core.proctree import OWNER_ENV

AGENT_KEY = "agent-level-llm-key-0123456789"
VENDOR_KEY = "vendor-fallback-llm-key-0123456789"
INTEGRATION_KEY = "integration-token-0123456789"
HOST_ONLY = "host-only-secret-0123456789"


class EnvProbe:
    """A class adapter whose turn spawns ``env`` and records what the child saw."""

    name = "env-probe"

    def __init__(self, vendor: str | None = "anthropic") -> None:
        self.vendor = vendor
        self.seen: dict[str, dict[str, str]] = {}

    def describe(self) -> HarnessDescriptor:
        return HarnessDescriptor(
            provider=self.name, targets={"local"}, features={"resume", "cancel"}, vendor=self.vendor
        )

    async def open_session(self, request, context):
        return SessionRef(provider=self.name, target="local", session_id=context.session_id)

    async def resume_session(self, request, context):
        return request.session

    async def run_turn(self, request, context):
        process = await context.spawn(["env", "-0"])
        raw = b""
        async for line in process.lines():
            raw += line + b"\n"
        await process.wait()
        env = {}
        for item in raw.rstrip(b"\n").split(b"\0"):
            if item:
                key, _, value = item.decode().partition("=")
                env[key] = value
        self.seen[request.session.session_id] = env
        yield MessageCompleted(text="\n".join(f"{k}={v}" for k, v in sorted(env.items())))
        yield TurnCompleted()

    async def cancel_turn(self, request, context):
        return None

    async def close_session(self, request, context):
        return None


class Resolvers:
    def __init__(self, *resolvers):
        self.resolvers = resolvers

    @hookimpl
    def register_credential_resolvers(self, register):
        for resolver in self.resolvers:
            register(resolver)


@pytest.fixture
def host_env(monkeypatch):
    monkeypatch.setenv("HOST_ONLY_SECRET", HOST_ONLY)
    monkeypatch.setenv("REVIEWER_ANTHROPIC_KEY", AGENT_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", VENDOR_KEY)
    monkeypatch.setenv("REVIEWER_GITHUB_TOKEN", INTEGRATION_KEY)


GRANTS = [
    {"agent": "reviewer", "env": "ANTHROPIC_API_KEY", "from_env": "REVIEWER_ANTHROPIC_KEY"},
    {
        "agent": "reviewer",
        "purpose": "integration",
        "env": "GITHUB_TOKEN",
        "from_env": "REVIEWER_GITHUB_TOKEN",
    },
    {"vendor": "anthropic", "env": "ANTHROPIC_API_KEY"},
]


def run_probe(tmp_path, probe, resolvers, sessions):
    """Open one session per (agent) in ``sessions`` concurrently; return events per agent."""
    controller = Controller(
        plugins=plugins_from([probe, Resolvers(*resolvers)]),
        ledger=f"sqlite:///{tmp_path}/ledger.sqlite",
        state_dir=tmp_path / "state",
    )
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    results = {}

    async def one(agent):
        ref = await controller.open_session(
            harness=probe.name, workspace=str(workspace), agent=agent
        )
        result = await controller.run_turn(ref, "show env")
        await controller.close_session(ref)
        results[agent] = (ref.session_id, result)

    async def main():
        async with controller:
            if len(sessions) == 1:
                await one(sessions[0])
                return
            async with anyio.create_task_group() as tg:
                for agent in sessions:
                    tg.start_soon(one, agent)

    anyio.run(main)
    return {agent: (probe.seen[sid], result) for agent, (sid, result) in results.items()}


def base_keys() -> set[str]:
    # plus the runtime's process owner tag (not a secret: it names the controller process)
    return {k for k in BASE_ENV_KEYS if k in os.environ} | {OWNER_ENV}


def test_only_granted_variables_and_the_base_env_reach_the_process(tmp_path, host_env):
    probe = EnvProbe()
    seen = run_probe(tmp_path, probe, [EnvCredentialResolver(GRANTS)], ["reviewer"])
    env, result = seen["reviewer"]
    assert result.ok
    assert set(env) - {"PWD", "SHLVL", "_"} == base_keys() | {"ANTHROPIC_API_KEY", "GITHUB_TOKEN"}
    assert env["ANTHROPIC_API_KEY"] == AGENT_KEY  # the agent's grant, not the vendor fallback
    assert env["GITHUB_TOKEN"] == INTEGRATION_KEY
    assert "HOST_ONLY_SECRET" not in env
    assert HOST_ONLY not in "".join(env.values())
    assert "REVIEWER_ANTHROPIC_KEY" not in env
    # the child printed them; the events carry the redacted text only
    text = " ".join(str(e.payload) for e in result.events)
    assert AGENT_KEY not in text and INTEGRATION_KEY not in text
    assert "ANTHROPIC_API_KEY=[REDACTED]" in text


def test_each_session_gets_its_own_grants(tmp_path, host_env):
    probe = EnvProbe()
    seen = run_probe(tmp_path, probe, [EnvCredentialResolver(GRANTS)], ["reviewer", "writer", None])
    reviewer, writer, anonymous = seen["reviewer"][0], seen["writer"][0], seen[None][0]
    assert reviewer["ANTHROPIC_API_KEY"] == AGENT_KEY
    # no grant for writer: the vendor fallback for the LLM key, and no integration token
    assert writer["ANTHROPIC_API_KEY"] == VENDOR_KEY
    assert "GITHUB_TOKEN" not in writer
    assert anonymous["ANTHROPIC_API_KEY"] == VENDOR_KEY
    for env in (reviewer, writer, anonymous):
        assert "HOST_ONLY_SECRET" not in env


def test_no_vendor_no_fallback(tmp_path, host_env):
    probe = EnvProbe(vendor=None)
    seen = run_probe(tmp_path, probe, [EnvCredentialResolver(GRANTS)], ["writer"])
    env = seen["writer"][0]
    assert "ANTHROPIC_API_KEY" not in env and "GITHUB_TOKEN" not in env


def test_an_agent_grant_for_a_purpose_replaces_the_fallback_for_that_purpose(tmp_path, host_env):
    # The agent's LLM grant uses another variable name: the vendor fallback must not ride along.
    grants = [
        {"agent": "reviewer", "env": "ANTHROPIC_AUTH_TOKEN", "from_env": "REVIEWER_ANTHROPIC_KEY"},
        {"vendor": "anthropic", "env": "ANTHROPIC_API_KEY"},
        {
            "vendor": "anthropic",
            "purpose": "integration",
            "env": "GITHUB_TOKEN",
            "from_env": "REVIEWER_GITHUB_TOKEN",
        },
    ]
    probe = EnvProbe()
    env = run_probe(tmp_path, probe, [EnvCredentialResolver(grants)], ["reviewer"])["reviewer"][0]
    assert env["ANTHROPIC_AUTH_TOKEN"] == AGENT_KEY
    assert "ANTHROPIC_API_KEY" not in env
    # no agent-level integration grant: the integration fallback still applies
    assert env["GITHUB_TOKEN"] == INTEGRATION_KEY


def test_priority_and_revocation_across_resolvers(tmp_path, host_env, monkeypatch):
    monkeypatch.setenv("REVIEWER_BACKUP_KEY", "backup-llm-key-0123456789")
    secrets = tmp_path / "secrets.toml"
    secrets.write_text(
        '[[grants]]\nagent = "reviewer"\nenv = "ANTHROPIC_API_KEY"\n'
        'value = "file-llm-key-0123456789"\npriority = 20\nstatus = "revoked"\n'
        '[[grants]]\nagent = "reviewer"\nenv = "ANTHROPIC_API_KEY"\n'
        'value = "file-llm-key-low-0123456789"\npriority = 1\n'
    )
    secrets.chmod(0o600)
    env_grants = [
        {
            "agent": "reviewer",
            "env": "ANTHROPIC_API_KEY",
            "from_env": "REVIEWER_BACKUP_KEY",
            "priority": 5,
        },
        {"vendor": "anthropic", "env": "ANTHROPIC_API_KEY", "priority": 100},
    ]
    resolvers = [EnvCredentialResolver(env_grants), FileCredentialResolver(secrets)]
    env = run_probe(tmp_path, EnvProbe(), resolvers, ["reviewer"])["reviewer"][0]
    # the revoked priority-20 grant is ignored; 5 beats 1; a fallback never beats a grant
    assert env["ANTHROPIC_API_KEY"] == "backup-llm-key-0123456789"


def test_a_loose_secrets_file_refuses_the_session(tmp_path, host_env):
    secrets = tmp_path / "secrets.toml"
    secrets.write_text('[[grants]]\nagent = "a"\nenv = "K"\nvalue = "file-secret-0123456789"\n')
    secrets.chmod(0o644)
    probe = EnvProbe()
    controller = Controller(
        plugins=plugins_from([probe, Resolvers(FileCredentialResolver(secrets))]),
        ledger=f"sqlite:///{tmp_path}/ledger.sqlite",
        state_dir=tmp_path / "state",
    )

    async def main():
        async with controller:
            with pytest.raises(HarnessError) as info:
                await controller.open_session(
                    harness=probe.name, workspace=str(tmp_path), agent="a"
                )
            return info.value

    error = anyio.run(main)
    assert error.reason == "policy-refused"
    assert "file-secret" not in str(error)
    assert probe.seen == {}
