"""The built-in conformance checks, one module each, listed here in report order.

Like pytest's built-in plugins: each module holds one check's name, what it establishes and its
judging code; :data:`ALL` is the order the report shows them in.
"""

from __future__ import annotations

from ..check import Check
from .approvals import approvals
from .canary import canary
from .cancel import cancel
from .canonical_types import canonical_types
from .close import close
from .descriptor import descriptor
from .envelope import envelope
from .event_ids import event_ids
from .export import export
from .field_bounds import field_bounds
from .fork import fork
from .ledger_round_trip import ledger_round_trip
from .one_terminal import one_terminal
from .raw_fields import raw_fields
from .resume import resume
from .resume_process import resume_process
from .rewind import rewind
from .sequence import sequence
from .steer import steer
from .turns_completed import turns_completed
from .usage import usage

ALL: tuple[Check, ...] = (
    descriptor,
    turns_completed,
    envelope,
    sequence,
    event_ids,
    one_terminal,
    canonical_types,
    field_bounds,
    raw_fields,
    resume,
    resume_process,
    cancel,
    close,
    usage,
    approvals,
    steer,
    fork,
    rewind,
    ledger_round_trip,
    export,
    canary,
)

__all__ = ["ALL"]
