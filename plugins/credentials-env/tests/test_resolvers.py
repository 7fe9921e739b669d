"""The resolvers on their own: grant matching, env/file sources, file permission checks."""

from __future__ import annotations

import json
import os

import anyio
import pytest
from credentials_env import EnvCredentialResolver, FileCredentialResolver, Grant
from harness_hookspecs import CredentialRequest, HarnessError

KEY_A = "value-for-agent-grant-0001"
KEY_V = "value-for-vendor-fallback-0002"


def resolve(resolver, **fields):
    request = CredentialRequest(harness="h", **fields)
    return anyio.run(resolver.resolve, request)


def by_env(credentials):
    return {c.env_var: c for c in credentials}


# -- grants ---------------------------------------------------------------------------------


def test_grant_matching():
    grant = Grant(env="K", agent="reviewer")
    fallback = Grant(env="K", vendor="anthropic")
    pinned = Grant(env="K", agent="reviewer", vendor="openai")
    revoked = Grant(env="K", agent="reviewer", status="revoked")
    integration = Grant(env="GH", agent="reviewer", purpose="integration")

    def req(**kw):
        return CredentialRequest(harness="h", **kw)

    assert grant.matches(req(agent="reviewer"))
    assert not grant.matches(req(agent="other"))
    assert not grant.matches(req())
    assert fallback.matches(req(vendor="anthropic"))
    assert fallback.matches(req(vendor="anthropic", agent="anyone"))
    assert not fallback.matches(req(vendor="openai"))
    assert not fallback.matches(req())
    assert pinned.matches(req(agent="reviewer", vendor="openai"))
    assert not pinned.matches(req(agent="reviewer", vendor="anthropic"))
    assert not revoked.matches(req(agent="reviewer"))
    assert integration.matches(req(agent="reviewer"))
    assert not integration.matches(req(agent="reviewer", purposes=("harness-llm",)))


@pytest.mark.parametrize(
    ("fields", "fragment"),
    [
        ({"env": "K"}, "agent"),
        ({"env": "1BAD", "agent": "a"}, "variable name"),
        ({"env": "PATH", "agent": "a"}, "reserved"),
        ({"env": "LD_PRELOAD", "agent": "a"}, "reserved"),
        ({"env": "K", "agent": "a", "purpose": "db"}, "purpose"),
        ({"env": "K", "agent": "a", "status": "paused"}, "status"),
        ({"env": "K", "agent": "a", "priority": "high"}, "priority"),
        ({"env": "K", "agent": "../a"}, "agent"),
        ({"env": "K", "agent": "a", "colour": "red"}, "unknown field"),
        ({"agent": "a"}, "needs env"),
        ({"env": "K", "agent": "a", "value": "inline-secret-value"}, "0600 secrets file"),
    ],
)
def test_bad_grants_are_refused_without_echoing_values(fields, fragment):
    with pytest.raises(HarnessError) as info:
        EnvCredentialResolver([fields])
    assert info.value.reason == "invalid-request"
    assert fragment in info.value.hint
    assert "inline-secret-value" not in str(info.value)


# -- env resolver ---------------------------------------------------------------------------


def test_env_resolver_reads_only_granted_variables():
    environ = {
        "REVIEWER_KEY": KEY_A,
        "ANTHROPIC_API_KEY": KEY_V,
        "HOST_ONLY_SECRET": "host-only-secret-value",
    }
    resolver = EnvCredentialResolver(
        [
            {
                "agent": "reviewer",
                "env": "ANTHROPIC_API_KEY",
                "from_env": "REVIEWER_KEY",
                "priority": 5,
            },
            {"vendor": "anthropic", "env": "ANTHROPIC_API_KEY"},
        ],
        environ=environ,
    )
    found = resolve(resolver, agent="reviewer", vendor="anthropic")
    assert sorted((c.env_var, c.value, c.agent, c.vendor) for c in found) == [
        ("ANTHROPIC_API_KEY", KEY_A, "reviewer", None),
        ("ANTHROPIC_API_KEY", KEY_V, None, "anthropic"),
    ]
    assert all(c.source == "env:env" for c in found)
    assert all("host-only" not in c.value for c in found)
    # another agent only gets the vendor fallback
    other = resolve(resolver, agent="other", vendor="anthropic")
    assert [(c.value, c.agent) for c in other] == [(KEY_V, None)]


