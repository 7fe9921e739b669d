"""The kit's steer, fork and rewind phase (:mod:`harness_core.branching`).

- **steer**: with no running turn, ``turn-not-found``; during a running turn (the profile's
  slow prompt, or an ordinary turn the kit holds after its first event), a harness claiming
  ``steer`` takes the text (one ``turn.steered`` in that turn, before its one terminal) and one
  that does not raises ``unsupported-feature`` and records nothing;
- **fork**: a harness claiming ``fork`` opens a child at the end of a parent's first turn
  (``session.forked`` in both, naming each other and the event), the child's next turn ends; an
  unknown event is ``invalid-request``; one that does not claim it raises
  ``unsupported-feature`` and opens nothing;
- **rewind**: for every harness, a workspace checkpoint, a turn and a file written after it,
  then a rewind: the file is gone, ``session.rewound`` says whether the conversation went back
  (exactly when the harness claims ``checkpoint``) and the next turn ends.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from attrs import define, field
from harness_hookspecs import TERMINAL_TYPES, Event, HarnessError, SessionRef

from .run import KitTurn, Run, reason_of

#: What the kit steers into a running turn.
STEER_TEXT = "conformance kit: a steer into the running turn"
#: The file the rewind check writes after its checkpoint.
REWIND_FILE = "harness-conformance-rewind.txt"


@define
class Seen:
    note: str = ""
    problems: list[str] = field(factory=list)
    not_run: str | None = None


@define
class BranchingSeen:
    steer: Seen = field(factory=Seen)
    #: the turn the steer phase ran and cancelled: the steer check judges its processes
    steered_turn_id: str | None = None
    fork: Seen = field(factory=Seen)
    rewind: Seen = field(factory=Seen)


async def branching_phase(run: Run) -> None:
    seen = run.branching = BranchingSeen()
    if run.descriptor is None:
        for part in (seen.steer, seen.fork, seen.rewind):
            part.not_run = "the harness was not described"
        return
    async with run.controller() as controller:
        for name, phase in (("steer", _steer), ("fork", _fork), ("rewind", _rewind)):
            part = getattr(seen, name)
            try:
                with anyio.fail_after(run.timeout * 3):
                    await phase(run, controller, part)
            except (HarnessError, TimeoutError) as error:
                part.problems.append(f"the {name} phase stopped ({reason_of(error)})")


def _session_events(run: Run, ref: SessionRef) -> list[Event]:
    return list(run.probe.events.get(ref.session_id, []))


async def _steer(run: Run, controller: Any, seen: Seen) -> None:
    ref = await run.open(controller)
    claimed = "steer" in run.features
    try:
        await controller.steer(ref, STEER_TEXT)
        seen.problems.append("a steer with no running turn was accepted")
    except HarnessError as error:
        if error.reason != "turn-not-found":
            seen.problems.append(f"a steer with no running turn raised {error.reason}")
    slow = run.profile.slow_prompt
    run.probe.hold_next_turn = slow is None
    turn = KitTurn(label="steered turn", session_id=ref.session_id)
    done = anyio.Event()

    async with controller.turn(ref, slow or run.profile.prompt) as running:
        turn.turn_id = running.turn_id
        if run.branching is not None:
            run.branching.steered_turn_id = running.turn_id
        probe_turn = run.probe.turns.get(running.turn_id)
        async with anyio.create_task_group() as group:
            group.start_soon(turn.collect, running, done)
            await run.wait_running(done, probe_turn)
            # and until the adapter said something (a CLI has started its process by then)
            with anyio.move_on_after(run.profile.turn_timeout or run.timeout):
                while not done.is_set() and len(turn.seen) < 2:
                    await anyio.sleep(0.01)
            if done.is_set():
                if claimed:
                    seen.not_run = "the turn ended before it could be steered (give a slow_prompt)"
                else:  # nothing to exercise: the steer without a turn was refused above
                    seen.note = "not claimed; the turn ended before a second steer could reach it"
                return
            refused: str | None = None
            try:
                await controller.steer(ref, STEER_TEXT)
                if not claimed:
                    seen.problems.append("steer is not claimed, but a steer was accepted")
            except HarnessError as error:
                refused = error.reason
            await running.cancel("host")
            await done.wait()
    steered = [e for e in turn.seen if e.type == "turn.steered"]
    terminals = [e for e in turn.seen if e.type in TERMINAL_TYPES]
    if refused == "turn-not-found" and terminals and terminals[-1].type != "turn.cancelled":
        # the turn ended by itself as the steer went in (the kit's view of it lags a loaded
        # machine): a race, not the harness's fault
        if claimed:
            seen.not_run = "the turn ended before it could be steered (give a slow_prompt)"
        else:
            seen.note = "not claimed; the turn ended before a second steer could reach it"
        return
    if refused is not None and (claimed or refused != "unsupported-feature"):
        seen.problems.append(f"a steer into the running turn raised {refused}")
    if claimed:
        if len(steered) != 1 or steered[0].payload.text != STEER_TEXT:  # type: ignore[union-attr]
            seen.problems.append(f"{len(steered)} turn.steered events in the steered turn")
        elif len(terminals) != 1 or turn.seen[-1] is not terminals[0]:
            seen.problems.append("the steered turn did not end with exactly one terminal")
        else:
            seen.note = "one turn.steered inside the running turn, one terminal after it"
    else:
        if steered:
            seen.problems.append("steer is not claimed, but turn.steered was recorded")
        seen.note = "not claimed: steer raised unsupported-feature"


async def _fork(run: Run, controller: Any, seen: Seen) -> None:
    parent = await run.open(controller)
    first = await run.ordinary_turn(controller, parent, "fork parent turn")
    if first.terminal is None:
        seen.not_run = "the parent's turn did not end"
        return
    before = len(controller.sessions())
    if "fork" not in run.features:
        try:
            await controller.fork(parent, at=first.terminal.event_id)
            seen.problems.append("fork is not claimed, but a fork was accepted")
        except HarnessError as error:
            if error.reason != "unsupported-feature":
                seen.problems.append(f"fork is not claimed; it raised {error.reason}")
        if len(controller.sessions()) != before:
            seen.problems.append("a refused fork left a session behind")
        seen.note = "not claimed: fork raised unsupported-feature"
        return
    try:
        await controller.fork(parent, at="ev_not_an_event_1")
        seen.problems.append("a fork at an unknown event was accepted")
    except HarnessError as error:
        if error.reason != "invalid-request":
            seen.problems.append(f"a fork at an unknown event raised {error.reason}")
    child = await controller.fork(parent, at=first.terminal.event_id, **run.session_kwargs())
    for ref, side in ((child, "child"), (parent, "parent")):
        forked = [e for e in _session_events(run, ref) if e.type == "session.forked"]
        payload: Any = forked[0].payload if len(forked) == 1 else None
        if payload is None or (
            payload.parent_session_id,
            payload.child_session_id,
            payload.at_event_id,
        ) != (parent.session_id, child.session_id, first.terminal.event_id):
            seen.problems.append(f"the {side} does not record the fork (session.forked)")
    after = await run.ordinary_turn(controller, child, "turn in the fork")
    if after.terminal is None:
        seen.problems.append("the fork's first turn did not end")
    if not seen.problems:
        seen.note = f"forked after turn 1; the child's turn {after.terminal.type}"  # type: ignore[union-attr]


async def _rewind(run: Run, controller: Any, seen: Seen) -> None:
    ref = await run.open(controller)
    checkpoint = await controller.checkpoint(ref)
    await run.ordinary_turn(controller, ref, "turn before the rewind")
    written = Path(run.workspace, REWIND_FILE)
    written.write_text("written after the checkpoint\n")
    rewound = await controller.rewind(ref, checkpoint)
    if written.exists():
        seen.problems.append("the rewind left a file written after the checkpoint")
    claimed = "checkpoint" in run.features
    if rewound.conversation != claimed:
        seen.problems.append(
            f"session.rewound says conversation={rewound.conversation}, "
            f"the harness {'claims' if claimed else 'does not claim'} checkpoint"
        )
    if claimed and rewound.turns_kept != 0:
        seen.problems.append(f"the rewind kept {rewound.turns_kept} turns, not 0")
    recorded = [e for e in _session_events(run, ref) if e.type == "session.rewound"]
    if len(recorded) != 1:
        seen.problems.append(f"{len(recorded)} session.rewound events after one rewind")
    after = await run.ordinary_turn(controller, ref, "turn after the rewind")
    if after.terminal is None:
        seen.problems.append(f"the turn after the rewind did not end ({after.error or 'no end'})")
    if not seen.problems:
        what = "workspace and conversation" if claimed else "workspace (conversation not claimed)"
        seen.note = f"{what} rewound; the next turn {after.terminal.type}"  # type: ignore[union-attr]


__all__ = ["BranchingSeen", "Seen", "branching_phase", "reason_of"]
