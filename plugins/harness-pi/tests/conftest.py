"""Fixtures for driving the real Pi CLI against the fake model server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from harness_hookspecs import Credential, hookimpl

from harness_core.testing.clis import NPM_BIN


class StaticCredentials:
    """A credentials plugin that injects one key as OPENAI_API_KEY."""

    def __init__(self, value: str) -> None:
        self.value = value

    @hookimpl
    def credentials_resolve(self, request):
        async def resolve():
            return [Credential(env_var="OPENAI_API_KEY", value=self.value, source="test")]

        return resolve()


@pytest.fixture
def pi_bin() -> str:
    path = NPM_BIN / "pi"
    if not path.exists():
        pytest.skip(f"pi is not installed in {NPM_BIN} (run .ci/install-clis.sh)")
    return str(path)


@pytest.fixture
def workspace(tmp_path: Path) -> str:
    path = tmp_path / "workspace"
    path.mkdir()
    return str(path)


@pytest.fixture
def make_controller(tmp_path: Path):
    from harness_pi import PiAdapter

    from harness_core import Controller, plugins_from

    def make(**kwargs):
        return Controller(
            plugins=plugins_from([PiAdapter(), StaticCredentials("sk-test-secret-1234")]),
            ledger=f"sqlite:///{tmp_path}/ledger.sqlite",
            state_dir=tmp_path / "state",
            **kwargs,
        )

    return make


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def group_members(pgid: int) -> list[int]:
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
                if int(fields[2]) == pgid and fields[0] != "Z":
                    members.append(int(entry))
            except (FileNotFoundError, ProcessLookupError, IndexError):
                pass
    return members