def test_env_resolver_skips_missing_host_variables_and_revoked_grants():
    resolver = EnvCredentialResolver(
        [
            {"agent": "a", "env": "K1", "from_env": "UNSET"},
            {"agent": "a", "env": "K2", "from_env": "SET", "status": "revoked"},
        ],
        environ={"SET": KEY_A},
    )
    assert resolve(resolver, agent="a") == []


def test_env_resolver_refuses_values_too_short_to_redact():
    resolver = EnvCredentialResolver([{"agent": "a", "env": "K"}], environ={"K": "tiny1"})
    with pytest.raises(HarnessError) as info:
        resolve(resolver, agent="a")
    assert info.value.reason == "policy-refused"
    assert "tiny1" not in str(info.value)


def test_vendor_defaults_are_lowest_priority_vendor_fallbacks():
    resolver = EnvCredentialResolver(
        vendor_defaults=True, environ={"OPENAI_API_KEY": KEY_V, "ANTHROPIC_API_KEY": KEY_A}
    )
    found = resolve(resolver, vendor="openai")
    assert [(c.env_var, c.value, c.agent, c.vendor) for c in found] == [
        ("OPENAI_API_KEY", KEY_V, None, "openai")
    ]
    assert found[0].priority < 0
    assert resolve(resolver) == []  # no vendor, no fallback
    assert resolve(EnvCredentialResolver(environ={"OPENAI_API_KEY": KEY_V}), vendor="openai") == []


def test_env_resolver_grants_file_is_reread(tmp_path):
    grants = tmp_path / "grants.toml"
    resolver = EnvCredentialResolver(grants_file=grants, environ={"K": KEY_A})
    assert resolve(resolver, agent="a") == []  # a missing grants file is no grants
    grants.write_text('[[grants]]\nagent = "a"\nenv = "K"\n')
    assert [c.value for c in resolve(resolver, agent="a")] == [KEY_A]
    grants.write_text('[[grants]]\nagent = "a"\nenv = "K"\nstatus = "revoked"\n')
    assert resolve(resolver, agent="a") == []
    grants.write_text("[[grants]\nbroken")
    with pytest.raises(HarnessError) as info:
        resolve(resolver, agent="a")
    assert info.value.reason == "invalid-request"


# -- file resolver --------------------------------------------------------------------------


def write_secrets(path, text, mode=0o600):
    path.write_text(text)
    os.chmod(path, mode)
    return path


SECRETS_TOML = f"""
[[grants]]
agent = "reviewer"
purpose = "harness-llm"
env = "ANTHROPIC_API_KEY"
value = "{KEY_A}"
priority = 10

[[grants]]
vendor = "anthropic"
env = "ANTHROPIC_API_KEY"
value = "{KEY_V}"

[[grants]]
agent = "reviewer"
purpose = "integration"
env = "GITHUB_TOKEN"
value = "integration-token-value"
status = "revoked"
"""


def test_file_resolver_toml(tmp_path):
    path = write_secrets(tmp_path / "secrets.toml", SECRETS_TOML)
    found = resolve(FileCredentialResolver(path), agent="reviewer", vendor="anthropic")
    assert sorted((c.value, c.agent, c.priority) for c in found) == [
        (KEY_A, "reviewer", 10),
        (KEY_V, None, 0),
    ]
    assert all(c.source == "file:file" for c in found)
    assert KEY_A not in repr(found[0])


