"""One CLI turn through a running host: what the runtime adds per turn, without a process.

A :class:`Host` is what an application embedding harness_core has running: harness_core
imported, one ``Controller`` up (SQLite ledger, the plugins ``harness run`` loads for that
harness, on an anyio event loop in a thread of this process). :meth:`Host.turn` times
``open_session`` + ``run_turn`` + ``close_session`` of a fresh session with the config, model,
workspace, posture and sandbox ``harness run`` passes - so the same CLI invocation - from the
benchmark's (synchronous) thread, with the phases timestamped by :mod:`_trace_harness`'s hooks.
"""

from __future__ import annotations

import os
import time
from contextlib import ExitStack
from typing import Any

import _trace_harness

_TERMINAL = ("turn.completed", "turn.failed", "turn.cancelled")
_traced = False


class Host:
    """A running controller for ``harness`` (see the module docstring); :meth:`close` ends it."""

    def __init__(
        self,
        harness: str,
        *,
        config: dict[str, Any],
        model: str,
        prompt: str,
        workspace: str,
        ledger: str,
        env: dict[str, str],
    ) -> None:
        global _traced
        from anyio.from_thread import start_blocking_portal
        from harness_hookspecs import SandboxSpec

        from harness_core.controller import Controller
        from harness_core.plugin_cache import plugins_for

        if not _traced:  # the same hooks as a traced ``harness run`` (a few µs each)
            _trace_harness._install()
            _traced = True
        # The adapters read HARNESS_CLI_PATH/HARNESS_STATE_DIR from the host's environment.
        for key in ("HARNESS_CLI_PATH", "HARNESS_STATE_DIR"):
            os.environ[key] = env[key]
        if "HARNESS_CORE_PLUGINS" not in env:  # as for the harness run processes
            os.environ.pop("HARNESS_CORE_PLUGINS", None)
        self.harness, self.config, self.model, self.prompt = harness, config, model, prompt
        self.workspace = workspace
        # As ``harness run`` with no sandbox options: its argparse defaults.
        self.sandbox = SandboxSpec(provider=None, scope="run", network="open", allow=[], config={})
        self._stack = ExitStack()
        self._portal = self._stack.enter_context(start_blocking_portal())
        controller = Controller(plugins=plugins_for(harness, None, ledger), ledger=ledger)
        self.controller = self._stack.enter_context(
            self._portal.wrap_async_context_manager(controller)
        )

    def turn(self) -> tuple[float, dict[str, float]]:
        """One fresh session's turn: wall ms, and each phase's end in ms after the start."""
        _trace_harness._marks.clear()
        acp = self.harness.startswith("acp:")  # its terminal line is its session/prompt response
        _trace_harness.terminal_marker = _trace_harness.ACP_TERMINAL if acp else None
        start = time.time()
        result = self._portal.call(self._turn)
        if result.status != "completed":
            raise RuntimeError(f"host turn of {self.harness} ended {result.status}")
        wall = (time.time() - start) * 1000
        return wall, _trace_harness.phase_ends(_trace_harness._marks, start)

    async def _turn(self) -> Any:
        ref = await self.controller.open_session(
            harness=self.harness,
            config=self.config,
            workspace=self.workspace,
            model=self.model,
            posture="auto",
            sandbox=self.sandbox,
        )

        def on_event(event: Any) -> None:
            if event.type in _TERMINAL:
                _trace_harness.mark("terminal")

        result = await self.controller.run_turn(ref, self.prompt, on_event=on_event)
        await self.controller.close_session(ref)
        return result

    def close(self) -> None:
        """Exit the controller and stop the loop's thread. (After its first spawn this process
        is a child subreaper: the bare runs' orphaned CLI descendants, killed, stay zombies of
        this process until it exits - harmless for the figures.)"""
        self._stack.close()
