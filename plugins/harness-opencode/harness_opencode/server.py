"""Talking to one ``opencode serve`` process over HTTP (verified against opencode-ai 1.18.33's
``/doc`` OpenAPI document).

The server is started on 127.0.0.1 with ``--port 0`` (it announces the port it took on stdout:
``opencode server listening on http://127.0.0.1:PORT``) and a random
``OPENCODE_SERVER_PASSWORD`` (HTTP basic auth as user ``opencode``), so no other local user
can drive it. Every request names the workspace (``?directory=``).

``httpx`` (~60 ms to import) is imported once the server is spawned (:func:`load_http`, called
while it starts up), not with the plugin: the spawn does not wait for it.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

USERNAME = "opencode"
_LISTENING = re.compile(rb"opencode server listening on (http://127\.0\.0\.1:\d{1,5})\b")
#: An event larger than this is dropped (OpenCode's events are far smaller).
MAX_EVENT = 8 * 1024 * 1024
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]{1,63}")
#: Seconds a short request (create a session, answer a permission) may take.
REQUEST_TIMEOUT = 30.0


def load_http() -> Any:
    """The ``httpx`` module (imported on first use)."""
    import httpx

    return httpx


def listening_url(line: bytes) -> str | None:
    """The server's URL from its announcement line (loopback only), else ``None``."""
    match = _LISTENING.search(line)
    return match.group(1).decode() if match else None


async def announced_url(lines: AsyncIterator[bytes]) -> str | None:
    """Read the server's stdout until it announces its URL; ``None`` if it exits first."""
    async for line in lines:
        url = listening_url(line)
        if url is not None:
            return url
    return None


class ServeError(Exception):
    """The server answered a request with an error status (``status``), or not at all (0)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def sse_data(chunks: list[str]) -> Any:
    """The JSON value of one SSE event from its ``data:`` lines, else ``None``."""
    data = "\n".join(chunks)
    if not data or len(data) > MAX_EVENT:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None


class ServeClient:
    """The few endpoints a turn uses."""

    def __init__(self, url: str, password: str, directory: str) -> None:
        self.httpx = http = load_http()
        self.http: httpx.AsyncClient = http.AsyncClient(
            base_url=url,
            auth=(USERNAME, password),
            params={"directory": directory},
            timeout=http.Timeout(REQUEST_TIMEOUT),
            trust_env=False,  # loopback: no proxy from the environment
        )

    async def __aenter__(self) -> ServeClient:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.http.aclose()

    async def _post(self, path: str, body: Mapping[str, Any], *, wait: bool = False) -> Any:
        httpx = self.httpx
        try:
            response = await self.http.post(
                path, json=body, timeout=None if wait else httpx.USE_CLIENT_DEFAULT
            )
        except httpx.HTTPError:
            raise ServeError(0) from None
        if response.status_code >= 400:
            raise ServeError(response.status_code)
        try:
            return response.json()
        except ValueError:
            raise ServeError(0) from None

    async def create_session(self, title: str) -> str:
        session = await self._post("/session", {"title": title})
        native_id = session.get("id") if isinstance(session, Mapping) else None
        if not isinstance(native_id, str) or not native_id.startswith("ses"):
            raise ServeError(0)
        return native_id

    async def prompt(self, session_id: str, body: Mapping[str, Any]) -> Mapping[str, Any]:
        """``POST /session/{id}/message``: returns when the prompt's loop is done."""
        reply = await self._post(f"/session/{session_id}/message", body, wait=True)
        if not isinstance(reply, Mapping):
            raise ServeError(0)
        return reply

    async def prompt_async(self, session_id: str, body: Mapping[str, Any]) -> None:
        """``POST /session/{id}/prompt_async``: the message is added at once (a busy session's
        running loop takes it into its next model request); nothing is awaited."""
        httpx = self.httpx
        try:
            response = await self.http.post(f"/session/{session_id}/prompt_async", json=body)
        except httpx.HTTPError:
            raise ServeError(0) from None
        if response.status_code >= 400:
            raise ServeError(response.status_code)

    async def user_messages(self, session_id: str) -> list[str]:
        """``GET /session/{id}/message``: the ids of the session's user messages, in order."""
        httpx = self.httpx
        try:
            response = await self.http.get(f"/session/{session_id}/message")
            body = response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            raise ServeError(0) from None
        if not isinstance(body, list):
            raise ServeError(response.status_code if response.status_code >= 400 else 0)
        ids = []
        for message in body:
            info = message.get("info") if isinstance(message, Mapping) else None
            user = isinstance(info, Mapping) and info.get("role") == "user"
            if user and isinstance(info, Mapping) and isinstance(info.get("id"), str):
                ids.append(info["id"])
        return ids

    async def fork(self, session_id: str, before: str | None) -> str:
        """``POST /session/{id}/fork``: a new session holding the messages before the message
        ``before`` (all of them: ``None``); returns its id."""
        body = {"messageID": before} if before is not None else {}
        session = await self._post(f"/session/{session_id}/fork", body)
        native_id = session.get("id") if isinstance(session, Mapping) else None
        if not isinstance(native_id, str) or not native_id.startswith("ses"):
            raise ServeError(0)
        return native_id

    async def providers(self) -> tuple[set[str], dict[str, str]]:
        """``GET /provider``: the ids of the providers that have credentials (``connected``)
        and, per known provider, the first environment variable its key is read from."""
        httpx = self.httpx
        try:
            response = await self.http.get("/provider")
            body = response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            raise ServeError(0) from None
        if not isinstance(body, Mapping):
            raise ServeError(0)
        connected = body.get("connected")
        ids = (
            {item for item in connected if isinstance(item, str)}
            if isinstance(connected, list)
            else set()
        )
        variables: dict[str, str] = {}
        for provider in body.get("all") or []:
            if not isinstance(provider, Mapping) or not isinstance(provider.get("id"), str):
                continue
            names = provider.get("env")
            first = names[0] if isinstance(names, list) and names else None
            # a variable's name, never a value; checked, not trusted
            if isinstance(first, str) and _ENV_NAME.fullmatch(first):
                variables[provider["id"]] = first
        return ids, variables

    async def answer(self, request_id: str, reply: str, message: str | None = None) -> None:
        """``POST /permission/{id}/reply``: ``once`` or ``reject`` (with a message the model
        gets as the call's result; the turn goes on)."""
        body = {"reply": reply, **({"message": message} if message else {})}
        await self._post(f"/permission/{request_id}/reply", body)

    async def events(self) -> AsyncIterator[Any]:
        """``GET /event``: each event's JSON value, until the stream ends."""
        httpx = self.httpx
        try:
            async with self.http.stream(
                "GET", "/event", timeout=httpx.Timeout(REQUEST_TIMEOUT, read=None)
            ) as response:
                if response.status_code != 200:
                    raise ServeError(response.status_code)
                chunks: list[str] = []
                async for line in response.aiter_lines():
                    if line.startswith("data:"):
                        chunks.append(line[5:].removeprefix(" "))
                    elif not line:
                        event, chunks = sse_data(chunks), []
                        if event is not None:
                            yield event
        except httpx.HTTPError:
            raise ServeError(0) from None
