"""Steer, fork, checkpoint and rewind through the Controller, on one-function harnesses (the
runtime performs steer, fork and the conversation rewind for them) and on any harness (the
workspace checkpoints)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from harness_hookspecs import HarnessError

from harness_core import harness
from harness_core.checkpoints import CheckpointSettings
from harness_core.testing.branching import shaped_reply, tree_hash

FEATURES = ("resume", "cancel", "steer", "fork", "checkpoint")


@harness("shaped", features=FEATURES)
async def shaped(message, session):
    """Answers with the conversation it sees; a prompt "wait" waits for a steer first."""
    return await shaped_reply(message, session)


@harness("plain")
async def plain(message, session):
    if message.content.startswith("write "):
        _, name, text = message.content.split(" ", 2)
        Path(session.workspace, name).write_text(text)
    return "ok"


def types(events, *wanted):
    return [e for e in events if e.type in wanted]


def test_steer_reaches_the_running_function(make_controller, workspace):
    async def main():
        async with make_controller(shaped) as controller:
            ref = await controller.open_session(harness="shaped", workspace=workspace)
            async with controller.turn(ref, "wait") as turn:
                await anyio.sleep(0.05)
                await controller.steer(ref, "use the blue one")
                events = [event async for event in turn]
            return events

    events = anyio.run(main)
    kinds = [e.type for e in events]
    assert kinds[0] == "turn.started" and kinds[-1] == "turn.completed"
    assert kinds.count("turn.steered") == 1
    assert kinds.count("turn.completed") == 1
    steered = types(events, "turn.steered")[0]
    assert steered.payload.text == "use the blue one" and steered.turn_id == events[0].turn_id
    assert events[-1].payload.text.startswith("steered: use the blue one // ")
    assert "user=use the blue one" in events[-1].payload.text


def test_steer_refusals(make_controller, workspace):
    async def main():
        async with make_controller(shaped, plain) as controller:
            ref = await controller.open_session(harness="shaped", workspace=workspace)
            with pytest.raises(HarnessError) as no_turn:
                await controller.steer(ref, "nobody listens")
            other = await controller.open_session(harness="plain", workspace=workspace)
            async with controller.turn(other, "hi") as turn:
                with pytest.raises(HarnessError) as unsupported:
                    await controller.steer(other, "not here")
                await turn.drain()
            return no_turn.value, unsupported.value, controller.events(ref.session_id)

    no_turn, unsupported, events = anyio.run(main)
    assert no_turn.reason == "turn-not-found"
    assert unsupported.reason == "unsupported-feature"
    assert not types(events, "turn.steered")


def test_fork_keeps_the_conversation_up_to_the_point(make_controller, workspace):
    async def main():
        async with make_controller(shaped) as controller:
            parent = await controller.open_session(harness="shaped", workspace=workspace)
            first = await controller.run_turn(parent, "one")
            await controller.run_turn(parent, "two")
            child = await controller.fork(parent, at=first.events[-1].event_id)
            in_child = await controller.run_turn(child, "three")
            in_parent = await controller.run_turn(parent, "four")
            bundle = controller.export(child.session_id)
            exported = [e["type"] for e in bundle["events"]]
            assert exported[:2] == ["session.opened", "session.forked"]  # lineage in the export
            return (
                parent,
                child,
                first,
                in_child,
                in_parent,
                controller.events(parent.session_id),
                controller.events(child.session_id),
            )

    parent, child, first, in_child, in_parent, parent_events, child_events = anyio.run(main)
    assert child.session_id != parent.session_id
    assert in_child.text == "user=one;assistant=user=one;user=three"
    assert "two" not in in_child.text
    assert in_parent.text.startswith("user=one;") and "user=two" in in_parent.text
    assert "three" not in in_parent.text
    (in_child_side,) = types(child_events, "session.forked")
    (in_parent_side,) = types(parent_events, "session.forked")
    for forked in (in_child_side, in_parent_side):
        assert forked.payload.parent_session_id == parent.session_id
        assert forked.payload.child_session_id == child.session_id
        assert forked.payload.at_event_id == first.events[-1].event_id
        assert forked.payload.turns == 1
    assert [e.type for e in child_events[:2]] == ["session.opened", "session.forked"]


def test_fork_refusals(make_controller, workspace):
    async def main():
        async with make_controller(shaped, plain) as controller:
            parent = await controller.open_session(harness="shaped", workspace=workspace)
            await controller.run_turn(parent, "one")
            with pytest.raises(HarnessError) as unknown:
                await controller.fork(parent, at="ev_nope_3")
            other = await controller.open_session(harness="plain", workspace=workspace)
            with pytest.raises(HarnessError) as unsupported:
                await controller.fork(other)
            return unknown.value, unsupported.value, len(controller.sessions())

    unknown, unsupported, count = anyio.run(main)
    assert unknown.reason == "invalid-request" and "ev_nope_3" in str(unknown)
    assert unsupported.reason == "unsupported-feature"
    assert count == 2  # nothing opened by the refused forks


def test_rewind_restores_files_and_conversation(make_controller, workspace):
    async def main():
        async with make_controller(shaped, checkpoints=True) as controller:
            ref = await controller.open_session(harness="shaped", workspace=workspace)
            Path(workspace, "keep.txt").write_text("before\n")
            hashes = []
            for n in (1, 2, 3):
                hashes.append(tree_hash(workspace))
                await controller.run_turn(ref, f"write f{n}.txt content {n}\n")
            events = controller.events(ref.session_id)
            turn_one = types(events, "turn.started")[0].turn_id
            start_one = next(
                e.payload.checkpoint_id
                for e in types(events, "checkpoint.created")
                if e.payload.reason == "turn-start" and e.payload.turn_id == turn_one
            )
            rewound = await controller.rewind(ref, start_one[:16])
            after = tree_hash(workspace)
            next_turn = await controller.run_turn(ref, "again")
            return hashes, after, rewound, next_turn, controller.events(ref.session_id), events

    hashes, after, rewound, next_turn, all_events, before_rewind = anyio.run(main)
    assert after == hashes[0]
    assert rewound.conversation and rewound.turns_kept == 0
    assert next_turn.text == "user=again"
    # append-only: everything recorded before the rewind is still there, in order
    assert [e.event_id for e in all_events[: len(before_rewind)]] == [
        e.event_id for e in before_rewind
    ]
    ends = [e for e in types(before_rewind, "checkpoint.created") if e.payload.reason == "turn-end"]
    assert [e.payload.changes for e in ends] == [
        ("1\t0\tf1.txt",),
        ("1\t0\tf2.txt",),
        ("1\t0\tf3.txt",),
    ]
    assert types(all_events, "session.rewound")[0].payload.checkpoint_id == rewound.checkpoint_id


def test_rewind_on_a_harness_without_conversation_rewind(make_controller, workspace):
    async def main():
        async with make_controller(plain) as controller:
            ref = await controller.open_session(harness="plain", workspace=workspace)
            first = await controller.checkpoint(ref)
            await controller.run_turn(ref, "write a.txt one")
            second = await controller.checkpoint(ref)
            rewound = await controller.rewind(ref, first)
            gone = not Path(workspace, "a.txt").exists()
            await controller.rewind(ref, second)
            return rewound, gone, Path(workspace, "a.txt").read_text()

    rewound, gone, text = anyio.run(main)
    assert not rewound.conversation
    assert gone and text == "one"


def test_rewind_refusals(make_controller, workspace, tmp_path):
    other_ws = tmp_path / "other"
    other_ws.mkdir()

    async def main():
        async with make_controller(plain) as controller:
            ref = await controller.open_session(harness="plain", workspace=workspace)
            other = await controller.open_session(harness="plain", workspace=str(other_ws))
            theirs = await controller.checkpoint(other)
            before = controller.events(ref.session_id)
            with pytest.raises(HarnessError) as foreign:
                await controller.rewind(ref, theirs)
            with pytest.raises(HarnessError) as garbage:
                await controller.rewind(ref, "not-a-checkpoint")
            return foreign.value, garbage.value, before, controller.events(ref.session_id)

    foreign, garbage, before, after = anyio.run(main)
    assert foreign.reason == garbage.reason == "invalid-request"
    assert "not a checkpoint of this session" in str(foreign)
    assert before == after


def test_checkpoint_over_the_size_limit(make_controller, workspace):
    Path(workspace, "big.bin").write_bytes(os.urandom(4096))
    settings = CheckpointSettings(max_bytes=1024, max_file_bytes=1_000_000)

    async def main():
        async with make_controller(plain, checkpoints=settings) as controller:
            ref = await controller.open_session(harness="plain", workspace=workspace)
            with pytest.raises(HarnessError) as over:
                await controller.checkpoint(ref)
            result = await controller.run_turn(ref, "hi")
            return over.value, result, controller.events(ref.session_id)

    over, result, events = anyio.run(main)
    assert over.reason == "limit-exceeded" and "size limit" in str(over)
    assert result.ok  # the turn runs without its checkpoint, and says so
    started = types(events, "turn.started")[0]
    after_start = events[events.index(started) + 1]  # the turn says so, first thing
    assert after_start.type == "status" and after_start.turn_id == started.turn_id
    assert "over the checkpoint size limit" in after_start.payload.message
    assert not types(events, "checkpoint.created")


def test_a_turn_whose_end_cannot_be_snapshotted_says_so(make_controller, workspace):
    """The turn grows the workspace past the limit: its start is checkpointed, its end is not,
    and ``checkpoint.skipped`` (after the terminal, naming the turn and the reason) says so."""
    settings = CheckpointSettings(max_bytes=1024, max_file_bytes=1_000_000)

    async def main():
        async with make_controller(plain, checkpoints=settings) as controller:
            ref = await controller.open_session(harness="plain", workspace=workspace)
            result = await controller.run_turn(ref, "write big.txt " + "x" * 4096)
            return result, controller.events(ref.session_id)

    result, events = anyio.run(main)
    assert result.ok
    created = types(events, "checkpoint.created")
    assert [e.payload.reason for e in created] == ["turn-start"]
    (skipped,) = types(events, "checkpoint.skipped")
    assert skipped.turn_id is None and skipped.payload.turn_id == result.turn_id
    assert skipped.payload.reason == "limit-exceeded" and skipped.payload.at == "turn-end"
    assert events.index(skipped) > events.index(types(events, "turn.completed")[0])


def test_a_ledger_inside_the_workspace_is_never_rewound(make_controller, workspace):
    ledger = f"sqlite:///{workspace}/runs.sqlite"

    async def main():
        async with make_controller(plain, ledger=ledger, checkpoints=True) as controller:
            ref = await controller.open_session(harness="plain", workspace=workspace)
            await controller.run_turn(ref, "write a.txt one")
            events = controller.events(ref.session_id)
            start = types(events, "checkpoint.created")[0].payload.checkpoint_id
            await controller.run_turn(ref, "write b.txt two")
            await controller.rewind(ref, start)
            await controller.run_turn(ref, "after")
            return controller.events(ref.session_id)

    events = anyio.run(main)
    assert not Path(workspace, "a.txt").exists() and not Path(workspace, "b.txt").exists()
    assert Path(workspace, "runs.sqlite").exists()
    kinds = [e.type for e in events]
    assert kinds.count("turn.started") == 3 and "session.rewound" in kinds
    ends = [
        e.payload for e in types(events, "checkpoint.created") if e.payload.reason == "turn-end"
    ]
    assert all("runs.sqlite" not in line for end in ends for line in end.changes)


def test_an_imported_sessions_fork_takes_no_authority_from_the_bundle(
    make_controller, workspace, tmp_path
):
    """A bundle is data: its workspace, config and posture (a CLI path, a base URL a key is
    sent to, ``dangerous``) never reach a fork of the imported session."""
    import json

    from harness_core.bundle_import import import_bundle, load_any_bundle
    from harness_core.ledger import open_ledger

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    async def export() -> tuple[str, dict]:
        async with make_controller(shaped) as controller:
            ref = await controller.open_session(harness="shaped", workspace=workspace)
            await controller.run_turn(ref, "one")
            return ref.session_id, controller.export(ref.session_id)

    session_id, bundle = anyio.run(export)
    bundle["session"].update(
        posture="dangerous", config={"base_url": "http://attacker.invalid"}, workspace="/"
    )
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(bundle))
    url = f"sqlite:///{tmp_path}/imported.sqlite"
    store = open_ledger(url)
    try:
        import_bundle(store, load_any_bundle(str(path)))
        assert store.get_session(session_id).imported
    finally:
        store.close()

    async def fork() -> tuple[HarnessError, object, str]:
        async with make_controller(shaped, ledger=url) as controller:
            with pytest.raises(HarnessError) as refused:
                await controller.fork(session_id)
            assert len(controller.sessions()) == 1  # nothing opened
            child = await controller.fork(session_id, workspace=str(elsewhere))
            answer = await controller.run_turn(child, "two")
            return refused.value, controller.ledger.get_session(child.session_id), answer.text

    refused, child, answer = anyio.run(fork)
    assert refused.reason == "invalid-request"
    assert f"session {session_id} was imported" in str(refused)
    assert (child.workspace, child.posture, dict(child.config)) == (str(elsewhere), "auto", {})
    assert not child.imported
    assert answer == "user=one;assistant=user=one;user=two"  # the conversation is kept
