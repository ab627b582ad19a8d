"""The durable `TodoStore` on the todo rows (docs/runtime.md §7).

`DjangoTodoStore` implements `agentops.runtime.todos.TodoStore` on `TodoList` /
`TodoItem` through `todos_app.services.change_todos`: read-modify-write runs in one
transaction with the list row locked (`select_for_update` on PostgreSQL, `BEGIN
IMMEDIATE` on SQLite), the version grows by one per change, and each change is audited
(actor "agent", with the tool name, turn and event ids from the optional
`TodoCallContext`). Use `get_todo_store()` for the shared instance.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from asgiref.sync import sync_to_async

from agentops.runtime.todos import TodoCallContext, TodoItem
from todos_app import services

__all__ = ["DjangoTodoStore", "get_todo_store"]

T = TypeVar("T")


class DjangoTodoStore:
    """`TodoStore` on the database rows; the ORM work runs in a worker thread.

    Errors: `SessionNotFoundError` for an unknown session; whatever `change` raises
    (e.g. `TodoIndexError`) propagates with nothing written.
    """

    async def read_todos(self, session_id: str) -> list[TodoItem]:
        """The session's list in order ([] when it was never written)."""
        return await sync_to_async(services.read_todos)(session_id)

    async def modify_todos(
        self,
        session_id: str,
        change: Callable[[list[TodoItem]], tuple[list[TodoItem], T]],
        *,
        context: TodoCallContext | None = None,
    ) -> T:
        """Apply ``change(current) -> (new_list, result)`` atomically; return `result`.

        `context` names the tool, turn and event for the audit (`TodoChange`).
        """
        ctx = context or TodoCallContext()
        actor = services.Actor.agent(turn_id=ctx.turn_id, event_id=ctx.event_id)

        def run() -> T:
            result, _version = services.change_todos(
                session_id, change, actor=actor, action=ctx.tool or "agent"
            )
            return result

        return await sync_to_async(run)()


_store = DjangoTodoStore()


def get_todo_store() -> DjangoTodoStore:
    """The process-wide `DjangoTodoStore` (stateless, safe to share across tasks)."""
    return _store
