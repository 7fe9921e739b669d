"""The native Codex binary behind the npm package's Node wrapper.

``@openai/codex``'s ``bin/codex.js`` only finds its platform package's binary and runs it - by
``execve`` on Node versions that have it, else as a child process it waits for. Per turn that is
a Node start (~40-60 ms of wall and CPU on the 2-core test machine) and, before ``execve``, a
second process whose exit is all a bare client waits for. When the session's CLI is that
wrapper, the adapter runs the binary it would run, with the two variables it would set
(``CODEX_MANAGED_BY_NPM``: the wrapper's default; only Codex's update hints read it).
"""

from __future__ import annotations

import functools
import os
import platform

WRAPPER = os.path.join("@openai", "codex", "bin", "codex.js")
#: ``platform.machine()`` -> (the platform package's suffix, the Rust target triple) on Linux.
LINUX = {
    "x86_64": ("linux-x64", "x86_64-unknown-linux-musl"),
    "aarch64": ("linux-arm64", "aarch64-unknown-linux-musl"),
}


@functools.lru_cache(maxsize=16)
def native_codex(cli: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The program to run for ``cli`` and the environment the wrapper would add: the native
    binary where ``cli`` is the npm wrapper and its binary is installed, else ``cli`` itself."""
    real = os.path.realpath(cli)
    target = LINUX.get(platform.machine()) if platform.system() == "Linux" else None
    if target is None or not real.endswith(os.sep + WRAPPER):
        return cli, ()
    root = os.path.dirname(os.path.dirname(real))  # .../@openai/codex
    suffix, triple = target
    for vendor in (
        os.path.join(os.path.dirname(root), f"codex-{suffix}", "vendor"),
        os.path.join(root, "vendor"),
    ):
        binary = os.path.join(vendor, triple, "bin", "codex")
        if os.path.isfile(binary) and os.access(binary, os.X_OK):
            return binary, (("CODEX_MANAGED_PACKAGE_ROOT", root), ("CODEX_MANAGED_BY_NPM", "1"))
    return cli, ()
