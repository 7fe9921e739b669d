"""Observer hooks: exporters, metrics, audit. Observers see events; they cannot change them."""

from __future__ import annotations

from ..events import Event
from ..markers import hookspec


@hookspec
def on_event(event: Event) -> None:
    """Observe one event.

    Called by the controller for every event, in sequence order, after redaction and after the
    event was handed to the ledger. Synchronous and must be fast; do I/O elsewhere. Exceptions
    are caught and reported, never allowed to break the turn. Returns nothing.
    """
