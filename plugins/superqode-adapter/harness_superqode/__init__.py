"""harness_core harnesses as SuperQode Harness Protocol v1 adapters (superqode 2.25).

:class:`HarnessplaneAdapter` is a v1 ``HarnessAdapter`` (``descriptor``, ``create``, ``send``,
``resume``, ``steer``, ``cancel``, ``checkpoint``) over any harness of ours: superqode's
``HarnessProtocolController`` drives it and keeps its own ledger, and this project's ledger
records the same session as any host's (``harness sessions`` lists it, ``harness replay`` plays
it). The installed ``superqode.harnesses`` entry points (``harnessplane-echo``,
``harnessplane-claude-code``, ``harnessplane-codex``, ``harnessplane-opencode``,
``harnessplane-pi``) are such adapters with the default ledger and state directory
(``$HARNESS_LEDGER``, ``$HARNESS_STATE_DIR``).

Capabilities are claimed from the harness's declared features: ``resume``, ``steer``,
``cancel``, ``usage``, ``approvals`` (``permissions``) and ``tools`` where it declares them;
``checkpoint`` always (every session's workspace is snapshotted by the runtime); never
``native_export``. v1 events carry our event ids, and each turn's events map through
:func:`harness_core.superqode_bundle.v1_event` (the same mapping ``harness export --format
superqode`` writes).

Each operation runs in its own :class:`harness_core.Controller` on the same ledger and state
directory (a session lives in the ledger, not in a process): ``send`` resumes the session and
runs one turn. superqode is asyncio-only and may abandon ``send``'s iterator mid-turn, so the
turn runs in a task of its own and ``send`` only reads its events from a queue (no cancel scope
is held across a ``yield``); an abandoned ``send`` cancels the turn.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from harness_hookspecs import Event, HarnessError, SessionRef

from harness_core import Controller
from harness_core.plugins import get_plugins
from harness_core.superqode_bundle import v1_event

__all__ = ["HarnessplaneAdapter"]

#: the v1 capability each of our features stands for
_CAPABILITIES = {
    "resume": "resume",
    "steer": "steer",
    "cancel": "cancel",
    "usage": "usage",
    "permissions": "approvals",
    "tools": "tools",
}
_END = object()


def _is_uuid(value: str | None) -> bool:
    try:
        return value is not None and str(uuid.UUID(value)) == value
    except ValueError:
        return False


class HarnessplaneAdapter:
    """Harness ``harness`` of ours as a Harness Protocol v1 adapter.

    ``adapter_id``: the v1 descriptor id (default ``harnessplane-<harness>``); ``model``,
    ``config``, ``workspace``: the session's (``model`` and ``workspace`` default to the v1
    create request's); ``controller_options``: the :class:`~harness_core.Controller`'s
    (``plugins``, ``ledger``, ``state_dir``, ``permission_handler``...)."""

    def __init__(
        self,
        harness: str,
        *,
        adapter_id: str | None = None,
        model: str | None = None,
        config: Mapping[str, Any] | None = None,
        workspace: str | Path | None = None,
        **controller_options: Any,
    ) -> None:
        from superqode.harness.protocol import HarnessCapabilities, HarnessDescriptor

        self.harness = harness
        self.model = model
        self.config = dict(config or {})
        self.workspace = None if workspace is None else str(workspace)
        self.controller_options = controller_options
        plugins = controller_options.get("plugins") or get_plugins()
        ours = plugins.describe(harness)
        if ours is None:
            raise HarnessError("invalid-request", f"unknown harness {harness!r}"[:240])
        claimed = {v1: feature in ours.features for feature, v1 in _CAPABILITIES.items()}
        self.descriptor = HarnessDescriptor(
            id=adapter_id or f"harnessplane-{harness}",
            name=f"{harness} (harnessplane)",
            description=f"harness_core harness {harness!r} through Harness Protocol v1",
            capabilities=HarnessCapabilities(
                streaming=True, checkpoint=True, native_export=False, **claimed
            ),
            metadata={"harness": harness, "runtime": "harnessplane"},
        )
        #: the controller running each session's turn now (steer and cancel reach it)
        self._running: dict[str, tuple[Controller, SessionRef]] = {}

    def _controller(self) -> Controller:
        return Controller(**self.controller_options)

    def _ref(self, session: Any, record: Any) -> Any:
        from superqode.harness.protocol import HarnessSessionRef

        return HarnessSessionRef(
            session_id=record.session_id,
            harness_id=self.descriptor.id,
            external_session_id=record.vendor_session_id,
            metadata={**dict(getattr(session, "metadata", {}) or {}), "harness": self.harness},
        )

    async def create(self, request: Any) -> Any:
        """A new session id (the request's when it is a UUID) and what opening it takes: the
        session is opened in our ledger by its first ``send`` (or ``checkpoint``), in the
        controller that runs it - a CLI has nothing to resume before its first turn."""
        from superqode.harness.protocol import HarnessSessionRef

        session_id = request.session_id if _is_uuid(request.session_id) else str(uuid.uuid4())
        return HarnessSessionRef(
            session_id=session_id,
            harness_id=self.descriptor.id,
            metadata={
                **dict(request.metadata),
                "harness": self.harness,
                "workspace": self.workspace or str(request.working_directory),
                "model": self.model or request.model or None,
            },
        )

    async def resume(self, session: Any) -> Any:
        """The session as the ledger has it now (a created one not opened yet as it is;
        ``session-not-found`` for any other id); its harness is reattached by the next
        ``send``."""
        async with self._controller() as controller:
            record = controller.ledger.get_session(session.session_id)
        if record is None:
            if session.metadata.get("harness") == self.harness:
                return session
            raise HarnessError("session-not-found")
        return self._ref(session, record)

    async def _attach(self, controller: Controller, session: Any) -> SessionRef:
        """The session live in ``controller``: opened on first use, resumed after."""
        if controller.ledger.get_session(session.session_id) is not None:
            return await controller.resume_session(session.session_id)
        return await controller.open_session(
            harness=self.harness,
            workspace=str(session.metadata.get("workspace") or self.workspace or "."),
            model=session.metadata.get("model") or None,
            config=self.config,
            session_id=session.session_id,
        )

    async def send(self, session: Any, message: Any) -> AsyncIterator[Any]:
        """One turn: its events as v1 events (our ids), ending with its terminal; an
        assistant ``message.created`` before a ``run.completed`` always (v1 requires one)."""
        queue: asyncio.Queue[Any] = asyncio.Queue()
        task = asyncio.ensure_future(self._turn(session, message.content, queue))
        try:
            while (item := await queue.get()) is not _END:
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            if not task.done():
                await self._cancel_running(session.session_id)
                await asyncio.wait({task}, timeout=30)
                task.cancel()

    async def _turn(self, session: Any, prompt: str, queue: asyncio.Queue[Any]) -> None:
        session_id = session.session_id
        try:
            async with self._controller() as controller:
                ref = await self._attach(controller, session)
                self._running[session_id] = (controller, ref)
                try:
                    async with controller.turn(ref, prompt) as turn:
                        await _forward(turn, queue)
                finally:
                    self._running.pop(session_id, None)
        except BaseException as error:  # to the reader, in its task
            queue.put_nowait(error)
            if not isinstance(error, Exception):
                raise
        finally:
            queue.put_nowait(_END)

    async def steer(self, session: Any, message: Any) -> None:
        from superqode.harness.protocol import require_capability

        require_capability(self.descriptor, "steer")
        controller, ref = self._live(session.session_id)
        await controller.steer(ref, message.content)

    async def cancel(self, session: Any) -> None:
        from superqode.harness.protocol import require_capability

        require_capability(self.descriptor, "cancel")
        self._live(session.session_id)
        await self._cancel_running(session.session_id)

    async def _cancel_running(self, session_id: str) -> None:
        running = self._running.get(session_id)
        if running is not None:
            controller, ref = running
            try:
                await controller.cancel_turn(ref)
            except HarnessError as error:
                if error.reason != "turn-not-found":  # it ended meanwhile
                    raise

    def is_running(self, session_id: str) -> bool:
        """Whether a turn of ``session_id`` runs in this adapter now (steer and cancel reach
        it)."""
        return session_id in self._running

    def _live(self, session_id: str) -> tuple[Controller, SessionRef]:
        running = self._running.get(session_id)
        if running is None:
            raise HarnessError("turn-not-found")
        return running

    async def checkpoint(self, session: Any) -> Any:
        """Snapshot the session's workspace (``checkpoint.created`` in our ledger too)."""
        from superqode.harness.protocol import HarnessCheckpoint

        async with self._controller() as controller:
            ref = await self._attach(controller, session)
            checkpoint_id = await controller.checkpoint(ref)
        return HarnessCheckpoint(
            session_id=session.session_id,
            harness_id=self.descriptor.id,
            external_checkpoint_id=checkpoint_id,
            state={"checkpoint_id": checkpoint_id, "harness": self.harness},
        )


async def _forward(turn: Any, queue: asyncio.Queue[Any]) -> None:
    """The turn's events as v1 ``HarnessEvent`` objects onto ``queue`` (its start is the v1
    controller's own ``run.started``)."""
    from superqode.harness.events import HarnessEvent

    answered = False
    deltas: list[str] = []
    async for event in turn:
        if event.turn_id is None or event.type == "turn.started":
            continue
        kind, data = v1_event(event)
        if kind == "message.delta":
            deltas.append(str(data.get("text") or ""))
        elif kind == "message.created" and data.get("role") == "assistant":
            answered = True
        elif kind == "run.completed" and not answered:
            text = str(data["text"]) if data.get("text") is not None else "".join(deltas)
            queue.put_nowait(_assistant(HarnessEvent, event, text))
        queue.put_nowait(HarnessEvent(type=kind, data=data, event_id=event.event_id))


def _assistant(event_class: Any, terminal: Event, text: str) -> Any:
    message_id = f"{terminal.event_id}.assistant"
    return event_class(
        type="message.created",
        data={"role": "assistant", "content": text, "text": text, "message_id": message_id},
        event_id=message_id,
    )
