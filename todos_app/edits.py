"""A person's edits of a todo list (dashboard views and Django admin).

Each goes through `todos_app.services.change_todos` (one transaction, one version, one
audit row), takes the version the person's form was built from (`expected_version`) and
raises `TodoConflictError` when the list moved on meanwhile; bad input raises
`TodoToolError` with a message to show. All return the new version.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from django.contrib.auth.models import AnonymousUser, User

from agentops.runtime.todos import TodoItem, TodoToolError
from todos_app.models import TodoItem as TodoItemRow
from todos_app.services import Actor, change_todos

__all__ = [
    "MAX_ITEM_CHARS",
    "STATUSES",
    "add_item",
    "clear_items",
    "delete_item",
    "edit_item",
    "move_item",
    "replace_items",
    "set_status",
]

#: Statuses a person can pick (other strings written by agents are kept as they are).
STATUSES = tuple(TodoItemRow.Status.values)


def _check_index(index: int, items: Sequence[TodoItem]) -> None:
    """Refuse an index a person sent that the list does not have (in words a person reads;
    items are numbered from 1 on the page)."""
    if not 0 <= index < len(items):
        raise TodoToolError(
            f"there is no item {index + 1}: the list has {len(items)} item"
            f"{'' if len(items) == 1 else 's'} now (reload the page)"
        )


#: Longest item text a person may write (an agent's writes follow docs/runtime.md §7 only).
MAX_ITEM_CHARS = 2_000


def _check_text(content: str, field: str = "content", *, required: bool = True) -> str:
    """`content` stripped; refused (TodoToolError) when empty (if `required`), longer than
    MAX_ITEM_CHARS, or holding a NUL character (PostgreSQL text cannot store it)."""
    content = content.strip()
    if required and not content:
        raise TodoToolError(f"{field} must not be empty")
    if len(content) > MAX_ITEM_CHARS:
        raise TodoToolError(
            f"{field} is {len(content):,} characters long; at most {MAX_ITEM_CHARS:,}"
        )
    if "\x00" in content:
        raise TodoToolError(f"{field} must not contain a NUL character")
    return content


def _check_status(status: str) -> str:
    if status not in STATUSES:
        raise TodoToolError(f"status must be one of {', '.join(STATUSES)}, got {status!r}")
    return status


def _person_change(
    session_id: str,
    change: Callable[[list[TodoItem]], list[TodoItem]],
    *,
    user: User | AnonymousUser,
    action: str,
    expected_version: int | None,
) -> int:
    def apply(current: list[TodoItem]) -> tuple[list[TodoItem], None]:
        return change(current), None

    _result, version = change_todos(
        session_id,
        apply,
        actor=Actor.person(user),
        action=action,
        expected_version=expected_version,
    )
    return version


def add_item(
    session_id: str,
    content: str,
    *,
    active_form: str = "",
    status: str = TodoItemRow.Status.PENDING,
    user: User | AnonymousUser,
    expected_version: int | None,
) -> int:
    """Append an item (content required; status one of `STATUSES`); action "add"."""
    item = TodoItem(
        content=_check_text(content),
        status=_check_status(status),
        active_form=_check_text(active_form, "active form", required=False),
    )
    return _person_change(
        session_id,
        lambda items: [*items, item],
        user=user,
        action="add",
        expected_version=expected_version,
    )


def edit_item(
    session_id: str,
    index: int,
    *,
    content: str,
    active_form: str,
    user: User | AnonymousUser,
    expected_version: int | None,
) -> int:
    """Set item `index`'s content (required) and active form (may be empty); "edit"."""
    update = {
        "content": _check_text(content),
        "active_form": _check_text(active_form, "active form", required=False),
    }
    return _update_item(session_id, index, update, user, "edit", expected_version)


def set_status(
    session_id: str,
    index: int,
    status: str,
    *,
    user: User | AnonymousUser,
    expected_version: int | None,
) -> int:
    """Set item `index`'s status (one of `STATUSES`); action "status"."""
    update = {"status": _check_status(status)}
    return _update_item(session_id, index, update, user, "status", expected_version)


def _update_item(
    session_id: str,
    index: int,
    update: dict[str, str],
    user: User | AnonymousUser,
    action: str,
    expected_version: int | None,
) -> int:
    """Set fields of item `index` (already checked values) as one change named `action`."""

    def change(items: list[TodoItem]) -> list[TodoItem]:
        _check_index(index, items)
        items[index] = items[index].model_copy(update=update)
        return items

    return _person_change(
        session_id, change, user=user, action=action, expected_version=expected_version
    )


def move_item(
    session_id: str,
    index: int,
    offset: int,
    *,
    user: User | AnonymousUser,
    expected_version: int | None,
) -> int:
    """Swap item `index` with its neighbour `offset` (-1 up, +1 down); action "move".

    Moving the first item up or the last one down raises `TodoToolError`.
    """
    if offset not in (-1, 1):
        raise TodoToolError("an item moves by one place, up (-1) or down (+1)")

    def change(items: list[TodoItem]) -> list[TodoItem]:
        _check_index(index, items)
        target = index + offset
        if not 0 <= target < len(items):
            raise TodoToolError(f"item {index} cannot move {'up' if offset < 0 else 'down'}")
        items[index], items[target] = items[target], items[index]
        return items

    return _person_change(
        session_id, change, user=user, action="move", expected_version=expected_version
    )


def delete_item(
    session_id: str, index: int, *, user: User | AnonymousUser, expected_version: int | None
) -> int:
    """Remove item `index` (later items move up one place); action "delete"."""

    def change(items: list[TodoItem]) -> list[TodoItem]:
        _check_index(index, items)
        del items[index]
        return items

    return _person_change(
        session_id, change, user=user, action="delete", expected_version=expected_version
    )


def clear_items(
    session_id: str, *, user: User | AnonymousUser, expected_version: int | None
) -> int:
    """Empty the list (it stays, with no items); action "clear"."""
    return _person_change(
        session_id,
        lambda _items: [],
        user=user,
        action="clear",
        expected_version=expected_version,
    )


def replace_items(
    session_id: str,
    items: Sequence[TodoItem],
    *,
    user: User | AnonymousUser,
    expected_version: int | None,
    action: str = "admin",
) -> int:
    """Replace the whole list with `items` (Django admin's save); contents required."""
    checked = [item.model_copy(update={"content": _check_text(item.content)}) for item in items]
    return _person_change(
        session_id,
        lambda _items: checked,
        user=user,
        action=action,
        expected_version=expected_version,
    )
