"""Websocket routes of the sessions app (mounted by `agentops.asgi`)."""

from __future__ import annotations

from django.urls import path

from sessions_app.live.consumer import SessionConsumer

websocket_urlpatterns = [
    path("ws/sessions/<str:session_id>/", SessionConsumer.as_asgi(), name="ws_session"),
]
