"""A tiny stand-in for the command-line agent this plugin wraps (standard library only).

It behaves like a real agent CLI in "print" mode: it takes the prompt as an argument, writes its
native JSONL event stream to stdout and exits. The adapter (`adapter.py`) maps that stream to the
contract's events. Replace it with the real CLI (set `command` in the session config or
`{{ cookiecutter.__env_prefix }}_COMMAND`) and adjust `adapter.parse_line` to its format.

    python fake_agent.py --session-id ID --state-dir DIR [--resume] [--model M] -p PROMPT

Native lines: `init`, `text` (a delta), `tool` (phase start/end), `usage`, `result` (the end of the
turn) and `error` (kind auth/unavailable/other). Prompts: `sleep N` waits N seconds first, `ls`
lists the working directory as a tool call, `fail` ends with an auth error (exit status 1).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def emit(**fields: object) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fake-agent")
    parser.add_argument("-p", "--prompt", required=True)
    parser.add_argument("--session-id", required=True)
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--model")
    args = parser.parse_args(argv)

    # The agent's own session memory: how many turns this session has had.
    state_file = os.path.join(args.state_dir, "fake-agent-session.json")
    turns = 0
    if os.path.exists(state_file):
        with open(state_file) as f:
            turns = int(json.load(f).get("turns", 0))
    turns += 1
    with open(state_file, "w") as f:
        json.dump({"session": args.session_id, "turns": turns}, f)

    emit(type="init", session=args.session_id, resumed=args.resume, model=args.model)
    words = args.prompt.split()
    if len(words) == 2 and words[0] == "sleep":
        emit(type="thinking", note="sleeping")  # an unknown native type: the adapter ignores it
        time.sleep(float(words[1]))
    if words[:1] == ["fail"]:
        emit(type="error", kind="auth", detail="401 from the provider, raw text never crosses")
        return 1
    if words[:1] == ["ls"]:
        emit(type="tool", phase="start", id="call-1", name="list_files")
        count = len(os.listdir("."))
        emit(type="tool", phase="end", id="call-1", name="list_files", ok=True, count=count)
    text = f"turn {turns}: {args.prompt}"
    for i, word in enumerate(text.split(" ")):
        emit(type="text", delta=(" " if i else "") + word, internal_id=i)
    emit(type="usage", input=len(words), output=len(text.split()))
    emit(type="result", text=text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
