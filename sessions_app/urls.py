"""URLs under /sessions/ (included from agentops/urls.py): the session pages, export,
and starting and stopping turns."""

from __future__ import annotations

from django.urls import path

from sessions_app.export import views as export_views
from sessions_app.live import views as live_views
from sessions_app.pages.context import session_context
from sessions_app.pages.find import session_find
from sessions_app.pages.protocol import session_protocol, tool_outcome_create
from sessions_app.pages.session import event_raw, session_detail, session_turns, turn_events
from sessions_app.pages.sessions import session_list

app_name = "sessions"

urlpatterns = [
    path("", session_list, name="list"),
    path("<str:session_id>/", session_detail, name="detail"),
    path("<str:session_id>/turns/", session_turns, name="turns"),
    path("<str:session_id>/context/", session_context, name="context"),
    path("<str:session_id>/protocol/", session_protocol, name="protocol"),
    path("<str:session_id>/find/", session_find, name="find"),
    path("<str:session_id>/export/", export_views.session_export, name="export"),
    path("<str:session_id>/protocol/outcomes/", tool_outcome_create, name="tool_outcome_create"),
    path("<str:session_id>/run/", live_views.run_turn, name="run_turn"),
    path("<str:session_id>/stop/", live_views.stop_turns, name="stop_turns"),
    path("<str:session_id>/turns/<path:turn_id>/events/", turn_events, name="turn_events"),
    path("<str:session_id>/events/<int:event_id>/raw/", event_raw, name="event_raw"),
]
