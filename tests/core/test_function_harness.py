"""Every return form a one-function harness may use becomes the contract's events."""

from __future__ import annotations

import anyio
import pytest
from harness_hookspecs import Status, TurnFailed, Usage

from harness_core import Result, harness


@harness("plain-str")
async def plain_str(message, session):
    return f"handled by {session.harness_id}: {message.content}"


@harness("result-obj")
async def result_obj(message, session):
    return Result(text="with usage", usage=Usage(input_tokens=3, output_tokens=5))


async def _later(value):
    await anyio.sleep(0)
    return value


@harness("awaitable")
def returns_awaitable(message, session):
    return _later("from an awaitable")


@harness("awaitable-result")
def returns_awaitable_result(message, session):
    return _later(Result(text="awaited result"))


@harness("async-iter")
async def async_iter(message, session):
    yield "a"
    yield Status(message="thinking")
    yield "b"
    yield Result(usage=Usage(output_tokens=2))


@harness("sync-iter")
def sync_iter(message, session):
    return iter(["x", "y"])


@harness("own-terminal")
async def own_terminal(message, session):
    yield "partial"
    yield TurnFailed(reason="authentication-required")


@harness("history")
async def remembers(message, session):
    return f"turn {len(session.history) // 2 + 1}"


@harness("bad-value")
async def bad_value(message, session):
    return 42


FORMS = [
    ("plain-str", "completed", "handled by plain-str: hi", None),
    ("result-obj", "completed", "with usage", Usage(input_tokens=3, output_tokens=5)),
    ("awaitable", "completed", "from an awaitable", None),
    ("awaitable-result", "completed", "awaited result", None),
    ("async-iter", "completed", "ab", Usage(output_tokens=2)),
    ("sync-iter", "completed", "xy", None),
    ("own-terminal", "failed", "partial", None),
    ("bad-value", "failed", None, None),
]


@pytest.mark.parametrize(("name", "status", "text", "usage"), FORMS)
def test_return_forms(make_controller, workspace, name, status, text, usage):
    objs = [
        plain_str,
        result_obj,
        returns_awaitable,
        returns_awaitable_result,
        async_iter,
        sync_iter,
        own_terminal,
        bad_value,
    ]

    async def main():
        async with make_controller(*objs) as controller:
            ref = await controller.open_session(harness=name, workspace=workspace)
            return await controller.run_turn(ref, "hi")

    result = anyio.run(main)
    assert result.status == status
    assert result.text == text
    assert result.usage == usage
    assert result.events[0].type == "turn.started"
    assert [e.terminal for e in result.events].count(True) == 1
    assert result.events[-1].terminal


def test_async_iterator_streams_deltas_and_status(make_controller, workspace):
    async def main():
        async with make_controller(async_iter) as controller:
            ref = await controller.open_session(harness="async-iter", workspace=workspace)
            return await controller.run_turn(ref, "hi")

    types = [e.type for e in anyio.run(main).events]
    assert types == [
        "turn.started",
        "message.delta",
        "status",
        "message.delta",
        "message.completed",
        "usage",
        "turn.completed",
    ]


def test_failed_function_value_reports_fixed_reason(make_controller, workspace):
    async def main():
        async with make_controller(bad_value) as controller:
            ref = await controller.open_session(harness="bad-value", workspace=workspace)
            return await controller.run_turn(ref, "hi")

    result = anyio.run(main)
    assert result.reason == "provider-failed"


def test_session_history_accumulates(make_controller, workspace):
    async def main():
        async with make_controller(remembers) as controller:
            ref = await controller.open_session(harness="history", workspace=workspace)
            first = await controller.run_turn(ref, "one")
            second = await controller.run_turn(ref, "two")
            return first.text, second.text

    assert anyio.run(main) == ("turn 1", "turn 2")


def test_decorated_function_is_still_callable():
    async def main():
        class S:
            harness_id = "plain-str"

        class M:
            content = "direct"

        return await plain_str(M(), S())

    assert anyio.run(main) == "handled by plain-str: direct"


def test_a_subclass_that_overrides_close_session_has_it_called(make_controller, workspace):
    # The runtime closes a function harness through its synchronous close_at_once; a subclass
    # with its own close_session must not be bypassed.
    from harness_core.function_harness import FunctionHarness

    closed: list[str] = []

    class Closing(FunctionHarness):
        async def close_session(self, request, context):
            closed.append(request.session.session_id)
            await super().close_session(request, context)

    async def reply(message, session):
        return "ok"

    async def main():
        async with make_controller(Closing("closing", reply)) as controller:
            ref = await controller.open_session(harness="closing", workspace=workspace)
            await controller.run_turn(ref, "hi")
            await controller.close_session(ref)
            return ref.session_id

    assert closed == [anyio.run(main)]


@harness("control-chars")
async def control_chars(message, session):
    return "coloured \x1b[31mred\x1b[0m, a page\x0cbreak, a NUL\x00"


def test_returned_text_with_control_characters_completes_with_them_replaced(
    make_controller, workspace
):
    async def main():
        async with make_controller(control_chars) as controller:
            ref = await controller.open_session(harness="control-chars", workspace=workspace)
            return await controller.run_turn(ref, "hi")

    result = anyio.run(main)
    assert result.status == "completed", result
    assert result.text == "coloured \ufffd[31mred\ufffd[0m, a page\ufffdbreak, a NUL\ufffd"


@harness("bad-spawn")
async def bad_spawn(message, session):
    argv, env, cwd = {
        "a string": ("ls -la", None, None),
        "a NUL": (["echo", "a\x00b"], None, None),
        "an env name with =": (["true"], {"A=B": "1"}, None),
        "a missing cwd": (["true"], None, "/no/such/dir"),
    }[message.content]
    await session.spawn(argv, env=env, cwd=cwd)
    return "spawned"


@pytest.mark.parametrize(
    ("prompt", "hint"),
    [
        ("a string", 'spawn takes a list of arguments (["pytest", "-q"]), not a string'),
        ("a NUL", "every spawn argument must be text without NUL"),
        ("an env name with =", "spawn's env must map names (no '=' or NUL) to text without NUL"),
        ("a missing cwd", "the directory '/no/such/dir' does not exist"),
    ],
)
def test_a_spawn_of_a_malformed_command_is_invalid_request_naming_what(
    make_controller, workspace, prompt, hint
):
    # "ls -la" ran 'l' (the string taken as a list of characters); a NUL was "the harness
    # raised ValueError"; a bad cwd was named "the workspace directory"
    async def main():
        async with make_controller(bad_spawn) as controller:
            ref = await controller.open_session(harness="bad-spawn", workspace=workspace)
            return await controller.run_turn(ref, prompt)

    result = anyio.run(main)
    failed = result.events[-1].payload
    assert (result.status, failed.reason, failed.hint) == ("failed", "invalid-request", hint)


class _Chunks:
    """An async iterable that is not its own iterator (``__aiter__`` only)."""

    def __aiter__(self):
        async def chunks():
            yield "a"
            yield "b"

        return chunks()


@harness("async-iterable")
def async_iterable(message, session):
    return _Chunks()


def test_an_async_iterable_that_is_not_an_iterator_streams_its_chunks(make_controller, workspace):
    async def main():
        async with make_controller(async_iterable) as controller:
            ref = await controller.open_session(harness="async-iterable", workspace=workspace)
            return await controller.run_turn(ref, "hi")

    result = anyio.run(main)
    assert result.ok and result.text == "ab"
    assert [e.payload.text for e in result.events if e.type == "message.delta"] == ["a", "b"]
