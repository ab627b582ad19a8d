"""The always-running demo session ``demo-live`` (for `python3 dev.py serve`).

`keep_demo_live` creates the session when missing and runs slowly streaming turns of the
demo agent (`agentops.agents.demo.make_slow_agent`) one after another, forever, through
`sessions_app.live.run_turn` (so watchers see it live). `start_with(app)` wraps an ASGI
application so that the loop starts in the server process on its first connection
(``AGENTOPS_LIVE_DEMO=true``); `manage.py demo_live` runs the same loop on its own (with
the Redis channel layer its turns reach watchers on every server process).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from typing import Any

from asgiref.sync import sync_to_async
from django.db import transaction
from django.utils import timezone

from agentops.agents.demo import make_slow_agent
from sessions_app import live
from sessions_app.models import Event, Session, Turn
from sessions_app.store import refresh_resume_status

logger = logging.getLogger(__name__)

DEMO_LIVE_ID = "demo-live"
DEMO_LIVE_MESSAGE = "Show me a slow live demo, please."


def ensure_demo_live_session(session_id: str = DEMO_LIVE_ID) -> None:
    """Create the demo-live session (app ``live-demo``) when it does not exist."""
    now = timezone.now()
    Session.objects.get_or_create(
        pk=session_id,
        defaults={
            "app_name": "live-demo",
            "user_id": "demo",
            "title": "Live demo: a turn that is always running",
            "source_format": Session.SourceFormat.DEMO,
            "created_at": now,
            "updated_at": now,
        },
    )


#: Turns of the live demo kept (the newest ones); older finished turns are deleted.
KEEP_TURNS = 20


def prune_demo_turns(session_id: str = DEMO_LIVE_ID, keep: int = KEEP_TURNS) -> int:
    """Delete the finished turns of the demo session `session_id` older than its newest
    `keep` turns, with their events (a bounded history: the demo runs forever, about
    2,300 events an hour). One transaction; returns how many turns were deleted. Only for
    the demo session: stored history is otherwise never deleted like this."""
    with transaction.atomic():
        newest = Turn.objects.filter(session_id=session_id).order_by("-started_at", "-id")
        rows = list(newest.values_list("id", "status")[keep : keep + 1000])
        old = [turn_id for turn_id, status in rows if status != Turn.Status.RUNNING]
        if not old:
            return 0
        Event.objects.filter(session_id=session_id, turn_id__in=old).delete()
        Turn.objects.filter(session_id=session_id, id__in=old).delete()
        refresh_resume_status(session_id)
    return len(old)


#: How long the demo stands aside after a person stopped its turn or ran a turn of their own.
HOLD_OFF_SECONDS = 60.0


def _latest_turn(session_id: str) -> tuple[str, str, Any] | None:
    return (
        Turn.objects.filter(session_id=session_id)
        .order_by("-started_at", "-id")
        .values_list("id", "status", "finished_at")
        .first()
    )


async def _wait_for_people(session_id: str, ours: set[str], hold_off: float) -> None:
    """Return once the session's latest turn is the demo's own, or a person's turn ended
    at least `hold_off` seconds ago (a person's running turn is waited for)."""
    while True:
        latest = await sync_to_async(_latest_turn)(session_id)
        if latest is None or latest[0] in ours:
            return
        _id, status, finished_at = latest
        if status != Turn.Status.RUNNING and finished_at is not None:
            waited = (timezone.now() - finished_at).total_seconds()
            if waited >= hold_off:
                return
        await asyncio.sleep(min(1.0, hold_off) or 0.05)


async def keep_demo_live(
    session_id: str = DEMO_LIVE_ID,
    *,
    pause: float = 1.0,
    turns: int | None = None,
    hold_off: float = HOLD_OFF_SECONDS,
) -> None:
    """Run slow demo turns of `session_id` back to back, `pause` seconds apart (`turns`:
    how many; None = until cancelled). A failed turn is logged and the loop goes on.

    People come first: after a person stops a demo turn the loop waits `hold_off` seconds
    (time to send a message of their own), and it waits for a person's turn to end and
    then `hold_off` seconds more before its next turn.
    """
    await sync_to_async(ensure_demo_live_session)(session_id)
    store = await sync_to_async(live.get_todo_store)()
    service = live.LiveSessionService()
    ours: set[str] = set()
    service.on_begin = lambda turn: ours.add(turn.id)
    done = 0
    while turns is None or done < turns:
        await _wait_for_people(session_id, ours, hold_off)
        # Each turn is a task of its own: a stop request cancels that task (the turn ends
        # interrupted/canceled), not this loop, which starts the next turn after the pause.
        turn = asyncio.create_task(
            live.run_turn(
                session_id,
                DEMO_LIVE_MESSAGE,
                agent=make_slow_agent(todo_store=store),
                service=service,
            )
        )
        wait = pause
        try:
            await turn
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                turn.cancel()
                raise  # the loop itself is being stopped (server shutdown)
            logger.info("live demo turn of %s was stopped; standing aside", session_id)
            wait = max(pause, hold_off)
        except Exception:
            logger.warning("live demo turn of %s failed", session_id, exc_info=True)
        done += 1
        await sync_to_async(prune_demo_turns)(session_id)
        await asyncio.sleep(wait)


def start_with(application: Any) -> Any:
    """`application` wrapped to start `keep_demo_live` once, on the first ASGI call."""
    state: dict[str, asyncio.Task[None]] = {}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if "task" not in state and scope.get("type") in {"http", "websocket"}:
            state["task"] = asyncio.create_task(
                keep_demo_live(), name="agentops-live-demo", context=contextvars.Context()
            )
        await application(scope, receive, send)

    return app
