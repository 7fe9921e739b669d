"""A scripted, wire-compatible fake model server for driving real harness CLIs offline.

The distribution ``harnessplane-fake-model`` (``harnessplane[testing]`` installs it);
``harness_core.testing.fake_model`` re-exports this package.

It speaks, streaming (SSE) and not, the three wire formats the coding-agent CLIs use:

- Anthropic Messages API: ``POST /v1/messages`` (+ ``/v1/messages/count_tokens``) -- Claude Code;
- OpenAI Responses API: ``POST /v1/responses`` -- Codex;
- OpenAI Chat Completions: ``POST /v1/chat/completions`` -- OpenCode, Pi, anything OpenAI-compatible;

plus ``GET /v1/models`` (a list in both vendors' shapes).  Every route is also served without the
``/v1`` prefix, because some clients put ``/v1`` in the base URL and some do not.

Replies come from a *script*: a list of :class:`Step` (or dicts of the same shape, or a JSON file
``{"steps": [...], "default_text": "..."}`` / ``[...]``).  A step is assistant text, tool calls,
usage figures, an HTTP error in the vendor's JSON shape, a delay, or a dropped connection.

Matching rule (so the CLIs' side requests -- title generation, quota probes, token counts --
do not eat the script): each incoming model request is compared with the *next* unconsumed step
only.  If the step's :class:`Match` accepts the request the step is consumed (``times`` counts
down) and replayed; otherwise the request gets a harmless default text reply and the step stays
queued.  A Match checks, all optional: the ``endpoint`` (``"messages"``, ``"responses"``,
``"chat"``), ``tools`` (by default True: the request offers tools -- the CLIs' side requests do
not), ``contains`` (substring of the latest user text), ``tool_result`` (whether the request ends
with a tool result) and ``model`` (substring of the model name).  When the script is exhausted
every request gets ``default_text``.  ``count_tokens`` and ``models`` never consume steps.

Every request is recorded (method, path, headers with credential values redacted, JSON body, and
which step answered it) in :attr:`FakeModelServer.requests`.

The server runs its own asyncio event loop in a daemon thread, so it works the same from sync
tests, from asyncio/trio/anyio hosts and from the command line::

    with FakeModelServer([Step(text="hi")]) as server:
        server.base_url         # http://127.0.0.1:PORT      (Anthropic-style clients)
        server.openai_base_url  # http://127.0.0.1:PORT/v1   (OpenAI-style clients)

    harness fake-model serve --port 8765 --script script.json
    python -m harness_fake_model serve --port 8765 --script script.json
"""

from .cli import main
from .recording import RecordedRequest
from .script import ErrorReply, Match, Step, ToolCall, Usage, load_script
from .server import FakeModelServer, fixed_port_lock

__all__ = [
    "ErrorReply",
    "FakeModelServer",
    "Match",
    "RecordedRequest",
    "Step",
    "ToolCall",
    "Usage",
    "fixed_port_lock",
    "load_script",
    "main",
]
