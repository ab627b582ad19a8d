"""The todo list's part of a session, answered through `sessions_app.signals`.

sessions_app imports nothing from this app; it sends signals and these receivers
(connected in `TodosAppConfig.ready()`) read, write, import and export the session's
todo list. Each runs inside the sender's transaction, so the list and the operation
that touched it land together (docs/runtime.md §7: the rows are the one source of truth).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from django.db.models import Count, OuterRef, Subquery
from django.db.models import IntegerField as IntegerOutput
from django.dispatch import receiver

from agentops.runtime.todos import TodoItem as RuntimeTodoItem
from agentops.runtime.todos import dump_todos
from sessions_app import signals
from sessions_app.models import Session
from todos_app.models import TodoChange, TodoItem, TodoList
from todos_app.services import Actor, replace_todos, todo_items_of

if TYPE_CHECKING:
    from sessions_app.ingest.parsed import ParsedSession


@receiver(signals.session_todos_requested, sender=Session)
def todos_state(session_id: str, **_kwargs: Any) -> list[dict[str, str]] | None:
    """The session's list as the state value ``todos``, or None when it has none."""
    todo_list = TodoList.objects.filter(session_id=session_id).first()
    if todo_list is None:
        return None
    return dump_todos(todo_items_of(todo_list))


@receiver(signals.session_todos_set, sender=Session)
def replace_from_state_delta(
    session_id: str,
    items: Sequence[RuntimeTodoItem],
    turn_id: str,
    event_id: int | None,
    action: str = "state_delta",
    **_kwargs: Any,
) -> None:
    """Replace the list with `items` as the agent's change in event `event_id` (None: the
    initial state of `create_session`, `action` "create_session")."""
    replace_todos(
        session_id,
        items,
        actor=Actor.agent(turn_id=turn_id, event_id=event_id),
        action=action,
    )


@receiver(signals.parsed_session_written, sender=Session)
def write_parsed_todos(
    session: Session,
    parsed: ParsedSession,
    event_ids: Mapping[int, int],
    user_ids: Mapping[str, int],
    **_kwargs: Any,
) -> None:
    """Insert an imported session's list, its items and (agentops export) its audit rows,
    with exported event ids and usernames mapped to this database's."""
    if parsed.todos is not None:
        todo_list = TodoList.objects.create(
            session=session,
            version=parsed.todo_version,
            updated_at=parsed.todo_updated_at or parsed.updated_at,
        )
        TodoItem.objects.add_items(todo_list, parsed.todos)
    if parsed.todo_changes:
        audited = TodoList.objects.get(session=session)
        TodoChange.objects.bulk_create(
            [
                TodoChange(
                    **{k: v for k, v in c.items() if k not in ("user", "event_id")},
                    todo_list=audited,
                    user_id=user_ids.get(c.get("user") or ""),
                    event_id=event_ids.get(c["event_id"], c["event_id"])
                    if c.get("event_id") is not None
                    else None,
                )
                for c in parsed.todo_changes
            ]
        )


@receiver(signals.session_todos_exported, sender=Session)
def export_todo_list(session: Session, **_kwargs: Any) -> dict[str, Any] | None:
    """The export document's ``todo_list`` part (three queries), or None without a list."""
    todo = TodoList.objects.filter(session=session).first()
    if todo is None:
        return None
    return {
        "version": todo.version,
        "updated_at": todo.updated_at.isoformat(),
        "items": [
            {
                "position": i.position,
                "content": i.content,
                "status": i.status,
                "active_form": i.active_form,
            }
            for i in todo.items.order_by("position")
        ],
        "changes": [
            {
                "version": c.version,
                "actor": c.actor,
                "user": c.user.get_username() if c.user else None,
                "turn_id": c.turn_id,
                "event_id": c.event_id,
                "action": c.action,
                "before": c.before,
                "after": c.after,
                "created_at": c.created_at.isoformat(),
            }
            for c in TodoChange.objects.filter(todo_list=todo).select_related("user").order_by("id")
        ],
    }


@receiver(signals.session_summary_requested, sender=Session)
def todo_progress(**_kwargs: Any) -> dict[str, Subquery]:
    """`todo_total` and `todo_done` (ints, None without a list) for the sessions list:
    correlated subqueries, so the list stays one query."""
    todos = TodoItem.objects.filter(todo_list__session=OuterRef("pk")).order_by()
    todo_total = todos.values("todo_list").annotate(n=Count("id")).values("n")
    todo_done = (
        todos.filter(status=TodoItem.Status.COMPLETED)
        .values("todo_list")
        .annotate(n=Count("id"))
        .values("n")
    )
    return {
        "todo_total": Subquery(todo_total, output_field=IntegerOutput()),
        "todo_done": Subquery(todo_done, output_field=IntegerOutput()),
    }
