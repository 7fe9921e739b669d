"""``harness policy check``: the verdict, the rule and the reason; exit 0 only for allow."""

from __future__ import annotations

import json
import subprocess

from tests.helpers import harness_cmd


def _check(*args: str, cwd) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*harness_cmd(), "policy", "check", *args], capture_output=True, text=True, cwd=cwd
    )


def test_policy_check_prints_verdict_and_rule(tmp_path):
    denied = _check('bash -c "env X=1 rm -rf /"', cwd=tmp_path)
    assert denied.returncode == 1
    assert denied.stdout == (
        "deny delete-outside-workspace: recursive or forced delete outside the workspace"
        " (in: rm -rf /)\n"
    )
    allowed = _check("pytest -q", cwd=tmp_path)
    assert (allowed.returncode, allowed.stdout) == (0, "allow default\n")
    asked = _check("--json", "psql -c 'DROP TABLE x'", cwd=tmp_path)
    assert json.loads(asked.stdout) == {
        "verdict": "ask",
        "rule": "destructive-sql",
        "reason": "DDL or destructive SQL through a database client",
        "command": "psql -c DROP TABLE x",
    }
    path = _check("--path", "/etc/passwd", cwd=tmp_path)
    assert path.stdout.startswith("deny file-write-outside-workspace")


def test_policy_check_reads_a_host_policy_file(tmp_path):
    policy = tmp_path / "policy.json"
    rule = {"name": "tf", "verdict": "deny", "programs": ["terraform"], "args": ["destroy"]}
    policy.write_text(json.dumps({"rules": [rule], "disable": ["other-user"]}))
    out = _check("--policy", str(policy), "sudo terraform destroy", cwd=tmp_path)
    assert out.stdout == "deny tf: deny by the command policy rule tf (in: terraform destroy)\n"
    policy.write_text(json.dumps({"rules": [{"name": "x", "verdict": "maybe"}]}))
    bad = _check("--policy", str(policy), "ls", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.startswith("harness: error: invalid-request: command_policy rule 'x': ")
    assert len(bad.stderr.splitlines()) == 1
    policy.write_text("{")
    assert "not JSON" in _check("--policy", str(policy), "ls", cwd=tmp_path).stderr
