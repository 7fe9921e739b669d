"""The HTTP server: routes, request recording, step matching, and replies in each wire format."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from aiohttp import web

from .anthropic import anthropic_message, anthropic_stream
from .chat import chat_stream, chat_tool_calls, chat_usage
from .mcp import resolve_mcp_calls
from .recording import RecordedRequest, analyse, redact_headers
from .responses import response_object, responses_items, responses_stream, responses_usage
from .script import ENDPOINTS, ScriptItem, Step, load_script
from .wire import Dropped, Emitter, error_body, estimate_usage, new_id


@contextlib.contextmanager
def fixed_port_lock(port: int, timeout: float = 900.0) -> Iterator[None]:
    """Hold ``port`` for this process among every process on the machine that asks the same.

    A fixed port (an agent whose endpoint cannot be configured, e.g. Cline's LM Studio at 1234)
    is one resource however many test workers run: whoever needs it - a server listening there,
    or a test that needs nothing listening there - holds this lock meanwhile; the others wait
    (up to ``timeout`` seconds, then ``TimeoutError``). Nothing else checks it.
    """
    path = os.path.join(tempfile.gettempdir(), f"harness-fake-model-port-{port}.lock")
    with open(path, "a") as handle:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"port {port} stayed held by another process") from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class FakeModelServer:
    """Scripted model server on 127.0.0.1, on its own event loop in a background thread."""

    def __init__(
        self,
        script: Iterable[ScriptItem] | Mapping[str, Any] | str | Path = (),
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        default_text: str | None = None,
        models: Sequence[str] = ("fake-model", "claude-sonnet-4-5", "gpt-5"),
        record_file: str | Path | None = None,
    ) -> None:
        self.host, self.port = host, port
        self.models = list(models)
        self._record_file = Path(record_file) if record_file else None
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._new_request = threading.Condition(self._lock)
        self.set_script(script, default_text=default_text)

    # -- script ------------------------------------------------------------------------------
    def set_script(
        self,
        script: Iterable[ScriptItem] | Mapping[str, Any] | str | Path,
        *,
        default_text: str | None = None,
    ) -> None:
        """Replace the script (e.g. between turns of a test)."""
        src = script if isinstance(script, (str, Path, Mapping)) else list(script)
        steps, dflt = load_script(src)
        with self._lock:
            self._steps = steps
            self._remaining = [
                s.times if isinstance(s, Step) else getattr(s, "times", 1) for s in steps
            ]
            self._cursor = 0
            self.default_text = default_text if default_text is not None else dflt

    @property
    def steps_remaining(self) -> int:
        with self._lock:
            return len(self._steps) - self._cursor

    # -- lifecycle -----------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.base_url}/v1"

    def start(self) -> FakeModelServer:
        if self._thread is not None:
            return self
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._start_site())
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
                # Handlers still sleeping on a scripted delay: cancel and await them so the
                # loop closes without "Task was destroyed but it is pending" noise.
                pending = asyncio.all_tasks(loop)
                for task in pending:
                    task.cancel()
                if pending:
                    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name="fake-model-server", daemon=True)
        self._thread.start()
        ready.wait(30)
        if failure:
            self._thread = None
            raise failure[0]
        return self

    async def _start_site(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(
            app, access_log=None, handle_signals=False, shutdown_timeout=0.5
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        server = getattr(site, "_server", None)
        if server is not None and server.sockets:
            self.port = server.sockets[0].getsockname()[1]

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if self._runner is not None:
            fut = asyncio.run_coroutine_threadsafe(self._runner.cleanup(), loop)
            with contextlib.suppress(Exception):
                fut.result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        self._thread = self._loop = self._runner = None

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- recording -----------------------------------------------------------------------------
    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far (a copy)."""
        with self._lock:
            return list(self._requests)

    def model_requests(self, endpoint: str | None = None) -> list[RecordedRequest]:
        """Recorded model calls (messages/responses/chat), optionally of one endpoint."""
        return [
            r
            for r in self.requests
            if r.endpoint in ENDPOINTS and (endpoint is None or r.endpoint == endpoint)
        ]

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> list[RecordedRequest]:
        """Block until at least ``count`` requests were recorded (or raise TimeoutError)."""
        deadline = time.monotonic() + timeout
        with self._new_request:
            while len(self._requests) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"{len(self._requests)} of {count} requests after {timeout}s"
                    )
                self._new_request.wait(left)
            return list(self._requests)

    def _record(self, rec: RecordedRequest) -> None:
        with self._new_request:
            self._requests.append(rec)
            self._new_request.notify_all()
        if self._record_file is not None:
            with self._record_file.open("a") as f:
                f.write(json.dumps(rec.to_dict()) + "\n")

    # -- dispatch ------------------------------------------------------------------------------
    def _next_step(self, rec: RecordedRequest) -> tuple[int | None, Step | None]:
        with self._lock:
            while self._cursor < len(self._steps):
                idx = self._cursor
                item = self._steps[idx]
                if isinstance(item, Step):
                    if not item.match.accepts(rec):
                        return None, None
                    step: Step | None = item
                else:
                    step = item(rec)
                    if step is None:
                        return None, None
                    if isinstance(step, Mapping):
                        step = Step.from_dict(step)
                left = self._remaining[idx]
                if left is not None:
                    left -= 1
                    self._remaining[idx] = left
                    if left <= 0:
                        self._cursor += 1
                return idx, step
            return None, None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        route = path[3:] if path.startswith("/v1/") else path
        body: Any = None
        raw = await request.read()
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
        endpoint = {
            "/messages": "messages",
            "/responses": "responses",
            "/chat/completions": "chat",
            "/messages/count_tokens": "count_tokens",
        }.get(route.rstrip("/"))
        if request.method == "GET" and route.rstrip("/") == "/models":
            endpoint = "models"
        rec = RecordedRequest(
            method=request.method,
            path=path,
            headers=redact_headers(request.headers),
            body=body,
            time=time.time(),
            endpoint=endpoint,
        )
        if endpoint in ENDPOINTS:
            rec.model, rec.tool_names, rec.last_user_text, rec.has_tool_result = analyse(
                endpoint, body
            )
            rec.stream = bool(isinstance(body, dict) and body.get("stream"))
        if endpoint in ENDPOINTS and request.method != "POST":
            endpoint = None
        if endpoint in ENDPOINTS:
            idx, step = self._next_step(rec)
            rec.step_index = idx
        self._record(rec)

        if endpoint == "models":
            return web.json_response(self._models_body())
        if endpoint == "count_tokens":
            n = max(1, len(raw) // 4)
            return web.json_response({"input_tokens": n})
        if endpoint not in ENDPOINTS:
            rec.status = 404
            return web.json_response(
                {
                    "type": "error",
                    "error": {
                        "type": "not_found_error",
                        "message": f"fake model server: no route {request.method} {path}",
                    },
                },
                status=404,
            )
        if step is None:
            step = Step(text=self.default_text)
        return await self._reply(request, rec, step, body if isinstance(body, dict) else {})

    def _models_body(self) -> dict[str, Any]:
        data = [
            {
                "id": m,
                "object": "model",
                "type": "model",
                "created": 1700000000,
                "created_at": "2025-01-01T00:00:00Z",
                "owned_by": "fake",
                "display_name": m,
            }
            for m in self.models
        ]
        return {
            "object": "list",
            "data": data,
            "has_more": False,
            "first_id": self.models[0] if self.models else None,
            "last_id": self.models[-1] if self.models else None,
            "models": data,
        }

    async def _reply(
        self, request: web.Request, rec: RecordedRequest, step: Step, body: dict[str, Any]
    ) -> web.StreamResponse:
        step = resolve_mcp_calls(step, rec)
        if step.delay:
            await asyncio.sleep(step.delay)
        endpoint = rec.endpoint
        if step.error is not None:
            rec.status = step.error.status
            headers = {}
            if step.error.retry_after is not None:
                headers["retry-after"] = str(step.error.retry_after)
            return web.json_response(
                error_body(endpoint, step.error), status=step.error.status, headers=headers
            )
        if step.drop and not rec.stream:
            if request.transport is not None:
                request.transport.abort()
            raise ConnectionResetError("fake model server: scripted drop")
        model = rec.model or "fake-model"
        usage = estimate_usage(step, body)
        custom_tools = {
            str(t.get("name"))
            for t in body.get("tools") or []
            if isinstance(t, dict) and t.get("type") == "custom"
        }
        headers = {"request-id": new_id("req_"), "x-request-id": new_id("req_")}
        if not rec.stream:
            if endpoint == "messages":
                payload = anthropic_message(step, model, usage)
            elif endpoint == "responses":
                items = responses_items(step, custom_tools)
                payload = response_object(
                    new_id("resp_"), model, "completed", items, responses_usage(usage)
                )
                payload["output_text"] = step.text or ""
            else:
                message: dict[str, Any] = {"role": "assistant", "content": step.text}
                if step.tool_calls:
                    message["tool_calls"] = chat_tool_calls(step)
                payload = {
                    "id": new_id("chatcmpl-"),
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": message,
                            "finish_reason": "tool_calls" if step.tool_calls else "stop",
                        }
                    ],
                    "usage": chat_usage(usage),
                }
            return web.json_response(payload, headers=headers)

        resp = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                **headers,
            }
        )
        await resp.prepare(request)
        em = Emitter(resp, request, step.drop)
        try:
            if endpoint == "messages":
                await anthropic_stream(em, step, model, usage)
            elif endpoint == "responses":
                await responses_stream(em, step, model, usage, custom_tools)
            else:
                opts = body.get("stream_options") or {}
                await chat_stream(
                    em, step, model, usage, include_usage=opts.get("include_usage", True)
                )
        except (Dropped, ConnectionResetError):
            return resp
        await resp.write_eof()
        return resp