def test_file_resolver_json(tmp_path):
    data = {"grants": [{"agent": "a", "env": "K", "value": KEY_A, "purpose": "integration"}]}
    path = write_secrets(tmp_path / "secrets.json", json.dumps(data))
    found = resolve(FileCredentialResolver(path), agent="a")
    assert [(c.env_var, c.value, c.purpose) for c in found] == [("K", KEY_A, "integration")]


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o606, 0o666])
def test_file_resolver_refuses_loose_permissions(tmp_path, mode):
    path = write_secrets(tmp_path / "secrets.toml", SECRETS_TOML, mode)
    with pytest.raises(HarnessError) as info:
        resolve(FileCredentialResolver(path), agent="reviewer")
    error = info.value
    assert error.reason == "policy-refused"
    assert "0600" in error.hint and "chmod 600" in error.hint
    assert KEY_A not in str(error)


def test_file_resolver_accepts_read_only_owner_file(tmp_path):
    path = write_secrets(tmp_path / "secrets.toml", SECRETS_TOML, 0o400)
    assert resolve(FileCredentialResolver(path), agent="reviewer", vendor="anthropic")


def test_file_resolver_refuses_a_file_owned_by_someone_else(tmp_path, monkeypatch):
    path = write_secrets(tmp_path / "secrets.toml", SECRETS_TOML)
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(path).st_uid + 1)
    with pytest.raises(HarnessError) as info:
        resolve(FileCredentialResolver(path), agent="reviewer")
    assert info.value.reason == "policy-refused"
    assert "owned by the current user" in info.value.hint


def test_file_resolver_checks_the_target_of_a_symlink(tmp_path):
    target = write_secrets(tmp_path / "real.toml", SECRETS_TOML, 0o644)
    link = tmp_path / "secrets.toml"
    link.symlink_to(target)
    with pytest.raises(HarnessError) as info:
        resolve(FileCredentialResolver(link), agent="reviewer")
    assert info.value.reason == "policy-refused"


def test_file_resolver_refuses_a_directory(tmp_path):
    directory = tmp_path / "secrets.toml"
    directory.mkdir(mode=0o700)
    with pytest.raises(HarnessError) as info:
        resolve(FileCredentialResolver(directory), agent="a")
    assert info.value.reason == "policy-refused"


def test_file_resolver_missing_file(tmp_path):
    with pytest.raises(HarnessError) as info:
        resolve(FileCredentialResolver(tmp_path / "nope.toml"), agent="a")
    assert info.value.reason == "invalid-request"
    assert resolve(FileCredentialResolver(tmp_path / "nope.toml", required=False), agent="a") == []


def test_file_resolver_parse_errors_do_not_quote_the_file(tmp_path):
    path = write_secrets(tmp_path / "secrets.toml", f'[[grants]]\nvalue = "{KEY_A}\n')
    with pytest.raises(HarnessError) as info:
        resolve(FileCredentialResolver(path), agent="a")
    assert info.value.reason == "invalid-request"
    assert KEY_A not in str(info.value)
    path = write_secrets(tmp_path / "secrets.json", '{"grants": [' + KEY_A)
    with pytest.raises(HarnessError) as info:
        resolve(FileCredentialResolver(path), agent="a")
    assert KEY_A not in str(info.value)


def test_file_grants_need_inline_values(tmp_path):
    path = write_secrets(tmp_path / "secrets.toml", '[[grants]]\nagent = "a"\nenv = "K"\n')
    with pytest.raises(HarnessError) as info:
        resolve(FileCredentialResolver(path), agent="a")
    assert "needs a value" in info.value.hint


def test_entry_point_module_registers_both_resolvers(tmp_path, monkeypatch):
    from credentials_env import plugin

    registered = []
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("HARNESS_SECRETS_FILE", raising=False)
    monkeypatch.delenv("HARNESS_CREDENTIAL_GRANTS", raising=False)
    plugin.register_credential_resolvers(registered.append)
    names = [r.name for r in registered]
    assert names == ["env", "file"]
    env, file = registered
    assert env.vendor_defaults is True
    assert file.required is False
    assert resolve(file, agent="a") == []
