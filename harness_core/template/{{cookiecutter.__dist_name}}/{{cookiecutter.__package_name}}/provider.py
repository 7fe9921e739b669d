"""The `{{ cookiecutter.plugin_name }}` sandbox provider.

The runtime calls `provision` when a session opens or resumes (before the harness adapter) and
`finalize` once when it closes. The returned `SandboxHandle` says how every process of the
session runs: its working directory, an argv prefix the runtime puts before each command (e.g. a
`bwrap ...` or `docker exec ...` invocation), and extra (non-secret) environment.

This skeleton gives each session a private scratch directory as `HOME` and `TMPDIR`, runs
processes directly (empty prefix) in the requested workspace, and refuses network policies it
cannot enforce. Replace the body of `provision` with your isolation.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from harness_hookspecs import HarnessError, SandboxHandle, SandboxRequest

NAME = {{ cookiecutter.plugin_name | tojson }}


class {{ cookiecutter.__class_prefix }}SandboxProvider:
    """A sandbox provider (see `harness_hookspecs.SandboxProvider`)."""

    name = NAME

    async def provision(self, request: SandboxRequest) -> SandboxHandle:
        spec = request.spec
        if spec.network != "open":
            # Never pretend: a policy the sandbox cannot enforce is refused.
            raise HarnessError("policy-refused", f"{NAME} cannot enforce network {spec.network}")
        workspace = request.workspace
        if workspace is not None and not os.path.isdir(workspace):
            raise HarnessError("sandbox-failed", "the workspace directory does not exist")
        try:
            scratch = tempfile.mkdtemp(prefix=f"{NAME}-")
        except OSError:
            raise HarnessError("sandbox-failed", "no scratch directory could be created") from None
        os.makedirs(os.path.join(scratch, "tmp"))
        return SandboxHandle(
            provider=NAME,
            workspace=workspace or scratch,
            command_prefix=(),
            env={"HOME": scratch, "TMPDIR": os.path.join(scratch, "tmp")},
            state=scratch,
        )

    async def finalize(self, handle: SandboxHandle, outcome: str) -> None:
        # outcome is success, failure or cancelled: e.g. keep evidence on failure.
        if isinstance(handle.state, str):
            shutil.rmtree(handle.state, ignore_errors=True)
