"""Every change to a todo list goes through here (docs/runtime.md §7).

One code path for the agent's tools (`todos_app.store.DjangoTodoStore`), the session
service's `todos` state deltas, the dashboard views and Django admin:

- `change_todos` runs read-modify-write of one session's list in one transaction. The
  `TodoList` row is locked first (`SELECT ... FOR UPDATE` on PostgreSQL; on SQLite the
  transaction itself is `BEGIN IMMEDIATE`, settings `transaction_mode`), so concurrent
  changes from threads or processes are serialised and none is lost.
- Each change adds one to `TodoList.version` and writes one `TodoChange` audit row.
- A caller that started from an older version (a person's form) passes
  `expected_version`; a mismatch raises `TodoConflictError` with the current list, and
  nothing is written.
- A person's edits (dashboard, Django admin) are built on `change_todos` in
  `todos_app.edits`.
- After commit, watchers of the session get ``{"type": "todos.changed", "session_id",
  "version"}`` through `sessions_app.live.groups.broadcast`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from django.contrib.auth.models import AnonymousUser, User
from django.db import transaction
from django.utils import timezone

from agentops.runtime.errors import SessionNotFoundError
from agentops.runtime.todos import TodoItem, TodoToolError, dump_todos
from sessions_app.ingest.redaction import redact_todo_items
from sessions_app.models import Session
from todos_app.models import TodoChange, TodoList
from todos_app.models import TodoItem as TodoItemRow

__all__ = [
    "Actor",
    "TodoConflictError",
    "TodoSnapshot",
    "change_todos",
    "read_snapshot",
    "read_todos",
    "replace_todos",
    "todo_items_of",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Message type sent to a session's channel-layer group after a committed change.
TODOS_CHANGED = "todos.changed"


@dataclass(frozen=True)
class Actor:
    """Who makes a change, for the audit.

    `kind`: "agent", "person", "import" or "api" (`TodoChange.Actor`); `via`: how an
    API caller is named ("api key NAME"). `user`: the signed-in
    person (None for agents and imports). `turn_id` / `event_id`: the agent's turn and the
    event holding the tool call ("" / None when unknown).
    """

    kind: str
    user: User | AnonymousUser | None = None
    turn_id: str = ""
    event_id: int | None = None
    via: str = ""

    @classmethod
    def person(cls, user: User | AnonymousUser) -> Actor:
        """A signed-in person editing from the dashboard or Django admin."""
        return cls(kind=TodoChange.Actor.PERSON, user=user)

    @classmethod
    def agent(cls, turn_id: str = "", event_id: int | None = None) -> Actor:
        """An agent's tool call (or state delta) in turn `turn_id`, event `event_id`."""
        return cls(kind=TodoChange.Actor.AGENT, turn_id=turn_id, event_id=event_id)

    @classmethod
    def api(cls, via: str) -> Actor:
        """A program writing through the HTTP API with the key named by `via`."""
        return cls(kind=TodoChange.Actor.API, via=via)


@dataclass(frozen=True)
class TodoSnapshot:
    """A list as read at one moment: `version` (0 when the list was never written),
    `items` (runtime `TodoItem`s in order) and `exists` (a `TodoList` row exists)."""

    version: int
    items: list[TodoItem] = field(default_factory=list)
    exists: bool = False

    @property
    def done(self) -> int:
        """How many items are completed."""
        return sum(1 for item in self.items if item.status == TodoItemRow.Status.COMPLETED)


class TodoConflictError(TodoToolError):
    """The list changed since `expected` was read; `current` is the list now.

    Raised by `change_todos(expected_version=...)`; nothing was written.
    """

    def __init__(self, expected: int, current: TodoSnapshot) -> None:
        self.expected = expected
        self.current = current
        super().__init__(
            f"the todo list changed since version {expected} (now version {current.version}); "
            "nothing was saved"
        )


def todo_items_of(todo_list: TodoList) -> list[TodoItem]:
    """The rows of `todo_list` in position order, as runtime `TodoItem`s."""
    return [
        TodoItem(content=row.content, status=row.status, active_form=row.active_form)
        for row in TodoItemRow.objects.filter(todo_list=todo_list).order_by("position")
    ]


def read_snapshot(session_id: str) -> TodoSnapshot:
    """The session's list and version (no lock); unknown session -> SessionNotFoundError."""
    todo_list = TodoList.objects.filter(session_id=session_id).first()
    if todo_list is None:
        if not Session.objects.filter(pk=session_id).exists():
            raise SessionNotFoundError(session_id)
        return TodoSnapshot(version=0)
    return TodoSnapshot(version=todo_list.version, items=todo_items_of(todo_list), exists=True)


