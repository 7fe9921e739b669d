"""What ``harness run echo`` imports: only what a plain turn needs (issue 34's start-up).

The command policy's rules, the transcript's classes, configparser (entry-point lookups of
extensions), the checkpoint store and other harnesses' adapters each cost milliseconds of every
``harness run``; they load when a command is checked, a resume replays, an extension is looked
up, a checkpoint is taken or that harness runs, never before. (The time itself is measured by
``benchmarks/run.py --cli-overhead``: ``harness run echo / that floor``.)"""

from __future__ import annotations

import subprocess
import sys

#: Modules a plain ``harness run echo`` must not import.
NOT_AT_START = (
    "harness_core.command_policy",
    "harness_core.shell_words",
    "harness_core.transcript",
    "configparser",
    "importlib.metadata",
    "harness_acp",
    "harness_codex",
    "harness_claude_code",
    "aiohttp",
)

PROBE = (
    "import sys, io, contextlib\n"
    "from harness_core.cli import _main\n"
    "with contextlib.redirect_stdout(io.StringIO()):\n"
    "    code = _main(['run', 'echo', 'hi'])\n"
    "print(code, *sorted(m for m in sys.modules if m.split('.')[0] in {names}"
    " or m in {names}))\n"
)


def test_a_plain_run_imports_only_what_its_turn_needs(cli_env):
    roots = {name.split(".")[0] for name in NOT_AT_START} | set(NOT_AT_START)
    probe = PROBE.format(names=sorted(roots))
    # the first run lists the installed plugins (and imports them); the second reads that listing
    for _ in range(2):
        out = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, env=cli_env, timeout=60
        )
    code, *loaded = out.stdout.split()
    assert code == "0", out.stderr
    assert not [m for m in loaded if m in NOT_AT_START or m.split(".")[0] in NOT_AT_START]


def test_the_command_policy_loads_with_the_first_check():
    code = (
        "import sys\n"
        "from harness_hookspecs import PermissionRequest\n"
        "from harness_core.approvals import Approvals, builtin_policy\n"
        "Approvals()\n"
        "assert 'harness_core.command_policy' not in sys.modules\n"
        "policy = builtin_policy()\n"
        "assert policy is builtin_policy()  # built once\n"
        "request = PermissionRequest.for_tool('Bash', kind='shell', command='rm -rf /')\n"
        "print(policy.verdict(request, '/tmp')[0])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "deny"
