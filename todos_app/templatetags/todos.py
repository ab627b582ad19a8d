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
