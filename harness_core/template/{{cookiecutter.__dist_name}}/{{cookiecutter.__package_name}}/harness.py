"""The `{{ cookiecutter.plugin_name }}` harness: one async function, called once per turn.

`harness run {{ cookiecutter.plugin_name }} "PROMPT"` runs it. The function may return a `str`, a
`Result(text, usage)`, an awaitable of either, or (as here) an async iterator of text chunks and
event payloads (`Status`, `ToolStarted`, ...). Sessions, ordering, the terminal event, cancel,
deadlines, resume, the ledger and export are the runtime's job.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from harness_core import FunctionSession, Message, harness

from . import __version__


@harness({{ cookiecutter.plugin_name | tojson }}, version=__version__)
async def run(message: Message, session: FunctionSession) -> AsyncIterator[str]:
    """Answer one turn. Replace the body with your harness's logic.

    `message.content` is the prompt; `session.history` holds earlier (role, text) pairs of this
    session, `session.state` is a dict you may use, `session.workspace` the working directory.
    """
    turn = sum(1 for role, _ in session.history if role == "user")
    yield f"turn {turn}:"
    for word in message.content.split():
        yield " " + word
