"""Template helpers for the todo panel."""

from __future__ import annotations

from django import template
from django.contrib.auth.models import AnonymousUser, User

from sessions_app.roles import can_edit_todos as _can_edit_todos
from todos_app.edits import STATUSES

register = template.Library()


@register.filter
def can_edit_todos(user: User | AnonymousUser) -> bool:
    """``{% if request.user|can_edit_todos %}``: the role check of `sessions_app.roles`."""
    return _can_edit_todos(user)


@register.simple_tag
def todo_statuses() -> tuple[str, ...]:
    """``{% todo_statuses as statuses %}``: the statuses a person can pick."""
    return STATUSES


def _key(item: object) -> str:
    return str(item.get("content", "")) if isinstance(item, dict) else repr(item)


@register.simple_tag
def todo_diff(before: object, after: object) -> dict[str, list[dict[str, object]]]:
    """``{% todo_diff change.before change.after as diff %}``: the items of a change's
    two lists, each as ``{"item", "mark"}``, matched by content: "added" (only after),
    "removed" (only before), "changed" (status or active form differ) or "" (the same)."""
    old = before if isinstance(before, list) else []
    new = after if isinstance(after, list) else []
    old_by_key = {_key(item): item for item in old}
    new_keys = {_key(item) for item in new}
    return {
        "before": [
            {"item": item, "mark": "" if _key(item) in new_keys else "removed"} for item in old
        ],
        "after": [
            {
                "item": item,
                "mark": "added"
                if _key(item) not in old_by_key
                else ("" if old_by_key[_key(item)] == item else "changed"),
            }
            for item in new
        ],
    }
