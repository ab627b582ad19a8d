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
from django.utils import timezone

from agentops.agents.demo import make_slow_agent
from sessions_app import live
from sessions_app.models import Session

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


async def keep_demo_live(
    session_id: str = DEMO_LIVE_ID, *, pause: float = 1.0, turns: int | None = None
) -> None:
    """Run slow demo turns of `session_id` back to back, `pause` seconds apart (`turns`:
    how many; None = until cancelled). A failed turn is logged and the loop goes on."""
    await sync_to_async(ensure_demo_live_session)(session_id)
    store = await sync_to_async(live.get_todo_store)()
    done = 0
    while turns is None or done < turns:
        # Each turn is a task of its own: a stop request cancels that task (the turn ends
        # interrupted/canceled), not this loop, which starts the next turn after the pause.
        turn = asyncio.create_task(
            live.run_turn(session_id, DEMO_LIVE_MESSAGE, agent=make_slow_agent(todo_store=store))
        )
        try:
            await turn
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                turn.cancel()
                raise  # the loop itself is being stopped (server shutdown)
            logger.info("live demo turn of %s was stopped; starting the next one", session_id)
        except Exception:
            logger.warning("live demo turn of %s failed", session_id, exc_info=True)
        done += 1
        await asyncio.sleep(pause)


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
