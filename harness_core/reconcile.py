"""Reconciling the ledger with what still runs: ``harness reconcile``.

Two kinds of orphans outlive what ran them. A **turn without a terminal** whose writer is gone
(its process was killed, its host lost) stays open until someone resumes the session; a session
whose **workflow is gone** (a Temporal server that lost its state, a workflow terminated by
hand) stays open forever, since no worker will ever run or close it. :func:`reconcile` finds
both in any ledger and ends them with the runtime's fixed reason: the turn
``turn.failed(interrupted)``, the session - only when the caller says its workflow is gone -
``session.closed``. A session a live writer holds is left alone (its writer ends its turns),
and so is one claimed meanwhile (``session-busy``): the pass is safe to run at any time, from
a cron job or after a restore. The one exception: a session whose workflow is gone while a
worker still holds it (a worker keeps its sessions between turns, and outlives a restarted
Temporal server that forgot their workflows) is taken over from that worker - fenced, as
Temporal's own failover does - and closed: no activity will ever run for it again.
"""

from __future__ import annotations

from collections.abc import Callable

from attrs import frozen
from harness_hookspecs import HarnessError, LedgerStore, SessionRecord

from .clock import now
from .controller import closed_record
from .ledger import ClaimingStore
from .record_close import record_ends
from .retry import dangling_turn

#: Why a session or turn was ended.
WRITER_GONE = "writer-gone"
WORKFLOW_GONE = "workflow-gone"


@frozen
class Finding:
    """One orphan: its session, the open turn (if any), whether the session was closed (or
    would be, in a dry run), and why."""

    session_id: str
    turn_id: str | None
    closed: bool
    reason: str


def reconcile(
    ledger: LedgerStore,
    *,
    workflow_gone: Callable[[str], bool] | None = None,
    dry_run: bool = False,
) -> list[Finding]:
    """End the ledger's orphans (see the module doc); the findings, in the ledger's order.

    ``workflow_gone(session_id)``: whether the session's workflow no longer runs (a Temporal
    deployment; ``None``: sessions are never closed, only their open turns ended).
    ``dry_run``: report, write nothing."""
    findings: list[Finding] = []
    for record in ledger.list_sessions():
        if record.status == "closed":
            continue
        session_id = record.session_id
        held = ledger.claimed(session_id)
        if held and (workflow_gone is None or not isinstance(ledger, ClaimingStore)):
            continue  # a live writer holds it
        gone = workflow_gone is not None and workflow_gone(session_id)
        if held and not gone:
            continue
        # held and gone: a worker still attached to a session whose workflow a restarted
        # server forgot; no activity will run for it again, so it is fenced and closed
        turn_id = dangling_turn(ledger, session_id, ledger.last_sequence(session_id))
        if turn_id is None and not gone:
            continue
        finding = Finding(session_id, turn_id, gone, WORKFLOW_GONE if gone else WRITER_GONE)
        if not dry_run and not _end(ledger, record, close=gone, fence=held):
            continue
        findings.append(finding)
    return findings


def _end(
    ledger: LedgerStore,
    record: SessionRecord,
    *,
    close: bool,
    fence: bool = False,
) -> bool:
    """Write the ends under the session's claim; ``False`` when a writer claimed it first.
    ``fence``: take the session over from a live writer (a :class:`ClaimingStore`)."""
    session_id = record.session_id
    try:
        if fence and isinstance(ledger, ClaimingStore):
            ledger.take_over(session_id)
        else:
            ledger.claim(session_id)
    except HarnessError as error:
        if error.reason == "session-busy":
            return False
        raise
    try:
        record_ends(ledger, None, record, close=close)
        if close:
            ledger.update_session(closed_record(record, now()))
        ledger.flush()
    finally:
        ledger.release(session_id)
    return True
