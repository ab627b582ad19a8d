from __future__ import annotations

from django.urls import path

from sessions_app import pages as views
from sessions_app.export import views as export_views
from sessions_app.live import views as live_views

app_name = "sessions"

urlpatterns = [
    path("", views.session_list, name="list"),
    path("<str:session_id>/", views.session_detail, name="detail"),
    path("<str:session_id>/turns/", views.session_turns, name="turns"),
    path("<str:session_id>/context/", views.session_context, name="context"),
    path("<str:session_id>/protocol/", views.session_protocol, name="protocol"),
    path("<str:session_id>/export/", export_views.session_export, name="export"),
    path(
        "<str:session_id>/protocol/outcomes/", views.tool_outcome_create, name="tool_outcome_create"
    ),
    path("<str:session_id>/run/", live_views.run_turn, name="run_turn"),
    path("<str:session_id>/stop/", live_views.stop_turns, name="stop_turns"),
    path("<str:session_id>/turns/<path:turn_id>/events/", views.turn_events, name="turn_events"),
    path("<str:session_id>/events/<int:event_id>/raw/", views.event_raw, name="event_raw"),
]
