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


def can_record_outcomes(user: User | AnonymousUser) -> bool:
    """True when `user` may record the outcome of an unanswered tool call (admins)."""
    return bool(user.is_authenticated and user.has_perm(RECORD_OUTCOME_PERMISSION))


def can_run_turns(user: User | AnonymousUser) -> bool:
    """True when `user` may start and stop turns from the session page (admins and
    superusers). Running a turn writes to the session, so operators (read-only) may not;
    the check reuses the admins' write permission `RECORD_OUTCOME_PERMISSION`."""
    return bool(user.is_authenticated and user.has_perm(RECORD_OUTCOME_PERMISSION))


# Each role's permissions ("app_label.codename"). Migration 0002_roles created the groups
# with a frozen copy of these; `ensure_role_groups` keeps them present afterwards.
ROLE_PERMISSIONS: dict[str, tuple[str, ...]] = {
    OPERATORS: (
        "sessions_app.view_session",
        "sessions_app.view_turn",
        "sessions_app.view_event",
        "todos_app.view_todolist",
        "todos_app.view_todoitem",
    ),
}
ROLE_PERMISSIONS[ADMINS] = (
    *ROLE_PERMISSIONS[OPERATORS],
    "sessions_app.record_tool_outcome",
    "todos_app.change_todolist",
    "todos_app.add_todoitem",
    "todos_app.change_todoitem",
    "todos_app.delete_todoitem",
)


def ensure_role_groups(**_: object) -> None:
    """Create the role groups and grant their permissions if missing (idempotent).

    Connected to `post_migrate`, which also runs after a test database flush, so the
    roles exist whenever the schema does. Permissions not created yet are skipped.
    """
    from django.contrib.auth.models import Group, Permission

    for name, dotted in ROLE_PERMISSIONS.items():
        group, _created = Group.objects.get_or_create(name=name)
        wanted = {tuple(p.split(".")) for p in dotted}
        perms = [
            perm
            for perm in Permission.objects.filter(
                content_type__app_label__in={app for app, _ in wanted}
            ).select_related("content_type")
            if (perm.content_type.app_label, perm.codename) in wanted
        ]
        group.permissions.add(*perms)
