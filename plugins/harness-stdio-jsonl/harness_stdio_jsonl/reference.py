"""A reference program speaking the stdio-jsonl contract (see the README).

It echoes the prompt word by word; ``sleep N`` waits N seconds first; ``fail`` ends the turn with
``turn.failed``; ``write NAME TEXT`` writes a file in the workspace, reported as a tool call.
Works in both ``per-turn`` and ``session`` modes.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def emit(**fields: object) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def run_turn(request: dict[str, object]) -> None:
    prompt = str(request.get("prompt", ""))
    words = prompt.split()
    emit(type="status", message="reference agent started")
    if len(words) == 2 and words[0] == "sleep":
        time.sleep(float(words[1]))
    if words[:1] == ["fail"]:
        emit(type="turn.failed", reason="provider-unavailable")
        return
    if len(words) >= 3 and words[0] == "write":
        workspace = Path(os.environ.get("HARNESS_WORKSPACE", "."))
        target = (workspace / words[1]).resolve()
        emit(type="tool.started", call_id="call-1", name="write_file", summary=f"write {words[1]}")
        ok = workspace.resolve() in target.parents
        if ok:
            target.write_text(" ".join(words[2:]) + "\n")
        emit(type="tool.completed", call_id="call-1", name="write_file", ok=ok)
    for i, word in enumerate(words):
        emit(type="message.delta", text=(" " if i else "") + word, vendor_field="dropped")
    emit(type="usage", input_tokens=len(words), output_tokens=len(words))
    emit(type="turn.completed", text=prompt)


def main() -> int:
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if request.get("type") == "turn":
            run_turn(request)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
