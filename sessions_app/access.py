"""The one place that loads a session for a user and checks what they may do with it.

Rule (CONVENTIONS.md 4): a user who may not see an object gets 404, never 403, so the
existence of a session id is not revealed. Page-level checks for users without any role
answer 403 (they are signed in but have no access to the dashboard at all).
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest

from sessions_app.models import Session
from sessions_app.roles import can_view


def require_viewer(request: HttpRequest) -> None:
    """Raise PermissionDenied (403) unless the signed-in user has a dashboard role."""
    if not can_view(request.user):
        raise PermissionDenied("Your account has no dashboard role; ask an admin for one.")


def get_session_for_user(request: HttpRequest, session_id: str) -> Session:
    """The session `session_id` with its todo list header joined, if the user may see it.

    Raises Http404 when the session does not exist or the user has no role to see it.
    """
    if not can_view(request.user):
        raise Http404("No such session")
    try:
        return Session.objects.select_related("todo_list").get(pk=session_id)
    except Session.DoesNotExist:
        raise Http404("No such session") from None
