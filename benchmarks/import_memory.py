"""Peak memory of ``harness import`` on a large generated bundle (issue 26: a 2 GB bundle imports
in constant memory, peak RSS under 200 MB).

Writes a valid export bundle of about ``--size`` bytes (a session of ``--turn-events``-long
turns of 4 KiB ``message.delta`` events, streamed to disk: the generator holds one event at a
time), imports it into a fresh SQLite ledger with the real ``harness import``, and prints the
bundle size, the import's wall time and its peak RSS (``/usr/bin/time -v``, else
``RUSAGE_CHILDREN``), then the events the ledger holds.

    python benchmarks/import_memory.py [--size 2G] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import figure, rmtree, tempdir, time_process, venv_bin

STAMP = "2026-01-01T00:00:00.000000Z"


def size_of(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1:].upper() in units:
        return int(float(text[:-1]) * units[text[-1:].upper()])
    return int(text)


def generate(path: str, size: int, turn_events: int) -> int:
    """Write the bundle; return its event count."""
    session_id = str(uuid.uuid4())
    prefix = f"ev_{uuid.uuid4().hex[:16]}_"
    record = {
        "ref": {"provider": "echo", "target": "local", "session_id": session_id},
        "status": "closed",
        "created_at": STAMP,
        "updated_at": STAMP,
        "workspace": "/tmp",
    }
    text = "lorem ipsum " * 341  # ~4 KiB a delta

    def envelope(sequence: int, turn: str | None, kind: str, payload: dict) -> str:
        return json.dumps({
            "protocol_version": 1, "event_id": f"{prefix}{sequence}", "sequence": sequence,
            "session_id": session_id, "turn_id": turn, "harness": "echo", "timestamp": STAMP,
            "parent_event_id": None, "type": kind, "payload": payload,
        })  # fmt: skip

    sequence = 0
    with open(path, "w") as out:
        head = {"format": "harness-core.export", "version": 1, "exported_at": STAMP}
        out.write(json.dumps(head)[:-1] + ', "session": ' + json.dumps(record))
        out.write(', "usage": null, "turns": [], "events": [')

        def emit(turn: str | None, kind: str, payload: dict) -> None:
            nonlocal sequence
            sequence += 1
            out.write(("" if sequence == 1 else ", ") + envelope(sequence, turn, kind, payload))

        emit(None, "session.opened", {"provider": "echo", "target": "local"})
        turn_number = 0
        while out.tell() < size:
            turn_number += 1
            turn = f"turn_{turn_number}"
            emit(turn, "turn.started", {"prompt": "go"})
            for _ in range(turn_events):
                emit(turn, "message.delta", {"text": text})
            emit(turn, "turn.completed", {"text": "done"})
        emit(None, "session.closed", {})
        out.write("]}")
    return sequence


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=size_of, default=size_of("2G"))
    parser.add_argument("--turn-events", type=int, default=1000)
    parser.add_argument("--keep", action="store_true", help="keep the bundle and the ledger")
    args = parser.parse_args()
    directory = tempdir("import")
    try:
        bundle = os.path.join(directory, "bundle.json")
        events = generate(bundle, args.size, args.turn_events)
        figure("bundle", os.path.getsize(bundle) / (1 << 20), "MB", note=f"{events:,} events")
        ledger = os.path.join(directory, "ledger.sqlite")
        env = {"HARNESS_STATE_DIR": os.path.join(directory, "state")}
        wall, rss = time_process(
            [venv_bin("harness"), "import", bundle, "--ledger", f"sqlite:///{ledger}"], env
        )
        figure("import wall", wall, "s")
        figure("import peak RSS", rss, "MB", target="< 200 MB")
        with sqlite3.connect(ledger) as db:
            stored = db.execute("SELECT count(*) FROM events").fetchone()[0]
        figure("events stored", stored, "events", note="(all)" if stored == events else "MISSING")
    finally:
        if not args.keep:
            rmtree(directory)
        else:
            print(f"kept in {directory}")


if __name__ == "__main__":
    main()
