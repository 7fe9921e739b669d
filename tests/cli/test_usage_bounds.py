"""Usage totals are bounded (issue 26, item 5): two valid usage reports whose sum passes the
contract's bounds saturate at the bound; the turn completes, and ``export`` works on the
session from then on."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from harness_hookspecs import Usage
from harness_hookspecs.bounds import COST_USD_MAX, MAX_SAFE_INTEGER

from harness_core.budgets import Budget, add_usage, sum_usage

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_run import harness

PROGRAM = """\
import json, sys
sys.stdin.readline()
for _ in range(2):
    print(json.dumps({"type": "usage", %s}), flush=True)
print(json.dumps({"type": "turn.completed", "text": "ok"}), flush=True)
"""


def test_sums_saturate_at_the_contract_bound() -> None:
    big = Usage(input_tokens=MAX_SAFE_INTEGER, requests=1, cost_usd=1e308)
    total = sum_usage([big, big, Usage(output_tokens=5)])
    assert total == Usage(
        input_tokens=MAX_SAFE_INTEGER, output_tokens=5, requests=2, cost_usd=COST_USD_MAX
    )
    # a field unknown to both stays unknown; a small sum is exact
    assert add_usage(Usage(requests=1), Usage(requests=2)) == Usage(requests=3)
    # a saturated total still binds a budget
    assert Budget(max_input_tokens=10).spent(0.0, total) == "max_input_tokens 10 reached"


@pytest.mark.parametrize(
    ("fields", "summary"),
    [
        ('"input_tokens": 2**53 - 1', {"input_tokens": MAX_SAFE_INTEGER}),
        ('"cost_usd": 1e308', {"cost_usd": COST_USD_MAX}),
    ],
)
def test_two_huge_usage_reports_complete_and_export(
    cli_env: dict[str, str], tmp_path: Path, fields: str, summary: dict[str, object]
) -> None:
    program = tmp_path / "usage_program.py"
    program.write_text(PROGRAM % fields)
    command = json.dumps([sys.executable, str(program)])
    run = harness(cli_env, "run", "stdio-jsonl", "hi", "--json", "--config", f"command={command}")
    assert run.returncode == 0, run.stderr
    assert "internal error" not in run.stderr
    events = [json.loads(line) for line in run.stdout.splitlines()]
    assert events[-1]["type"] == "turn.completed"
    session_id = events[-1]["session_id"]
    export = harness(cli_env, "export", session_id)
    assert export.returncode == 0, export.stderr
    bundle = json.loads(export.stdout)
    for name, value in summary.items():
        assert bundle["usage"][name] == value
        assert bundle["turns"][0]["usage"][name] == value
