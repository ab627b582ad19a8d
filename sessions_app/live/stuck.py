"""Stuck turns: running turns with no sign of life, and recording them abandoned.

A turn is stuck when it is running and neither began nor stored an event within
AGENTOPS_STUCK_AFTER_SECONDS (`models.stuck_before`, the rule /turns/ uses too). A stuck turn
whose process died has nothing left to cancel it: `abandon_stuck_turns` records it
interrupted/abandoned, as the next run of the session would.
"""

from __future__ import annotations

import contextlib

from asgiref.sync import sync_to_async

from agentops.runtime.errors import SessionNotFoundError
from agentops.runtime.session import TurnReason
from sessions_app import models
from sessions_app.live.broadcast import LiveSessionService
from sessions_app.live.runs import running_turn_ids


def active_turn_id(session_id: str) -> str:
    """The id of a turn of `session_id` that is running and not stuck (it began or stored
    an event within AGENTOPS_STUCK_AFTER_SECONDS), in any process; "" when there is none.

    A stuck turn does not count: the next run abandons it under the run lock (docs/runtime.md §3).
    """
    turn = (
        models.Turn.objects.filter(session_id=session_id, status=models.Turn.Status.RUNNING)  # type: ignore[misc]
        .with_last_event_at()
        .filter(last_event_at__gte=models.stuck_before())
        .order_by("-started_at")
        .values_list("id", flat=True)
        .first()
    )
    return turn or ""


def stuck_turn_ids(session_id: str, turn_id: str = "") -> list[str]:
    """Ids of the session's running turns (only `turn_id` when given) that are stuck: no
    event stored, nor begun, within AGENTOPS_STUCK_AFTER_SECONDS (as on /turns/). One query."""
    turns = models.Turn.objects.filter(session_id=session_id, status=models.Turn.Status.RUNNING)
    if turn_id:
        turns = turns.filter(pk=turn_id)
    stuck = turns.with_last_event_at().filter(last_event_at__lt=models.stuck_before())  # type: ignore[misc]
    return list(stuck.values_list("id", flat=True))


#: How long `abandon_stuck_turns` tries to take the session's run lock.
ABANDON_LOCK_WAIT_SECONDS = 1.0


async def abandon_stuck_turns(session_id: str, turn_id: str = "") -> list[str]:
    """Record the session's stuck running turns (`stuck_turn_ids`; only `turn_id` when
    given) interrupted/abandoned, as the next run of the session would (docs/runtime.md §3), and
    broadcast them; returns their ids.

    For a turn whose process died: nothing is left to cancel it. Done only under the
    session's run lock, taken within ABANDON_LOCK_WAIT_SECONDS: while a live run holds it
    (on PostgreSQL in any process, on SQLite in this one) nothing is changed and [] is
    returned. Raises `SessionNotFoundError` for an unknown session.
    """
    if running_turn_ids(session_id):
        return []
    stuck = await sync_to_async(stuck_turn_ids)(session_id, turn_id)
    if not stuck:
        return []
    service = LiveSessionService()
    session = await service.get_session(session_id)
    if session is None:
        raise SessionNotFoundError(session_id)
    lock = service.run_lock(
        session.app_name, session.user_id, session_id, wait=ABANDON_LOCK_WAIT_SECONDS
    )
    async with contextlib.AsyncExitStack() as held:
        try:
            await held.enter_async_context(lock)
        except TimeoutError:  # a live run holds the lock: not ours to abandon
            return []
        turns = await service.interrupt_running_turns(session_id, TurnReason.ABANDONED, only=stuck)
    return [turn.id for turn in turns]
