"""The npm wrapper ``codex.js`` is bypassed for the native binary it would run."""

from __future__ import annotations

import os
import platform
from pathlib import Path

import pytest
from harness_codex.native import LINUX, native_codex


def _install(root: Path, *, binary: bool = True) -> Path:
    """An npm layout: ``.bin/codex`` -> ``@openai/codex/bin/codex.js`` and the platform
    package's vendored binary next to it."""
    package = root / "node_modules" / "@openai" / "codex"
    (package / "bin").mkdir(parents=True)
    (package / "bin" / "codex.js").write_text("#!/usr/bin/env node\n")
    (package / "bin" / "codex.js").chmod(0o755)
    suffix, triple = LINUX.get(platform.machine(), ("linux-x64", "x86_64-unknown-linux-musl"))
    if binary:
        vendored = root / "node_modules" / "@openai" / f"codex-{suffix}" / "vendor" / triple / "bin"
        vendored.mkdir(parents=True)
        (vendored / "codex").write_text("#!/bin/sh\n")
        (vendored / "codex").chmod(0o755)
    bin_dir = root / "node_modules" / ".bin"
    bin_dir.mkdir()
    (bin_dir / "codex").symlink_to(package / "bin" / "codex.js")
    return bin_dir / "codex"


@pytest.mark.skipif(
    platform.system() != "Linux" or platform.machine() not in LINUX, reason="Linux x64/arm64 only"
)
def test_the_wrapper_resolves_to_its_native_binary_and_environment(tmp_path: Path) -> None:
    wrapper = _install(tmp_path)
    program, env = native_codex(str(wrapper))
    assert program.endswith(os.path.join("vendor", LINUX[platform.machine()][1], "bin", "codex"))
    assert os.access(program, os.X_OK)
    package = os.path.realpath(tmp_path / "node_modules" / "@openai" / "codex")
    assert dict(env) == {"CODEX_MANAGED_PACKAGE_ROOT": package, "CODEX_MANAGED_BY_NPM": "1"}


def test_anything_else_runs_as_configured(tmp_path: Path) -> None:
    wrapper = _install(tmp_path, binary=False)
    assert native_codex(str(wrapper)) == (str(wrapper), ())  # no vendored binary: the wrapper
    other = tmp_path / "codex"
    other.write_text("#!/bin/sh\n")
    assert native_codex(str(other)) == (str(other), ())
