"""A separate process applying `todos_update` calls (imported by spawn; Django set up here).

No Django import at module level: the child process sets up Django against the test
database first (`DATABASE_URL` naming it), then runs the tool calls.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any


def apply_updates(
    database_url: str, session_id: str, worker: int, count: int, barrier: Any
) -> None:
    """Set item ``worker * count + i`` (i < count) to completed with new content."""
    os.environ["DATABASE_URL"] = database_url
    os.environ["DJANGO_SETTINGS_MODULE"] = "agentops.settings"
    import django

    django.setup()
    from agentops.runtime.todos import TodoCallContext, TodoTools
    from todos_app.store import get_todo_store

    tools = TodoTools(get_todo_store())

    async def run() -> None:
        for i in range(count):
            await tools.call(
                "todos_update",
                session_id,
                {"index": worker * count + i, "status": "completed", "content": f"w{worker}-{i}"},
                context=TodoCallContext(turn_id=f"turn-{worker}", event_id=i + 1),
            )

    barrier.wait(timeout=60)  # every process is set up: start at once
    asyncio.run(run())
