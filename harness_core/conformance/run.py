"""One conformance run: its state and its phases, in the order the kit drives them.

The first controller describes the harness, opens a session, runs two ordinary turns in it and
cancels a running turn in a second session; leaving it releases (not closes) the sessions. A new
controller then resumes the first session from its :class:`SessionRef`, runs a turn, closes a
session twice and exports the first one. What each phase saw is kept here for the checks.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import attrs
from attrs import define, field
from harness_hookspecs import (
    FEATURES,
    PROTOCOL_VERSION,
    TERMINAL_TYPES,
    ConformanceProfile,
    Event,
    HarnessDescriptor,
    HarnessError,
    LedgerStore,
    SessionRef,
)
from harness_hookspecs.bounds import is_name

from ..controller import Controller
from ..ledger import open_ledger, path_of
from ..plugin_manager import Plugins
from ..serialize import descriptor_to_dict, event_to_dict
from .probe import CANARY_CREDENTIAL_VAR, Probe
from .process_resume import ProcessResume
from .rules import clip

#: How long a cancel may take to reach the caller.
CANCEL_WAIT = 10.0


@define
class KitTurn:
    label: str
    session_id: str
    turn_id: str | None = None
    seen: list[Event] = field(factory=list)
    error: str | None = None

    @property
    def terminal(self) -> Event | None:
        return next((e for e in reversed(self.seen) if e.type in TERMINAL_TYPES), None)

    async def collect(self, running: Any, done: anyio.Event) -> None:
        """Keep ``running``'s events in :attr:`seen` as they come; ``done`` is set at its end."""
        try:
            async for event in running:
                self.seen.append(event)
        finally:
            done.set()


