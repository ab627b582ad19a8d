"""Dead and stuck turns: running turns nobody runs any more, recorded abandoned at once.

A running turn records its owner (host, pid, lease: `sessions_app.store.owner`). When the
owner is gone (lease lapsed, or on this host its pid is dead) the turn is *dead*:
`recover_dead_turns` records it interrupted/abandoned, under the session's run lock
(docs/runtime.md §3 step 3: whoever holds the lock knows nobody else runs the session).
That happens when a server process starts serving (`recover_on_first_call`), when the
session page loads, before a turn starts from the page, and on *Stop* (`stop_turns`).

A turn is *stuck* when its owner is alive but silent: running, and neither begun nor
stored an event within AGENTOPS_STUCK_AFTER_SECONDS (`values.stuck_before`, the rule
/turns/ uses too). A stuck turn does not block new turns from the page.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async

from agentops.runtime.errors import SessionNotFoundError
from agentops.runtime.session import TurnReason
from sessions_app import models
from sessions_app.live.broadcast import LiveSessionService
from sessions_app.live.runs import owned_turn_ids, request_stop
from sessions_app.store.owner import gone_running_turns
from sessions_app.values import stuck_before

logger = logging.getLogger(__name__)

#: How long a page load, a run or a server's start-up recovery tries to take the run lock
#: of a session with dead turns (another recovery of the same process may hold it briefly).
RECOVER_LOCK_WAIT_SECONDS = 0.2

#: How long *Stop* tries to take the run lock of a session whose turns it found not
#: running here (a live owner elsewhere keeps it; a dead one's lock is already free).
STOP_LOCK_WAIT_SECONDS = 0.5


def active_turn_id(session_id: str) -> str:
    """The id of a turn of `session_id` that is running and not stuck (it began or stored
    an event within AGENTOPS_STUCK_AFTER_SECONDS), in any process; "" when there is none.

    A stuck turn does not count: the next run abandons it under the run lock (docs/runtime.md §3).
    """
    turn = (
        models.Turn.objects.filter(session_id=session_id, status=models.Turn.Status.RUNNING)  # type: ignore[misc]
        .with_last_event_at()
        .filter(last_event_at__gte=stuck_before())
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
    stuck = turns.with_last_event_at().filter(last_event_at__lt=stuck_before())  # type: ignore[misc]
    return list(stuck.values_list("id", flat=True))


def dead_turn_ids(session_id: str) -> list[str]:
    """Ids of the session's running turns whose owner is gone (`store.owner.owner_gone`;
    turns running in this process never are). One query."""
    return [turn for _s, turn in gone_running_turns(session_id, here=owned_turn_ids())]


async def recover_dead_turns(
    session_id: str, *, force: bool = False, wait: float = RECOVER_LOCK_WAIT_SECONDS
) -> list[str]:
    """Record the session's running turns interrupted/abandoned when nobody runs them, and
    broadcast them; returns their ids (docs/concepts.md "Stuck turns").

    Tried when some running turn's owner is gone (`dead_turn_ids`), or with `force` when
    any turn is running; done only under the session's run lock, taken within `wait`
    seconds (0: one attempt; default RECOVER_LOCK_WAIT_SECONDS). Holding it proves that
    no process runs the session, so every running turn of it is recorded, as the next
    run would (docs/runtime.md §3 step 3). While a live run holds the lock nothing
    changes and [] is returned. Raises
    `SessionNotFoundError` for an unknown session.
    """
    if not force and not await sync_to_async(dead_turn_ids)(session_id):
        return []
    service = LiveSessionService()
    session = await service.get_session(session_id)
    if session is None:
        raise SessionNotFoundError(session_id)
    lock = service.run_lock(session.app_name, session.user_id, session_id, wait=wait)
    async with contextlib.AsyncExitStack() as held:
        try:
            await held.enter_async_context(lock)
        except TimeoutError:  # a live run holds the lock: not ours to abandon
            return []
        turns = await service.interrupt_running_turns(session_id, TurnReason.ABANDONED)
    if turns:
        logger.info("recorded abandoned (owner gone): %s", ", ".join(t.id for t in turns))
    return [turn.id for turn in turns]


@dataclass
class StopOutcome:
    """What *Stop* did: `running` the turns it found running (their `stopped_by` set),
    `cancelled_here` how many runs of this process it cancelled, `abandoned` the turns
    it recorded abandoned because nobody ran them."""

    running: list[str] = field(default_factory=list)
    cancelled_here: int = 0
    abandoned: list[str] = field(default_factory=list)


async def stop_turns(session_id: str, turn_id: str = "", *, by: str = "") -> StopOutcome:
    """*Stop*: the session's running turn `turn_id` ("" = all of them), attributed to `by`
    (e.g. "admin (page)", stored as `Turn.stopped_by`). Runs here or in another process
    are cancelled (`request_stop`: they end interrupted/canceled); when none ran here and
    no live process holds the session's run lock, the turns are dead and recorded
    interrupted/abandoned at once. Nothing running: an empty `StopOutcome`, and no stop
    request is sent."""
    running = await LiveSessionService().record_stop_request(session_id, turn_id, by)
    if not running:
        return StopOutcome()
    cancelled = await request_stop(session_id, turn_id)
    abandoned: list[str] = []
    if not cancelled:
        abandoned = await recover_dead_turns(session_id, force=True, wait=STOP_LOCK_WAIT_SECONDS)
    return StopOutcome(running=running, cancelled_here=cancelled, abandoned=abandoned)


async def recover_everywhere() -> list[str]:
    """`recover_dead_turns` for every session with a running turn whose owner is gone (a
    server process starting after a crash or a stop); returns the recorded turn ids.
    Errors are logged per session, never raised."""
    pairs = await sync_to_async(gone_running_turns)(here=owned_turn_ids())
    recorded: list[str] = []
    for session_id in dict.fromkeys(session for session, _turn in pairs):
        try:
            recorded += await recover_dead_turns(session_id)
        except Exception:
            logger.warning("recovering dead turns of %s failed", session_id, exc_info=True)
    return recorded


def recover_on_first_call(application: Any) -> Any:
    """`application` (ASGI) wrapped to run `recover_everywhere` once per process, in the
    background, on its first HTTP or websocket call (daphne has no lifespan events, and
    AppConfig.ready must not touch the database)."""
    state: dict[str, asyncio.Task[list[str]]] = {}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if "task" not in state and scope.get("type") in {"http", "websocket"}:
            state["task"] = asyncio.create_task(
                recover_everywhere(), name="agentops-recover", context=contextvars.Context()
            )
        await application(scope, receive, send)

    return app
