"""Model steps and thinking as a CLI's stream reports them: one place that turns "a model call
began / ended" into ``model.requested`` / ``model.completed`` (timed on a monotonic clock) and a
block of reasoning into ``thinking.delta`` / ``thinking.completed``."""

from __future__ import annotations

import time
from collections.abc import Callable

from harness_hookspecs import (
    ModelCompleted,
    ModelRequested,
    Payload,
    ThinkingCompleted,
    ThinkingDelta,
    Usage,
)
from harness_hookspecs.bounds import TEXT_MAX

_MODEL_MAX = 256


def _model(name: object) -> str | None:
    if isinstance(name, str) and 0 < len(name) <= _MODEL_MAX and name.isprintable():
        return name
    return None


class ModelSteps:
    """The open model call of a turn, if any: :meth:`requested` opens one (closing an open one
    first), :meth:`completed` closes it with its usage and duration."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._started: float | None = None
        self._model: str | None = None
        #: model calls completed so far
        self.count = 0

    @property
    def open(self) -> bool:
        return self._started is not None

    def requested(self, model: object = None) -> list[Payload]:
        """A model call began (``model``: the CLI's name for the model, if it said)."""
        out = self.completed() if self.open else []
        self._started = self._clock()
        self._model = _model(model)
        out.append(ModelRequested(model=self._model))
        return out

    def completed(self, usage: Usage | None = None, model: object = None) -> list[Payload]:
        """The open model call ended with ``usage`` (its own counts); ``[]`` when none is open."""
        if self._started is None:
            return []
        elapsed = max(0, int((self._clock() - self._started) * 1000))
        name = _model(model) or self._model
        self._started, self._model = None, None
        self.count += 1
        return [ModelCompleted(model=name, usage=usage, duration_ms=elapsed)]


class Thinking:
    """Streamed reasoning of one block at a time: deltas pass through, :meth:`completed` says
    the block is whole (from its own text when the CLI gives it, else from the deltas)."""

    def __init__(self) -> None:
        self._parts: list[str] = []

    def delta(self, text: object) -> list[Payload]:
        if not isinstance(text, str) or not text:
            return []
        text = text[:TEXT_MAX]
        self._parts.append(text)
        return [ThinkingDelta(text=text)]

    def completed(self, text: object = None) -> list[Payload]:
        """The block ended (``text``: its whole text, when the CLI reports it); ``[]`` when
        there was no reasoning."""
        whole = text if isinstance(text, str) and text else "".join(self._parts)
        self._parts = []
        if not whole:
            return []
        return [ThinkingCompleted(text=whole[:TEXT_MAX])]

    @property
    def streaming(self) -> bool:
        """Deltas of a block not yet completed have been seen."""
        return bool(self._parts)