@define
class Run:
    name: str
    plugins: Plugins
    profile: ConformanceProfile
    workspace: str
    root: Path
    ledger: str | LedgerStore
    timeout: float
    factory: Callable[..., Controller]
    probe: Probe
    env_secret: str
    descriptor: HarnessDescriptor | None = None
    descriptor_error: str | None = None
    descriptor_problems: list[str] = field(factory=list)
    main: SessionRef | None = None
    open_error: str | None = None
    ordinary: list[KitTurn] = field(factory=list)
    cancel_turn: KitTurn | None = None
    cancel_notes: list[str] = field(factory=list)
    cancel_problems: list[str] = field(factory=list)
    cancel_not_run: str | None = None
    resume_problems: list[str] = field(factory=list)
    resume_note: str = ""
    resume_not_run: str | None = None
    process_resume: ProcessResume | None = None
    close_problems: list[str] = field(factory=list)
    close_note: str = ""
    close_not_run: str | None = None
    closed_session: SessionRef | None = None
    export_bundle: dict[str, Any] | None = None
    export_error: str | None = None
    export_session: str | None = None
    ledger_files_open: dict[str, bytes] = field(factory=dict)
    credential_injected: bool = False
    #: what the approvals phase saw (:mod:`.approvals_phase`)
    approvals: Any = None
    #: what the steer, fork and rewind phase saw (:mod:`.branching_phase`)
    branching: Any = None

    def controller(self) -> Controller:
        return self.factory(
            plugins=self.plugins,
            ledger=self.ledger,
            state_dir=self.root / "state",
            turn_timeout=self.profile.turn_timeout or self.timeout,
        )

    @property
    def events(self) -> list[Event]:
        """Every event the controllers emitted, session by session."""
        return [e for events in self.probe.events.values() for e in events]

    @property
    def turns(self) -> list[KitTurn]:
        """Every turn the kit ran and consumed: the ordinary ones, then the cancelled one."""
        return [*self.ordinary, *([self.cancel_turn] if self.cancel_turn else [])]

    @property
    def features(self) -> frozenset[str]:
        return self.descriptor.features if self.descriptor is not None else frozenset()

    def session_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"workspace": self.workspace, "config": self.profile.config}
        if self.profile.model is not None:
            kwargs["model"] = self.profile.model
        return kwargs

    async def open(self, controller: Controller) -> SessionRef:
        with anyio.fail_after(self.timeout):
            ref = await controller.open_session(
                harness=self.name, target=self.profile.target, **self.session_kwargs()
            )
        self._note_credential()
        return ref

    def _note_credential(self) -> None:
        for context in self.probe.contexts:
            with contextlib.suppress(Exception):
                if context.env.get(CANARY_CREDENTIAL_VAR) == self.probe.secret:
                    self.credential_injected = True

    async def ordinary_turn(self, controller: Controller, ref: SessionRef, label: str) -> KitTurn:
        turn = KitTurn(label=label, session_id=ref.session_id)
        self.ordinary.append(turn)
        try:
            async with controller.turn(ref, self.profile.prompt) as running:
                turn.turn_id = running.turn_id
                async for event in running:
                    turn.seen.append(event)
        except HarnessError as error:
            turn.error = error.reason
        return turn

    # -- phases ---------------------------------------------------------------------------

    async def describe(self, controller: Controller) -> None:
        try:
            first = controller.describe(self.name)
            second = controller.describe(self.name)
        except HarnessError as error:
            self.descriptor_error = f"describe failed: {error.reason}"
            return
        except Exception as error:
            self.descriptor_error = f"describe raised {type(error).__name__}"
            return
        if type(first) is not HarnessDescriptor:
            self.descriptor_error = f"describe returned a {type(first).__name__}"
            return
        problems = self.descriptor_problems
        try:
            attrs.validate(first)
        except (TypeError, ValueError) as error:
            problems.append(clip(str(error)))
        if first.harness != self.name:
            problems.append(f"provider {first.harness!r} is not the registered name {self.name!r}")
        if not is_name(first.harness):
            problems.append("provider is not a valid name")
        if first.protocol_version != PROTOCOL_VERSION:
            problems.append(
                f"protocol_version {first.protocol_version!r}, this runtime speaks {PROTOCOL_VERSION}"
            )
        unknown = sorted(set(first.features) - set(FEATURES))
        if unknown:
            problems.append(f"unknown features {unknown}")
        if self.profile.target not in first.targets:
            problems.append(f"no {self.profile.target} target (the kit drives that target)")
        if second != first:
            problems.append("describe() is not stable between calls")
        self.probe.features = frozenset(first.features)
        try:
            json.dumps(descriptor_to_dict(first), allow_nan=False)
        except Exception as error:
            problems.append(f"the descriptor does not serialize ({type(error).__name__})")
        self.descriptor = first

    async def first_controller(self) -> None:
        async with self.controller() as controller:
            await self.describe(controller)
            if self.descriptor is None:
                return
            try:
                self.main = await self.open(controller)
            except HarnessError as error:
                self.open_error = f"open failed: {error.reason}"
                return
            except TimeoutError:
                self.open_error = f"open did not finish within {self.timeout:g}s"
                return
            await self.ordinary_turn(controller, self.main, "turn 1")
            await self.ordinary_turn(controller, self.main, "turn 2")
            await self.cancel_phase(controller)
        # Leaving the controller releases (not closes) the sessions: resume comes next.

    async def cancel_phase(self, controller: Controller) -> None:
        try:
            ref = await self.open(controller)
        except (HarnessError, TimeoutError) as error:
            self.cancel_not_run = f"the cancel session did not open ({reason_of(error)})"
            return
        declared = "cancel" in self.features
        slow = self.profile.slow_prompt if declared else None
        prompt = slow or self.profile.prompt
        turn = KitTurn(label="cancelled turn", session_id=ref.session_id)
        self.cancel_turn = turn
        done = anyio.Event()

        self.probe.hold_next_turn = declared and slow is None
        try:
            async with controller.turn(ref, prompt) as running:
                turn.turn_id = running.turn_id
                probe_turn = self.probe.turns.get(running.turn_id)
                if not declared:
                    await self._refused_cancel(controller, ref, running.turn_id)
                    async for event in running:
                        turn.seen.append(event)
                    return
                async with anyio.create_task_group() as tg:
                    tg.start_soon(turn.collect, running, done)
                    await self.wait_running(done, probe_turn)
                    await anyio.sleep(self.profile.cancel_after)
                    if done.is_set():
                        ended = turn.terminal.type if turn.terminal else "without a terminal"
                        self.cancel_problems.append(
                            f"the turn ended ({ended}) before it could be cancelled; give the "
                            "conformance profile a slow_prompt that keeps a turn running"
                        )
                        return
                    self.cancel_notes.append(
                        "held by the kit after the adapter's first event"
                        if slow is None
                        else "slow prompt running"
                    )
                    try:
                        await controller.cancel_turn(ref, "turn_not_the_active_one")
                        self.cancel_problems.append("cancel with a wrong turn id did not raise")
                    except HarnessError as error:
                        if error.reason != "turn-not-found":
                            self.cancel_problems.append(
                                f"cancel with a wrong turn id raised {error.reason}"
                            )
                    if done.is_set():
                        self.cancel_problems.append("a cancel with a wrong turn id ended the turn")
                        return
                    with anyio.move_on_after(CANCEL_WAIT) as scope:
                        await controller.cancel_turn(ref, running.turn_id)
                        await done.wait()
                    if scope.cancelled_caught:
                        self.cancel_problems.append(
                            f"the cancel did not reach the caller within {CANCEL_WAIT:g}s"
                        )
                        tg.cancel_scope.cancel()
        except HarnessError as error:
            self.cancel_problems.append(f"the turn did not start ({error.reason})")

    async def wait_running(self, done: anyio.Event, probe_turn: Any) -> None:
        """Wait (at most a turn's deadline) until the turn's adapter is running (the probe saw
        it enter) or the turn is over (``done``)."""
        with anyio.move_on_after(self.profile.turn_timeout or self.timeout):
            while not done.is_set() and not (
                probe_turn is not None and probe_turn.entered.is_set()
            ):
                await anyio.sleep(0.01)

    async def _refused_cancel(self, controller: Controller, ref: SessionRef, turn_id: str) -> None:
        try:
            await controller.cancel_turn(ref, turn_id)
        except HarnessError as error:
            if error.reason == "unsupported-feature":
                self.cancel_notes.append("not claimed: cancel raised unsupported-feature")
            else:
                self.cancel_problems.append(
                    f"not claimed, but cancel raised {error.reason} instead of unsupported-feature"
                )
            return
        self.cancel_problems.append("not claimed, but cancel did not raise unsupported-feature")

    async def second_controller(self) -> None:
        async with self.controller() as controller:
            target: SessionRef | None = None
            if self.main is None:
                reason = self.open_error or self.descriptor_error or "no session was opened"
                self.resume_not_run = reason
                self.close_not_run = reason
                return
            if "resume" in self.features:
                target = await self.resume_phase(controller, self.main)
            else:
                try:
                    with anyio.fail_after(self.timeout):
                        await controller.resume_session(self.main, **self.session_kwargs())
                    self.resume_problems.append(
                        "resume is not claimed, but resuming did not raise unsupported-feature"
                    )
                except HarnessError as error:
                    if error.reason == "unsupported-feature":
                        self.resume_note = "not claimed: resume raised unsupported-feature"
                    else:
                        self.resume_problems.append(
                            f"resume is not claimed; it raised {error.reason}, "
                            "not unsupported-feature"
                        )
                except TimeoutError:
                    self.resume_problems.append("resume did not answer")
            if target is None:
                try:
                    target = await self.open(controller)
                    self.close_note = "(on a new session)"
                except (HarnessError, TimeoutError) as error:
                    self.close_not_run = f"no session to close ({reason_of(error)})"
            if target is not None:
                await self.close_phase(controller, target)
            self.export_session = self.main.session_id
            try:
                self.export_bundle = controller.export(self.main.session_id)
            except HarnessError as error:
                self.export_error = f"export failed: {error.reason}"
            except Exception as error:
                self.export_error = f"export raised {type(error).__name__}"
            self.ledger_files_open = self.ledger_bytes()

    async def resume_phase(self, controller: Controller, ref: SessionRef) -> SessionRef | None:
        before = len(self.probe.events.get(ref.session_id, []))
        try:
            with anyio.fail_after(self.timeout):
                resumed = await controller.resume_session(ref, **self.session_kwargs())
        except HarnessError as error:
            self.resume_problems.append(f"resume raised {error.reason}")
            return None
        except TimeoutError:
            self.resume_problems.append(f"resume did not finish within {self.timeout:g}s")
            return None
        self._note_credential()
        if resumed != ref:
            self.resume_problems.append("resume returned a different SessionRef")
        after = self.probe.events.get(ref.session_id, [])[before:]
        if [e.type for e in after] != ["session.resumed"]:
            self.resume_problems.append("resume did not emit exactly one session.resumed")
        turn = await self.ordinary_turn(controller, ref, "turn after resume")
        if turn.terminal is None:
            self.resume_problems.append(
                f"the turn after resume did not end ({turn.error or 'no terminal event'})"
            )
        else:
            self.resume_note = f"resumed in a new controller; next turn {turn.terminal.type}"
        return ref

    async def close_phase(self, controller: Controller, ref: SessionRef) -> None:
        self.closed_session = ref
        problems = self.close_problems
        for attempt in ("first", "second"):
            try:
                with anyio.fail_after(self.timeout):
                    await controller.close_session(ref)
            except HarnessError as error:
                problems.append(f"the {attempt} close raised {error.reason}")
            except TimeoutError:
                problems.append(f"the {attempt} close did not finish within {self.timeout:g}s")
        closed = [
            e for e in self.probe.events.get(ref.session_id, []) if e.type == "session.closed"
        ]
        if len(closed) != 1:
            problems.append(f"{len(closed)} session.closed events after two closes")
        try:
            async with controller.turn(ref, self.profile.prompt) as running:
                async for _ in running:
                    pass
            problems.append("a turn on the closed session was accepted")
        except HarnessError as error:
            if error.reason != "session-closed":
                problems.append(f"a turn on the closed session raised {error.reason}")
        try:
            await controller.resume_session(ref, **self.session_kwargs())
            problems.append("resuming the closed session was accepted")
        except HarnessError as error:
            if error.reason != "session-closed":
                problems.append(f"resuming the closed session raised {error.reason}")
        record = controller.ledger.get_session(ref.session_id)
        if record is None or record.status != "closed":
            problems.append("the ledger does not record the session as closed")

    # -- reading back ---------------------------------------------------------------------

    def sqlite_path(self) -> str | None:
        if isinstance(self.ledger, str) and self.ledger.startswith("sqlite:"):
            return path_of(self.ledger, "sqlite")
        return None

    def ledger_bytes(self) -> dict[str, bytes]:
        path = self.sqlite_path()
        if path is None:
            return {}
        found: dict[str, bytes] = {}
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(OSError):
                found[path + suffix] = Path(path + suffix).read_bytes()
        return found

    def read_back(self) -> tuple[dict[str, list[dict[str, Any]]], str | None]:
        """Each session's events as the reopened ledger holds them, and why it could not."""
        stored: dict[str, list[dict[str, Any]]] = {}
        try:
            with self.reopened() as store:
                for session_id in self.probe.events:
                    stored[session_id] = [event_to_dict(e) for e in store.events(session_id)]
        except HarnessError as error:
            return stored, f"the ledger could not be read back ({error.reason})"
        return stored, None

    @contextlib.contextmanager
    def reopened(self) -> Iterator[LedgerStore]:
        if isinstance(self.ledger, str):
            store = open_ledger(self.ledger, schemes=self.plugins.ledger_schemes)
            try:
                yield store
            finally:
                store.close()
        else:
            yield self.ledger


def reason_of(error: BaseException) -> str:
    if isinstance(error, HarnessError):
        return error.reason
    if isinstance(error, TimeoutError):
        return "timed out"
    return type(error).__name__