def read_todos(session_id: str) -> list[TodoItem]:
    """The session's items in order (no lock); unknown session -> SessionNotFoundError."""
    return read_snapshot(session_id).items


def _lock_list(session_id: str) -> TodoList:
    """The session's `TodoList`, created when missing, locked for this transaction.

    Lock order is session row (only when the list must be created) then list row, the
    same order `DjangoSessionService.append_event` uses, so the two never deadlock.
    """
    todo_list = TodoList.objects.select_for_update().filter(session_id=session_id).first()
    if todo_list is not None:
        return todo_list
    if not Session.objects.select_for_update().filter(pk=session_id).exists():
        raise SessionNotFoundError(session_id)
    todo_list, _created = TodoList.objects.get_or_create(
        session_id=session_id, defaults={"version": 0, "updated_at": timezone.now()}
    )
    return TodoList.objects.select_for_update().get(pk=todo_list.pk)


def _write_rows(todo_list: TodoList, old: Sequence[TodoItem], new: Sequence[TodoItem]) -> None:
    """Make the rows of `todo_list` equal `new`, touching only the positions that differ."""
    for position, item in enumerate(new[: len(old)]):
        if item != old[position]:
            TodoItemRow.objects.filter(todo_list=todo_list, position=position).update(
                content=item.content, status=item.status, active_form=item.active_form
            )
    if len(new) < len(old):
        TodoItemRow.objects.filter(todo_list=todo_list, position__gte=len(new)).delete()
    elif len(new) > len(old):
        TodoItemRow.objects.add_items(todo_list, new[len(old) :], start=len(old))


def _broadcast_changed(session_id: str, version: int) -> None:
    """Tell the session's watchers the list is now `version` (failures only logged)."""
    from sessions_app.live.groups import broadcast_committed

    message = {"type": TODOS_CHANGED, "session_id": session_id, "version": version}
    broadcast_committed(session_id, message)


def change_todos(
    session_id: str,
    change: Callable[[list[TodoItem]], tuple[list[TodoItem], T]],
    *,
    actor: Actor,
    action: str,
    expected_version: int | None = None,
) -> tuple[T, int]:
    """Apply ``change(current) -> (new_items, result)`` to the session's list atomically.

    Returns ``(result, version)`` with the list's new version. Locks the list row,
    checks `expected_version` (when given; mismatch -> `TodoConflictError`, nothing
    written), redacts credentials in the new items (`redact_todo_items`), writes the
    rows, adds one to the version, records a `TodoChange` (actor,
    `action` e.g. "todos_update" or "edit", before/after lists, UTC time) and, after
    commit, broadcasts ``todos.changed``. If `change` raises, nothing is written and the
    error propagates. Unknown session -> `SessionNotFoundError`. Joins the caller's
    transaction when one is open (the broadcast then waits for the outer commit).
    """
    with transaction.atomic():
        todo_list = _lock_list(session_id)
        before = todo_items_of(todo_list)
        if expected_version is not None and expected_version != todo_list.version:
            raise TodoConflictError(
                expected_version,
                TodoSnapshot(version=todo_list.version, items=before, exists=True),
            )
        after, result = change(list(before))
        # Credentials never reach the rows or the audit, whoever writes (agent, person).
        after = redact_todo_items(list(after))
        _write_rows(todo_list, before, after)
        now = timezone.now()
        todo_list.version += 1
        todo_list.updated_at = now
        todo_list.save(update_fields=["version", "updated_at"])
        user = actor.user if actor.user is not None and actor.user.is_authenticated else None
        TodoChange.objects.create(
            todo_list=todo_list,
            version=todo_list.version,
            actor=actor.kind,
            user=user,
            turn_id=actor.turn_id[:255],
            event_id=actor.event_id,
            action=action[:32],
            via=actor.via[:150],
            before=dump_todos(redact_todo_items(before)),
            after=dump_todos(after),
            created_at=now,
        )
        version = todo_list.version
        transaction.on_commit(lambda: _broadcast_changed(session_id, version))
    return result, version


def replace_todos(
    session_id: str,
    items: Sequence[TodoItem],
    *,
    actor: Actor,
    action: str,
    expected_version: int | None = None,
) -> int:
    """Replace the whole list with `items`; returns the new version (see `change_todos`)."""

    def replace(_current: list[TodoItem]) -> tuple[list[TodoItem], None]:
        return list(items), None

    _result, version = change_todos(
        session_id, replace, actor=actor, action=action, expected_version=expected_version
    )
    return version
