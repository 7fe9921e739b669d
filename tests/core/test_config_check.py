"""Session config checked against the harness's declared keys before anything is recorded."""

from __future__ import annotations

import pytest
from harness_hookspecs import HarnessDescriptor, HarnessError

from harness_core import Controller, FunctionSession, Message, harness, plugins_from
from harness_core.config_check import check_config, effective_schema
from harness_core.plugins import get_plugins
from harness_core.serialize import descriptor_to_dict

BUNDLED = ("echo", "stdio-jsonl", "claude-code", "codex", "opencode", "pi", "acp:cline")


@pytest.mark.parametrize("name", BUNDLED)
def test_every_bundled_harness_declares_its_config(name: str) -> None:
    descriptor = get_plugins().describe(name)
    assert descriptor.config_schema is not None
    assert descriptor_to_dict(descriptor)["config_schema"] == dict(descriptor.config_schema)
    assert effective_schema(descriptor)["additionalProperties"] is False
    with pytest.raises(HarnessError) as refused:
        check_config(descriptor, {"bogus_key": 1})
    assert refused.value.reason == "invalid-request" and "'bogus_key'" in str(refused.value)
    check_config(descriptor, {"command_policy": {"default": "ask"}, "mcp_loopback": {}})


def test_undeclared_config_is_unchecked_but_runtime_keys_are_typed() -> None:
    descriptor = HarnessDescriptor(provider="third-party", targets=["local"])
    check_config(descriptor, {"anything": object()})
    assert "additionalProperties" not in effective_schema(descriptor)
    with pytest.raises(HarnessError, match="'command_policy' for third-party: must be object"):
        check_config(descriptor, {"command_policy": "strict"})


def test_nested_type_errors_name_the_path() -> None:
    descriptor = get_plugins().describe("claude-code")
    with pytest.raises(HarnessError, match=r"'allowed_tools\.1' for claude-code: must be string"):
        check_config(descriptor, {"allowed_tools": ["Read", 3]})


@pytest.mark.anyio
async def test_a_refused_config_opens_and_records_nothing(tmp_path) -> None:
    seen: list[object] = []

    @harness("depth-fn", config_schema={"properties": {"depth": {"type": "integer"}}})
    async def depth_fn(message: Message, session: FunctionSession):
        seen.append(session.config.get("depth"))
        yield "ok"

    async with Controller(
        plugins=plugins_from([depth_fn]), ledger=f"sqlite:///{tmp_path}/l.db"
    ) as controller:
        for config, reason in (
            ({"depth": "deep"}, "'depth' for depth-fn: must be integer, not str"),
            ({"width": 2}, "unknown config key 'width' for depth-fn"),
        ):
            with pytest.raises(HarnessError, match=reason) as refused:
                await controller.open_session(
                    harness="depth-fn", workspace=str(tmp_path), config=config
                )
            assert refused.value.reason == "invalid-request"
        assert controller.ledger.list_sessions() == []
        ref = await controller.open_session(
            harness="depth-fn", workspace=str(tmp_path), config={"depth": 2}
        )
        await controller.run_turn(ref, "hi")
        assert seen == [2]
        # a resume given a bad key is refused before session.resumed: tests/cli/test_bad_input.py


def test_an_empty_config_skips_the_validator_unless_a_key_is_required() -> None:
    optional = HarnessDescriptor(
        provider="optional-keys",
        targets=["local"],
        config_schema={"properties": {"model": {"type": "string"}}},
    )
    check_config(optional, {})
    required = HarnessDescriptor(
        provider="needs-model",
        targets=["local"],
        config_schema={"properties": {"model": {"type": "string"}}, "required": ["model"]},
    )
    with pytest.raises(HarnessError, match="needs-model") as refused:
        check_config(required, {})
    assert refused.value.reason == "invalid-request"
