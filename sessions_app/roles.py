"""The two roles of the dashboard and what each may do.

Operators read everything; admins also edit todo lists and record tool outcomes.
Both are Django groups created by migration `sessions_app.0002_roles`. Superusers count as
admins.
"""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User

OPERATORS = "operators"
ADMINS = "admins"

# The groups' permissions are set by migration sessions_app.0002_roles.
# What "may see sessions" and "may edit" mean, as permissions checked by views.
VIEW_PERMISSION = "sessions_app.view_session"
EDIT_TODOS_PERMISSION = "todos_app.change_todoitem"
RECORD_OUTCOME_PERMISSION = "sessions_app.record_tool_outcome"


def can_view(user: User | AnonymousUser) -> bool:
    """True when `user` is signed in and has a role that may read sessions."""
    return bool(user.is_authenticated and user.has_perm(VIEW_PERMISSION))


def can_edit_todos(user: User | AnonymousUser) -> bool:
    """True when `user` may edit todo lists (admins and superusers)."""
    return bool(user.is_authenticated and user.has_perm(EDIT_TODOS_PERMISSION))
