"""Pure tests: policy values and the bwrap argv (no bwrap needed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sandbox_bubblewrap import (
    INSIDE_FORWARDER,
    INSIDE_SOCKET,
    Endpoint,
    NetworkPolicy,
    SandboxSpec,
    build_prefix,
)


def test_endpoint_parsing_and_normalisation() -> None:
    assert Endpoint.parse("https://API.Anthropic.com/v1") == Endpoint("api.anthropic.com", 443)
    assert Endpoint.parse("http://127.0.0.1:8123/mcp") == Endpoint("127.0.0.1", 8123)
    assert Endpoint.parse("[::1]:80") == Endpoint("::1", 80)
    assert Endpoint.parse("example.com.:22").host == "example.com"
    assert str(Endpoint("::1", 80)) == "[::1]:80"
    assert Endpoint("localhost", 1).is_loopback and Endpoint("127.0.0.2", 1).is_loopback
    assert not Endpoint("example.com", 1).is_loopback


@pytest.mark.parametrize(
    "text", ["example.com", "example.com:0", "example.com:70000", "a/b:80", "ex ample:80", ":80"]
)
def test_endpoint_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        Endpoint.parse(text)


def test_policy_modes() -> None:
    with pytest.raises(ValueError, match="unknown network mode"):
        NetworkPolicy("wide-open")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mcp-only"):
        NetworkPolicy("mcp-only", allow=["example.com:443"])
    with pytest.raises(ValueError, match="takes no endpoints"):
        NetworkPolicy("none", allow=["example.com:443"])
    with pytest.raises(ValueError, match="collides"):
        NetworkPolicy("allowlist", allow=["127.0.0.1:3128"])
    pol = NetworkPolicy(
        "allowlist",
        allow=["example.com:443"],
        mcp="http://127.0.0.1:8123/mcp",
        model_api=["https://api.anthropic.com"],
    )
    assert pol.allowed() == {
        Endpoint("example.com", 443),
        Endpoint("127.0.0.1", 8123),
        Endpoint("api.anthropic.com", 443),
    }
    assert pol.tunnels() == (Endpoint("127.0.0.1", 8123),)
    assert NetworkPolicy("open").allowed() == frozenset()


def _pairs(argv: tuple[str, ...], flag: str) -> list[tuple[str, ...]]:
    return [tuple(argv[i + 1 : i + 3]) for i, a in enumerate(argv) if a == flag]


def test_prefix_none(tmp_path: Path) -> None:
    p = build_prefix(SandboxSpec(workspace=tmp_path))
    argv = p.prefix
    assert argv[0] == "bwrap" and argv[-1] == "--"
    for flag in ("--die-with-parent", "--new-session", "--unshare-all"):
        assert flag in argv
    assert "--share-net" not in argv
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    assert ("/", "/") in _pairs(argv, "--ro-bind")
    # tmpfs /tmp and /run come before the workspace bind so a workspace under /tmp still works
    assert argv.index("/tmp") < argv.index("--bind")
    assert (str(tmp_path), str(tmp_path)) in _pairs(argv, "--bind")
    assert p.cwd == tmp_path and p.proxy_url is None
    assert p.argv(["echo", "hi"])[-2:] == ["echo", "hi"]


def test_prefix_open_and_proxy_modes(tmp_path: Path) -> None:
    assert "--share-net" in build_prefix(SandboxSpec(tmp_path, NetworkPolicy("open"))).prefix
    pol = NetworkPolicy("mcp-only", mcp=["127.0.0.1:8123"], model_api=["api.example.com:443"])
    with pytest.raises(ValueError, match="needs proxy_socket"):
        build_prefix(SandboxSpec(tmp_path, pol))
    with pytest.raises(ValueError, match="takes no proxy_socket"):
        build_prefix(SandboxSpec(tmp_path), proxy_socket="/x.sock")
    p = build_prefix(SandboxSpec(tmp_path, pol), proxy_socket="/run/p/x.sock")
    argv = p.prefix
    assert "--share-net" not in argv
    assert ("/run/p/x.sock", str(INSIDE_SOCKET)) in _pairs(argv, "--ro-bind")
    assert str(INSIDE_FORWARDER) in argv
    assert ("HTTPS_PROXY", "http://127.0.0.1:3128") in _pairs(argv, "--setenv")
    assert argv[argv.index("--tunnel") + 1] == "8123:127.0.0.1:8123"
    assert argv.count("--tunnel") == 1  # api.example.com is reached through the proxy only
    assert p.proxy_url == "http://127.0.0.1:3128"


def test_spec_validation(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        SandboxSpec(workspace=Path("relative"))
    with pytest.raises(ValueError):
        SandboxSpec(workspace=Path("/"))
    with pytest.raises(ValueError):
        SandboxSpec(workspace=tmp_path, setenv=(("A=B", "x"),))
    with pytest.raises(ValueError, match="hidden path"):
        build_prefix(
            SandboxSpec(tmp_path, NetworkPolicy("allowlist", allow=["a.example:1"])),
            proxy_socket="/x.sock",
            python="/tmp/venv/bin/python",
        )
