"""``harness conformance NAME [--json]``: a table of checks, exit 0 only if all pass."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from harness_core.conformance import CHECK_NAMES

ROOT = Path(__file__).resolve().parents[2]


def harness(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "HARNESS_CORE_PLUGINS"}
    return subprocess.run(
        [sys.executable, "-m", "harness_core.cli", "conformance", *args],
        capture_output=True,
        text=True,
        env={**base, **(env or {})},
        cwd=ROOT,
        timeout=120,
    )


def test_echo_passes_with_a_table():
    out = harness("echo")
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "harness conformance: echo"
    # echo claims no approvals prompt in its profile: that check is SKIP, counted apart
    for name in CHECK_NAMES:
        mark = "SKIP" if name == "approvals" else "PASS"
        assert any(line.split()[:2] == [mark, name] for line in lines), name
    total = len(CHECK_NAMES)
    assert f"{total} checks: {total - 1} passed, 1 skipped, 0 failed" in lines[-1]
    (skipped,) = [line for line in lines if line.split()[:1] == ["SKIP"]]
    assert "the profile names no approval_prompt" in skipped


def test_echo_json():
    out = harness("echo", "--json", "--timeout", "30")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["harness"] == "echo" and data["passed"] is True
    assert [c["name"] for c in data["checks"]] == list(CHECK_NAMES)
    assert all(c["passed"] and c["detail"] for c in data["checks"])
    assert [c["name"] for c in data["checks"] if c["skipped"]] == ["approvals"]


def test_unknown_harness_is_a_usage_error():
    out = harness("no-such-harness")
    assert out.returncode == 2
    assert out.stderr.startswith(
        "harness: error: invalid-request: unknown harness 'no-such-harness'"
    )
    assert "Traceback" not in out.stderr


def test_a_failing_harness_exits_non_zero(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "harness_talker.py").write_text(
        textwrap.dedent(
            """
            from harness_hookspecs import Status
            from harness_core import harness

            @harness("talker")
            async def talker(message, session):
                yield "hi"
                yield Status(message="x" * 100)
                yield {"type": "status", "message": "a raw provider record"}
            """
        )
    )
    info = site / "harness_talker-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: harness-talker\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[harness_core]\ntalker = harness_talker:talker\n")
    out = harness("talker", "--json", env={"PYTHONPATH": str(site)})
    assert out.returncode == 1, out.stderr
    data = json.loads(out.stdout)
    failed = [c["name"] for c in data["checks"] if not c["passed"]]
    # FunctionHarness turns a non-payload item into an exception: the turn fails.
    assert failed == ["turns-completed"], data
    table = harness("talker", env={"PYTHONPATH": str(site)})
    assert table.returncode == 1
    assert any(
        line.split()[:2] == ["FAIL", "turns-completed"] for line in table.stdout.splitlines()
    )
