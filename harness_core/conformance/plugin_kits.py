"""Conformance kits for the other plugin kinds: a sandbox provider and a credential resolver.

``harness conformance NAME`` runs the harness kit for a harness, and these for a sandbox provider
or a credential resolver of that name; the report is the same :class:`ConformanceReport`.

Sandbox (each check drives the provider through its public ``provision`` / ``finalize``):

- ``provision``: a session's request gives a handle naming the provider and an existing workspace;
- ``runs-in-workspace``: a process run as the handle says (its argv prefix, environment and
  workspace) exits 0, and a file it writes there is seen in the workspace on the host;
- ``isolation``: two sessions get different private directories (the handle's ``HOME`` and
  ``TMPDIR``), and what one writes there the other does not see;
- ``network-none``: ``network="none"`` is either refused (``policy-refused``) or kept: a process
  inside cannot reach a listener on the host's loopback;
- ``cleanup``: ``finalize`` removes what ``provision`` made (the private directories) and keeps
  the workspace.

Credential resolver:

- ``resolve``: answers a request with a sequence of :class:`Credential` (variable names an
  environment can hold), without raising;
- ``grant-scope``: a credential granted to an agent only goes to that agent's sessions, and a
  vendor fallback only to that vendor's;
- ``redaction``: a session gets each resolved value in its environment, and no value is in the
  session's events, ledger or export (a harness that prints them is redacted). With nothing
  resolved here it is ``SKIP`` (give the resolver a credential to exercise it).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
from harness_hookspecs import (
    Credential,
    CredentialRequest,
    HarnessError,
    SandboxHandle,
    SandboxRequest,
    SandboxSpec,
    hookimpl,
)

from .report import CheckResult, ConformanceReport

#: Seconds a process run inside the sandbox may take.
PROCESS_TIMEOUT = 30.0
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

Check = Callable[[], tuple[bool, str] | tuple[bool, str, bool]]


def _result(name: str, check: Callable[[], Any]) -> CheckResult:
    try:
        outcome = check()
    except HarnessError as error:
        return CheckResult(name, False, f"raised {error.reason}: {error.hint or error.message}")
    except Exception as error:  # a plugin's bug is a failed check, never a crashed kit
        return CheckResult(name, False, f"raised {type(error).__name__}")
    passed, detail, *rest = outcome
    skipped = bool(rest and rest[0])
    return CheckResult(name, passed or skipped, detail, skipped=skipped)


# -- sandbox ------------------------------------------------------------------------------------


def _request(workspace: str, session: str, network: str = "open") -> SandboxRequest:
    return SandboxRequest(
        session_id=session,
        harness="conformance",
        workspace=workspace,
        spec=SandboxSpec(network=network),
        state_dir=None,
    )


def _run_inside(handle: SandboxHandle, argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **dict(handle.env)}
    return subprocess.run(
        [*handle.command_prefix, *argv],
        cwd=handle.workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT,
        stdin=subprocess.DEVNULL,
    )


def _private_dirs(handle: SandboxHandle, workspace: str, since: float) -> list[str]:
    """The handle's HOME/TMPDIR/workspace that ``provision`` made on the host (created since ``since``;
    not the workspace, not a shared temporary directory: a path inside a sandbox, such as
    bubblewrap's ``/tmp``, names no host directory of the session's)."""
    shared = {os.path.realpath(tempfile.gettempdir()), os.path.realpath(workspace), "/"}
    found = []
    # and a workspace of its own (a copy of the one asked for)
    for path in (handle.env.get("HOME"), handle.env.get("TMPDIR"), handle.workspace):
        if not path or not os.path.isdir(path) or os.path.realpath(path) in shared:
            continue
        if os.stat(path).st_ctime >= since - 1:
            found.append(path)
    return found


class SandboxKit:
    def __init__(self, provider: Any, root: str) -> None:
        self.provider = provider
        self.root = root

    def workspace(self, name: str) -> str:
        path = os.path.join(self.root, name)
        os.makedirs(path, exist_ok=True)
        return path

    def provision(self, workspace: str, session: str, network: str = "open") -> SandboxHandle:
        handle: SandboxHandle = anyio.run(
            self.provider.provision, _request(workspace, session, network)
        )
        return handle

    def finalize(self, handle: SandboxHandle) -> None:
        anyio.run(self.provider.finalize, handle, "success")

    def check_provision(self) -> tuple[bool, str]:
        handle = self.provision(self.workspace("provision"), "kit-provision")
        try:
            if handle.provider != self.provider.name:
                return False, f"the handle names provider {handle.provider!r}"
            if not handle.workspace or not os.path.isdir(handle.workspace):
                return False, "the handle's workspace is not a directory"
            return (
                True,
                f"handle for {handle.workspace} (argv prefix of {len(handle.command_prefix)})",
            )
        finally:
            self.finalize(handle)

    def check_runs_in_workspace(self) -> tuple[bool, str]:
        workspace = self.workspace("runs")
        handle = self.provision(workspace, "kit-runs")
        try:
            done = _run_inside(handle, ["sh", "-c", "echo conformance > kit-probe.txt"])
            if done.returncode != 0:
                return False, f"the process exited {done.returncode}"
            # the handle's workspace: a provider may give the session a copy (local's run scope)
            written = Path(handle.workspace or workspace, "kit-probe.txt")
            if not written.exists() or written.read_text().strip() != "conformance":
                return False, "the file written inside is not in the workspace"
            return True, "ran `sh -c` inside; its file is in the workspace"
        finally:
            self.finalize(handle)

    def check_isolation(self) -> tuple[bool, str] | tuple[bool, str, bool]:
        first = self.provision(self.workspace("iso-a"), "kit-iso-a")
        second = self.provision(self.workspace("iso-b"), "kit-iso-b")
        try:
            home_a, home_b = first.env.get("HOME"), second.env.get("HOME")
            if not home_a or not home_b:
                return False, "not exercised: the handles set no HOME (no private one)", True
            done = _run_inside(first, ["sh", "-c", 'echo a > "$HOME/kit-private.txt"'])
            if done.returncode != 0:
                return False, f"writing its HOME exited {done.returncode}"
            seen = _run_inside(second, ["sh", "-c", 'test -e "$HOME/kit-private.txt"'])
            if seen.returncode == 0:
                return False, "one session sees a file another wrote in its HOME"
            return True, "a file one session wrote in its HOME is unseen by another"
        finally:
            self.finalize(first)
            self.finalize(second)

    def check_network_none(self) -> tuple[bool, str]:
        try:
            handle = self.provision(self.workspace("net"), "kit-net", network="none")
        except HarnessError as error:
            if error.reason == "policy-refused":
                return True, "network none refused (policy-refused): never pretended"
            raise
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen(1)
            port = listener.getsockname()[1]
            # bash's /dev/tcp: no interpreter of the host's needs to be visible inside
            probe = f"(echo > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && exit 0 || exit 7"
            try:
                done = _run_inside(handle, ["bash", "-c", probe])
            finally:
                self.finalize(handle)
        if done.returncode == 0:
            return False, "network none accepted, yet a process inside reached the host"
        if done.returncode != 7:
            return False, f"the network probe could not run inside (exit {done.returncode})"
        return True, "network none kept: the host's loopback unreachable from inside"

    def check_cleanup(self) -> tuple[bool, str]:
        workspace = self.workspace("cleanup")
        Path(workspace, "keep.txt").write_text("kept")
        since = time.time()
        handle = self.provision(workspace, "kit-cleanup")
        made = _private_dirs(handle, workspace, since)
        self.finalize(handle)
        left = [path for path in made if os.path.exists(path)]
        if left:
            return False, f"finalize left {len(left)} of its directories behind ({left[0]})"
        if not Path(workspace, "keep.txt").exists():
            return False, "finalize removed the workspace's files"
        return True, f"finalize removed its {len(made)} directories and kept the workspace"


def run_sandbox_conformance(name: str, plugins: Any) -> ConformanceReport:
    """Run the sandbox kit against the provider ``name`` of ``plugins``."""
    started = time.monotonic()
    root = tempfile.mkdtemp(prefix="harness-sandbox-kit-")
    try:
        kit = SandboxKit(plugins.sandbox_providers[name], root)
        checks = (
            ("provision", kit.check_provision),
            ("runs-in-workspace", kit.check_runs_in_workspace),
            ("isolation", kit.check_isolation),
            ("network-none", kit.check_network_none),
            ("cleanup", kit.check_cleanup),
        )
        results = tuple(_result(check, run) for check, run in checks)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return ConformanceReport(name, results, time.monotonic() - started)


# -- credentials --------------------------------------------------------------------------------


def _resolve(resolver: Any, request: CredentialRequest) -> list[Credential]:
    found: Sequence[Credential] = anyio.run(resolver.resolve, request)
    return list(found)


def check_resolve(resolver: Any) -> tuple[bool, str]:
    found = _resolve(resolver, CredentialRequest(harness="conformance", vendor="anthropic"))
    for credential in found:
        if not isinstance(credential, Credential):
            return False, f"resolve returned a {type(credential).__name__}, not a Credential"
        if not _ENV_NAME.match(credential.env_var):
            return False, f"{credential.env_var!r} is not an environment variable name"
        if not isinstance(credential.value, str) or not credential.value:
            return False, f"{credential.env_var} has no value"
    return True, f"{len(found)} credential(s), each a variable name with a value"


def check_grant_scope(resolver: Any) -> tuple[bool, str]:
    request = CredentialRequest(harness="conformance", vendor="anthropic", agent="kit-agent-a")
    found = _resolve(resolver, request)
    for credential in found:
        if credential.agent is not None and credential.agent != request.agent:
            return False, f"{credential.env_var}, granted to another agent, went to kit-agent-a"
        if credential.vendor is not None and credential.vendor != request.vendor:
            return False, f"{credential.env_var}, a fallback of another vendor, went to anthropic"
    return True, f"{len(found)} credential(s), none granted to another agent or vendor"


def check_redaction(resolver: Any, root: str) -> tuple[bool, str, bool]:
    from ..controller import Controller
    from ..function_harness import harness
    from ..plugins import plugins_from

    found = _resolve(resolver, CredentialRequest(harness="credentials-kit-probe", vendor=None))
    values = {c.env_var: c.value for c in found}
    if not values:
        return False, "not exercised: the resolver resolved nothing here", True

    @harness("credentials-kit-probe")
    async def probe(message: Any, session: Any) -> Any:
        # A careless harness: prints every value it was given.
        for var in sorted(values):
            yield f"{var}={session.env.get(var)} "

    class OnlyThisResolver:
        """The resolver under test alone (no other installed resolver's values)."""

        @hookimpl
        def register_credential_resolvers(self, register: Callable[[Any], None]) -> None:
            register(resolver)

    async def main() -> tuple[Any, Any]:
        async with Controller(
            plugins=plugins_from([OnlyThisResolver(), probe]),
            ledger=f"sqlite:///{root}/ledger.sqlite",
            state_dir=Path(root) / "state",
        ) as controller:
            ref = await controller.open_session(harness="credentials-kit-probe", workspace=root)
            result = await controller.run_turn(ref, "print what you were given")
            return result, controller.export(ref.session_id)

    result, bundle = anyio.run(main)
    if result.status != "completed":
        return False, f"the probe session's turn {result.status}", False
    missing = [var for var in values if f"{var}=None" in (result.text or "")]
    if missing:
        return False, f"{missing[0]} did not reach the session's environment", False
    stored = b"".join(path.read_bytes() for path in Path(root).glob("ledger.sqlite*"))
    shown = repr(result.events) + repr(bundle)
    leaked = [var for var, value in values.items() if value in shown or value.encode() in stored]
    if leaked:
        return False, f"the value of {leaked[0]} is in the events, ledger or export", False
    return True, f"{len(values)} value(s) injected, none in events, ledger or export", False


def run_credentials_conformance(name: str, plugins: Any) -> ConformanceReport:
    """Run the credentials kit against the resolver ``name`` of ``plugins``."""
    started = time.monotonic()
    resolver = plugins.credential_resolvers[name]
    root = tempfile.mkdtemp(prefix="harness-credentials-kit-")
    try:
        results = (
            _result("resolve", lambda: check_resolve(resolver)),
            _result("grant-scope", lambda: check_grant_scope(resolver)),
            _result("redaction", lambda: check_redaction(resolver, root)),
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return ConformanceReport(name, results, time.monotonic() - started)
