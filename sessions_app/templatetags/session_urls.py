"""URLs to stored rows whose ids may predate the id rules (`sessions_app.ids`).

``{% session_url "sessions:detail" session_id as url %}`` gives a session page's URL and
``{% turn_events_url session_id turn_id as url %}`` the turn's events URL, or "" when
the id cannot be a URL (a session id with "/", a turn id with a line break): the page
then shows the id as text instead of failing to render.
"""

from __future__ import annotations

from django import template
from django.urls import NoReverseMatch, reverse

register = template.Library()


@register.simple_tag
def turn_events_url(session_id: str, turn_id: str) -> str:
    """The URL of `turn_id`'s events page in `session_id`, or "" when there is none."""
    try:
        return reverse("sessions:turn_events", args=[session_id, turn_id])
    except NoReverseMatch:
        return ""


@register.simple_tag
def session_url(name: str, session_id: str) -> str:
    """The URL named `name` of session `session_id`, or "" when there is none."""
    try:
        return reverse(name, args=[session_id])
    except NoReverseMatch:
        return ""
