"""A deterministic slow harness program (stdio-jsonl contract): ``steps N DELAY`` streams N
deltas ``step i`` DELAY seconds apart, then completes; any other prompt is echoed at once.
With a directory argument, its pid goes to ``DIR/<turn_id>.<pid>`` (tests check it is gone)."""

from __future__ import annotations

import json
import os
import sys
import time


def emit(**fields: object) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def run_turn(request: dict[str, object]) -> None:
    pid_dir = sys.argv[1] if len(sys.argv) > 1 else None
    if pid_dir:
        open(os.path.join(pid_dir, f"{request['turn_id']}.{os.getpid()}"), "w").close()
    words = str(request.get("prompt", "")).split()
    if len(words) == 3 and words[0] == "steps":
        for i in range(int(words[1])):
            time.sleep(float(words[2]))
            emit(type="message.delta", text=f"step {i} ")
    else:
        emit(type="message.delta", text=" ".join(words))
    emit(type="usage", input_tokens=len(words), output_tokens=len(words))
    emit(type="turn.completed")


def main() -> int:
    for line in sys.stdin:
        if line.strip():
            request = json.loads(line)
            if request.get("type") == "turn":
                run_turn(request)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
